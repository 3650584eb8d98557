"""The field names of an account's lines over a range: the key paths of the scalar
values in the meta (sent, or parsed from the line) of its newest lines.

Completion in the web app names fields from the lines it loaded, which are those the
query being typed already selects; this names them from the range's newest
``SAMPLE_LINES`` lines whatever the query, as the top values it completes are counted
(``GET /v1/aggregate`` without the query). A sample, not a census: a field only older
lines hold is missed, and the answer says how many lines were read. The lines are read
as an export page reads them (both tiers, a person's group scope applied by the
caller's filter), in an export worker thread.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any, Final

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.export.schemas import ExportRequest
from tidegate.export.service import page_of_lines
from tidegate.logs.reading import PageReader, run_off_loop

SAMPLE_LINES: Final = 2_000
MAX_PATHS: Final = 200  # distinct paths answered, the most frequent first
MAX_DEPTH: Final = 8  # nested objects walked at most this deep


def _walk(value: dict[str, Any], keys: tuple[str, ...], found: set[tuple[str, ...]]) -> None:
    for key, item in value.items():
        path = (*keys, str(key))
        if isinstance(item, dict):
            if len(path) < MAX_DEPTH:
                _walk(item, path, found)
        elif not isinstance(item, list):
            found.add(path)


def paths_of(records: list[dict[str, Any]]) -> Counter[tuple[str, ...]]:
    """How many of ``records`` hold each key path of a scalar in their ``_meta``
    (arrays have no path, as the query syntax has none for them)."""
    counts: Counter[tuple[str, ...]] = Counter()
    for record in records:
        meta = record.get("_meta")
        if meta is None:
            continue
        if not isinstance(meta, dict):  # the stored text, passed through (an orjson.Fragment)
            meta = orjson.loads(orjson.dumps(meta))
        if isinstance(meta, dict):
            found: set[tuple[str, ...]] = set()
            _walk(meta, (), found)
            counts.update(found)
    return counts


async def field_paths(
    *,
    database: Database,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    request: ExportRequest,
) -> dict[str, Any]:
    """``{"paths": [{"path": [...], "lines": n}, ...], "sampled": lines read}``, the
    most frequent paths first (then by path), at most ``MAX_PATHS``."""
    sample = replace(request, size=SAMPLE_LINES, prefer="tail", pagination_id=None)

    def read(reader: PageReader) -> dict[str, Any]:
        page = page_of_lines(reader=reader, sealer=sealer, account_id=account_id, request=sample)
        counts = paths_of(page["lines"])
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:MAX_PATHS]
        return {
            "paths": [{"path": list(path), "lines": lines} for path, lines in ranked],
            "sampled": len(page["lines"]),
        }

    return await run_off_loop(database=database, session=session, account_id=account_id, page=read)
