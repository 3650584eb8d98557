"""Filtered export pages on PostgreSQL read their range in time slices, newest (or
oldest) first (``service.SlicedWalk``, docs/log-store.md "Newest first in slices"):
the same lines in the same order, every line once across pages, and a page that fills
in its first slice reads no further."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, export, export_all, insert_lines
from tests.factories import AccountCtx, make_account, make_tenant

from tidegate.export import service
from tidegate.logs.store import NewLine

HOUR = 3_600_000


async def _account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


@given(
    from_ms=st.integers(0, 10**6),
    span=st.integers(0, 10**6),
    newest_first=st.booleans(),
    after=st.none() | st.tuples(st.integers(-10, 2 * 10**6), st.integers(1, 10)),
)
def test_the_slices_cover_the_range_once_in_the_walks_order(
    from_ms: int, span: int, newest_first: bool, after: tuple[int, int] | None
) -> None:
    to_ms = from_ms + span
    slices = list(service.time_slices(from_ms, to_ms, newest_first=newest_first, after=after))
    low, high = from_ms, to_ms
    if after is not None:
        low, high = (low, min(high, after[0])) if newest_first else (max(low, after[0]), high)
    assert all(start <= end for start, end in slices)
    if low > high:
        assert slices == []
        return
    if newest_first:
        assert slices[0][1] == high
        assert slices[-1][0] == low
        assert all(later[1] == earlier[0] - 1 for earlier, later in pairwise(slices))
    else:
        assert slices[0][0] == low
        assert slices[-1][1] == high
        assert all(later[0] == earlier[1] + 1 for earlier, later in pairwise(slices))
    assert len(slices) <= 3, slices


async def test_a_filtered_page_on_postgresql_reads_its_newest_slice_first(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not client.database_url.startswith("postgresql"):
        pytest.skip("SQLite's pages are one walk of the range (its FTS5 lookups are per statement)")
    account = await _account(client)
    # 64 hours, a line an hour, every second one an error with a meta field.
    lines = [
        NewLine(
            line=f"hour {i}",
            ts=BASE_MS + i * HOUR,
            host="web-1",
            level="error" if i % 2 == 0 else "info",
            meta={"code": "ECONNRESET"} if i % 2 == 0 else {"code": "OK"},
        )
        for i in range(64)
    ]
    await insert_lines(client.database_url, account.account_id, lines)
    scanned: list[tuple[int, int]] = []
    scan_lines = service.read_queries.scan_lines

    def spy(**kwargs: Any) -> Any:
        scanned.append((kwargs["from_ms"], kwargs["to_ms"]))
        return scan_lines(**kwargs)

    monkeypatch.setattr(service.read_queries, "scan_lines", spy)
    window = {"from": BASE_MS // 1000, "to": (BASE_MS + 64 * HOUR) // 1000 - 1}
    to_ms = window["to"] * 1000 + 999  # a `to` in seconds covers its whole second

    answer = await export(
        client, account.headers, query="code:ECONNRESET", size=1, prefer="tail", **window
    )
    assert answer.status_code == 200, answer.text
    assert [line["_line"] for line in answer.json()["lines"]] == ["hour 62"]
    # The page filled within the newest 16th of the range (4 hours of 64, and the
    # rounding up): no statement read past it.
    span = to_ms - BASE_MS + 1
    assert scanned
    assert all(low >= to_ms - -(-span // 16) + 1 for low, _high in scanned), scanned

    # Every page of both directions: each matching line once, in order, across slices.
    for prefer, order in (("tail", range(62, -1, -2)), ("head", range(0, 64, 2))):
        walked, pages = await export_all(
            client, account.headers, query="code:ECONNRESET", size=3, prefer=prefer, **window
        )
        assert [line["_line"] for line in walked] == [f"hour {i}" for i in order]
        assert pages > 1
    # A page bigger than the web app's (an export's) is one walk of the whole range, as
    # is an unfiltered page (the time index, in order).
    scanned.clear()
    answer = await export(
        client,
        account.headers,
        query="code:ECONNRESET",
        size=service.MAX_SLICED_PAGE + 1,
        prefer="tail",
        **window,
    )
    assert len(answer.json()["lines"]) == 32
    assert {low for low, _high in scanned} == {BASE_MS}
    scanned.clear()
    answer = await export(client, account.headers, size=2, prefer="tail", **window)
    assert [line["_line"] for line in answer.json()["lines"]] == ["hour 63", "hour 62"]
    assert {low for low, _high in scanned} == {BASE_MS}
