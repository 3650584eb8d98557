"""PostgreSQL numbers lines from a sequence, so a transaction can commit after one
holding larger ids. The evaluator watches the ids it found missing and counts such a
line when it commits (once), and index-rate alerts read the usage table."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncSession
from tests.alerts.harness import open_harness
from tests.conftest import _create_pg_database, _drop_pg_database, pg_url
from tests.ingest.factories import make_ingestor

from tidegate.alerts.index_rate.evaluator import exceeded, z_score
from tidegate.db.migrate import upgrade_database
from tidegate.logs.store import NewLine, store_lines


async def _store(account_id: str, text: str, session: AsyncSession) -> None:
    now = int(time.time() * 1000)
    line = NewLine(line=text, ts=now, host="h", app="api")
    await store_lines(session=session, account_id=account_id, lines=[line], received_ms=now)


async def test_a_line_committed_late_is_counted_once(tmp_path: Path) -> None:
    name = await _create_pg_database()
    url = pg_url(name)
    try:
        await upgrade_database(url)
        harness = await open_harness(url, tmp_path)
        try:
            await harness.view(
                [{"integration": "webhook", "url": "http://127.0.0.1:9/", "triggerlimit": 100_000}]
            )
            other = await make_ingestor(harness.client)
            evaluator = harness.evaluator()
            await evaluator.evaluate()
            async with harness.db.write_sessions() as slow:
                # The watched account's line takes an id and stays uncommitted while
                # another account's line takes a larger id and commits.
                await _store(harness.who.account_id, "payment failed: slow", slow)
                async with harness.db.write_sessions() as fast:
                    await _store(other.account_id, "payment failed: elsewhere", fast)
                    await fast.commit()
                harness.clock.move(1)
                first = await evaluator.evaluate()
                assert first.lines == 1
                await slow.commit()
            harness.clock.move(1)
            second = await evaluator.evaluate()
            assert second.lines == 1  # the late line, from the watched gap
            harness.clock.move(1)
            third = await evaluator.evaluate()
            assert third.lines == 0
            [state] = await harness.states()
            assert state["count"] == 1
            assert [m["_line"] for m in state["matches"]] == ["payment failed: slow"]
        finally:
            await harness.close()
    finally:
        await _drop_pg_database(name)


def test_index_rate_thresholds() -> None:
    config = {"max_lines": 100, "max_z_score": 2, "threshold_alert": "separate"}
    steady = [50, 52, 48, 50, 51]
    assert exceeded(config, 101, steady)[0]  # over max_lines
    assert exceeded(config, 60, steady)[0]  # z-score far above 2
    assert not exceeded(config, 51, steady)[0]
    both = {**config, "threshold_alert": "both"}
    assert not exceeded(both, 60, steady)[0]  # only the z-score
    assert exceeded(both, 101, steady)[0]
    assert z_score(10, [1, 2]) is None  # too little history
    fired, reason = exceeded({"max_lines": 10}, 11, [])
    assert fired
    assert "11 lines" in reason


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_index_rate_fires_on_the_real_volume(backend: str, tmp_path: Path) -> None:
    from tidegate.alerts.index_rate.evaluator import evaluate_index_rates

    name = None
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'rate.sqlite3'}"
    else:
        name = await _create_pg_database()
        url = pg_url(name)
    try:
        await upgrade_database(url)
        harness = await open_harness(url, tmp_path / "data")
        try:
            response = await harness.client.put(
                "/v1/config/index-rate",
                json={
                    "max_lines": 3,
                    "frequency": "hourly",
                    "channels": {"webhook": [{"url": "http://127.0.0.1:9/rate"}]},
                    "enabled": True,
                },
                headers=harness.who.account.headers,
            )
            assert response.status_code == 200, response.text
            hour = 3_600_000
            start = (harness.clock.now_ms // hour) * hour + 10
            args = (harness.db, harness.sealer, harness.settings)
            assert await evaluate_index_rates(*args, now_ms=start) == 0
            await harness.ingest("a", "b")
            # The next hour: two lines in the last one, under the limit.
            assert await evaluate_index_rates(*args, now_ms=start + hour) == 0
            await harness.ingest("c", "d", "e", "f")
            # Twice within an hour: the hour is judged once.
            assert await evaluate_index_rates(*args, now_ms=start + 2 * hour) == 1
            assert await evaluate_index_rates(*args, now_ms=start + 2 * hour + 5) == 0
            [delivery] = await harness.deliveries()
            assert delivery.source == "index-rate"
            assert delivery.view_id is None
            assert delivery.payload["count"] == 4
            assert "max_lines 3" in delivery.payload["detail"]
            # Its link opens the account's usage page.
            account_id = harness.who.account.account_id
            assert delivery.payload["url"] == (
                f"{harness.settings.public_url.rstrip('/')}/usage?account={account_id}"
            )
        finally:
            await harness.close()
    finally:
        if name is not None:
            await _drop_pg_database(name)
