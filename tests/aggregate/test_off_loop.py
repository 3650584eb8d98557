"""No aggregation runs on the event loop: its statements, the matcher and the counting
run in an export worker thread, and on SQLite none of its statements goes through the
app's read engine (whose driver runs inline on the loop)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event
from tests.aggregate.helpers import HOUR_START, aggregate
from tests.conftest import AppClient
from tests.export.helpers import app_state_of, insert_lines, on_event_loop
from tests.factories import make_account, make_tenant

from tidegate.aggregate import service
from tidegate.logs.filtering import LineFilter
from tidegate.logs.store import NewLine


async def test_aggregations_run_in_a_worker_thread(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    await insert_lines(
        client.database_url,
        account.account_id,
        [NewLine(line=f"line {i}", ts=HOUR_START + i, host="h", level="info") for i in range(30)],
    )
    calls: list[tuple[str, bool]] = []
    aggregation, matches = service.aggregation, LineFilter.matches

    def spy_aggregation(**kwargs: Any) -> Any:
        calls.append(("aggregation", on_event_loop()))
        return aggregation(**kwargs)

    def spy_matches(self: LineFilter, **kwargs: Any) -> bool:
        calls.append(("matches", on_event_loop()))
        return matches(self, **kwargs)

    monkeypatch.setattr(service, "aggregation", spy_aggregation)
    monkeypatch.setattr(LineFilter, "matches", spy_matches)
    statements: list[str] = []
    read_engine = app_state_of(client).db.read_engine.sync_engine

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(read_engine, "before_cursor_execute", seen)
    try:
        exact = await aggregate(client, account.headers, levels="info")
        confirmed = await aggregate(client, account.headers, query="line")
    finally:
        event.remove(read_engine, "before_cursor_execute", seen)

    assert exact.json()["total"] == confirmed.json()["total"] == 30
    assert {name for name, _ in calls} == {"aggregation", "matches"}
    assert not [call for call in calls if call[1]], "aggregation work ran on the event loop"
    if client.database_url.startswith("sqlite"):
        assert not [text for text in statements if "log_lines" in text]
