"""Keeping the search index in step with the lines, outside the write path.

The index holds each line's search text (``store.search_text``): case-folded by Python's
``str.casefold``, whose tables come with the Python version (``unicodedata``). The
Unicode version the index was built with is recorded in ``log_store_state``; when the
server runs on a Python whose Unicode version differs, ``refresh_if_stale`` rebuilds the
index so folded literals and folded lines agree again (``tidegate db upgrade`` calls it).
So is the rule the search text was made by (``store.SEARCH_TEXT_VERSION``): a SQLite
index made by another rule is rebuilt (its deletes recompute each entry by the rule);
PostgreSQL's stored texts are kept, as those of the older rule hold all the newer holds
(the line and its whole meta).

On SQLite the FTS5 table is contentless: removing a line's entry takes the exact text it
was indexed with, which is why that text is a pure function of the stored row (the
line and the stored meta JSON) and why deletes go through ``delete_search_entries``.

All functions take a synchronous SQLAlchemy connection (Alembic's, or ``run_sync``).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from sqlalchemy import Delete, Text, cast, column, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.logs.store import SEARCH_TEXT_VERSION, document_json, search_text

log = logging.getLogger(__name__)

BATCH = 5_000


def unicode_version() -> str:
    return unicodedata.unidata_version


DELETE_ENTRY = text(
    "INSERT INTO log_search (log_search, rowid, text) VALUES ('delete', :id, :text)"
)


def deleted_entries(rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """SQLite: the parameters of ``DELETE_ENTRY`` for deleted lines, given
    ``(id, line, meta JSON text)`` as they were stored."""
    return [{"id": row[0], "text": search_text(row[1], row[2])} for row in rows]


async def delete_lines(session: AsyncSession, statement: Delete) -> int:
    """Runs a DELETE of ``log_lines`` and, on SQLite, removes the deleted lines' entries
    from the search index in the same transaction; how many lines went."""
    if session.get_bind().dialect.name != "sqlite":
        result: Any = await session.execute(statement)
        return int(result.rowcount or 0)
    returning: Any = statement.returning(column("id"), column("line"), cast(column("meta"), Text))
    gone: list[Any] = list((await session.execute(returning)).all())
    if gone:
        await session.execute(DELETE_ENTRY, deleted_entries(gone))
    return len(gone)


def reindex(connection: Connection) -> int:
    """Rebuild every line's search text (SQLite: the FTS5 table; PostgreSQL: the
    ``search`` column), in batches by id; how many lines."""
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        connection.execute(text("INSERT INTO log_search (log_search) VALUES ('delete-all')"))
    last = 0
    done = 0
    while True:
        rows = connection.execute(
            text(
                "SELECT id, line, CAST(meta AS TEXT) FROM log_lines WHERE id > :last "
                "ORDER BY id LIMIT :batch"
            ),
            {"last": last, "batch": BATCH},
        ).all()
        if not rows:
            break
        if sqlite:
            # The stored text itself: what deletes recompute the entry from.
            entries = deleted_entries(rows)
        else:
            # jsonb prints its own spelling; the store's is what the search text holds.
            entries = [
                {"id": row[0], "text": search_text(row[1], stored_json(row[2]))} for row in rows
            ]
        if sqlite:
            connection.execute(
                text("INSERT INTO log_search (rowid, text) VALUES (:id, :text)"), entries
            )
        else:
            connection.execute(text("UPDATE log_lines SET search = :text WHERE id = :id"), entries)
        last = rows[-1][0]
        done += len(rows)
    _record(connection)
    return done


def _record(connection: Connection) -> None:
    connection.execute(
        text(
            "UPDATE log_store_state SET unidata_version = :version, "
            "search_text_version = :rule WHERE id = 1"
        ),
        {"version": unicode_version(), "rule": SEARCH_TEXT_VERSION},
    )


def stored_json(jsonb_text: str | None) -> str | None:
    """PostgreSQL: a jsonb document's text as the store spells it (``document_json``;
    keys in jsonb's order)."""
    return None if jsonb_text is None else document_json(orjson.loads(jsonb_text))


def refresh_if_stale(connection: Connection) -> None:
    """Rebuild the index when it was folded under another Unicode version, or made by
    another rule on SQLite (see the module's docstring)."""
    row = connection.execute(
        text("SELECT unidata_version, search_text_version FROM log_store_state WHERE id = 1")
    ).first()
    if row is None:
        return
    recorded, rule = row
    if recorded != unicode_version():
        log.warning(
            "search index folded under Unicode %s, this Python has %s: rebuilding it",
            recorded,
            unicode_version(),
        )
        reindex(connection)
    elif rule != SEARCH_TEXT_VERSION:
        if connection.dialect.name == "sqlite":
            log.warning(
                "search index made by rule %s, this version writes rule %s: rebuilding it",
                rule,
                SEARCH_TEXT_VERSION,
            )
            reindex(connection)
        else:
            _record(connection)
