"""An idle alert round is one read (tidegate.alerts.idle): no view alerting, no
index-rate or pipeline alert, no line past the cursor, nothing due. Anything to do
runs the full round as before. Counted in statements, never timed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, select, update
from tests.alerts.harness import Harness, open_harness
from tests.alerts.receivers import HttpReceiver
from tests.alerts.test_delivery import fire

from tidegate.alerts.cursor import CURSOR
from tidegate.alerts.runner import AlertRunner
from tidegate.models import AlertCursor, View


@contextmanager
def statements(harness: Harness) -> Iterator[list[str]]:
    """The SQL the harness's database runs inside the block (each engine once)."""
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    engines = {
        id(e.sync_engine): e.sync_engine for e in (harness.db.read_engine, harness.db.write_engine)
    }
    for engine in engines.values():
        event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        for engine in engines.values():
            event.remove(engine, "before_cursor_execute", note)


def _runner(harness: Harness) -> AlertRunner:
    return AlertRunner(harness.db, harness.sealer, harness.settings, clock=harness.clock)


async def _cursor(harness: Harness) -> tuple[int, int]:
    async with harness.db.read_sessions() as session:
        row = (
            await session.execute(
                select(AlertCursor.last_line_id, AlertCursor.version).where(
                    AlertCursor.name == CURSOR
                )
            )
        ).one()
    return int(row[0]), int(row[1])


async def test_an_idle_round_is_one_read_and_writes_nothing(harness: Harness) -> None:
    runner = _runner(harness)
    try:
        await runner.round()  # the first makes the cursor
        before = await _cursor(harness)
        for _ in range(3):
            with statements(harness) as seen:
                await runner.round()
            assert len(seen) == 1, seen
            assert seen[0].lstrip().upper().startswith("SELECT")
        assert await _cursor(harness) == before
        assert runner.rounds == 4
    finally:
        await runner.close()


async def test_a_stored_line_or_an_alerting_view_wakes_the_full_round(harness: Harness) -> None:
    runner = _runner(harness)
    try:
        await runner.round()
        await harness.ingest("nobody watches this")
        with statements(harness) as seen:
            await runner.round()
        assert len(seen) > 1
        last, version = await _cursor(harness)
        async with harness.db.read_sessions() as session:
            from sqlalchemy import func

            from tidegate.models import LogLine

            top = (await session.execute(select(func.max(LogLine.id)))).scalar_one()
        assert last == top  # with no view, the cursor follows the store's end
        with statements(harness) as seen:
            await runner.round()
        assert len(seen) == 1  # idle again
        await harness.view(
            [{"integration": "webhook", "url": "http://127.0.0.1:9/x", "triggerlimit": 1}]
        )
        with statements(harness) as seen:
            await runner.round()
        assert len(seen) > 1
        assert (await _cursor(harness))[1] > version
    finally:
        await runner.close()


async def test_a_due_delivery_goes_out_from_an_idle_round(
    own_database: str, tmp_path: Path
) -> None:
    async with HttpReceiver() as receiver:
        harness = await open_harness(own_database, tmp_path)
        runner = _runner(harness)
        try:
            view_id = await fire(
                harness,
                {"integration": "webhook", "url": f"{receiver.base_url}/a"},
                "payment failed",
            )
            # The view stops alerting: nothing is left to evaluate, one delivery is due.
            async with harness.db.write_sessions() as session, session.begin():
                await session.execute(update(View).where(View.id == view_id).values(alerting=False))
            harness.clock.move(1)
            await runner.round()
            assert len(receiver.requests) == 1
            assert [delivery.status for delivery in await harness.deliveries()] == ["delivered"]
        finally:
            await runner.close()
            await harness.close()
