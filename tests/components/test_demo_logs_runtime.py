"""Issue 9: the demo-logs source generates events on its schedule, bounded, and they run
through the pipeline into the log store (the scheduler's tick driven with a set time)."""

from __future__ import annotations

import time

from tests.components.factories import wire_source
from tests.conftest import AppClient
from tests.gateway.factories import new_account, stored_lines

from tidegate.runtime.demo_logs import MAX_PER_TICK, DemoLogsScheduler
from tidegate.runtime.runtime import runtime_of

T0 = (time.time_ns() // 1_000_000) // 1000 * 1000  # recent: lines are stored by receive day


async def test_demo_logs_follow_their_interval_and_count(isolated_client: AppClient) -> None:
    client = isolated_client
    app = client._transport.app  # type: ignore[attr-defined]
    await runtime_of(app).demo_logs.close()  # this test drives the clock itself
    account = await new_account(client, throttle=False)
    await wire_source(
        client,
        account,
        "demo-logs",
        {"format": "shuffle", "lines": ["a", "b", "c"], "interval_secs": 1, "count": 5},
        routed=False,
    )
    state = app.state.tidegate
    runtime = runtime_of(app)
    scheduler = DemoLogsScheduler()

    async def tick(now: int) -> list[str]:
        await scheduler.tick(runtime, state.intake, now_ms=now)
        return [line.line for line in await stored_lines(client.database_url, account.account_id)]

    assert await tick(T0) == ["a"]  # the first event at once
    assert await tick(T0 + 500) == ["a"]  # not due yet
    assert await tick(T0 + 2_000) == ["a", "b", "c"]
    # count 5: two more at most, however long the pause
    assert await tick(T0 + 60_000) == ["a", "b", "c", "a", "b"]
    lines = await stored_lines(client.database_url, account.account_id)
    assert [line.ts for line in lines[:2]] == [T0, T0 + 2_000]


async def test_a_long_pause_is_not_replayed_as_a_burst(isolated_client: AppClient) -> None:
    client = isolated_client
    app = client._transport.app  # type: ignore[attr-defined]
    await runtime_of(app).demo_logs.close()  # this test drives the clock itself
    account = await new_account(client, throttle=False)
    await wire_source(
        client, account, "demo-logs", {"format": "syslog", "interval_secs": 0.1}, routed=False
    )
    state = app.state.tidegate
    runtime = runtime_of(app)
    scheduler = DemoLogsScheduler()
    await scheduler.tick(runtime, state.intake, now_ms=T0)
    await scheduler.tick(runtime, state.intake, now_ms=T0 + 3_600_000)
    lines = await stored_lines(client.database_url, account.account_id)
    assert len(lines) == 1 + MAX_PER_TICK
    await scheduler.tick(runtime, state.intake, now_ms=T0 + 3_600_050)  # not due yet
    assert len(await stored_lines(client.database_url, account.account_id)) == 1 + MAX_PER_TICK
