"""The evaluator over a real store (SQLite and PostgreSQL) with a hand clock: what
fires, that each line counts once across evaluators, and across restarts."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select, text
from tests.alerts.harness import VIEWS, Harness
from tests.waiting import eventually

from tidegate.alerts import cursor
from tidegate.models import AlertCursor, AlertState


def webhook(**fields: Any) -> dict[str, Any]:
    return {
        "integration": "webhook",
        "url": "http://127.0.0.1:9/hook",
        "triggerlimit": 3,
        "triggerinterval": "30",
        **fields,
    }


async def test_presence_immediate_fires_once_with_the_matches(harness: Harness) -> None:
    await harness.view([webhook(immediate="true")])
    evaluator = harness.evaluator()
    await evaluator.evaluate()  # the cursor starts at the store's end
    await harness.ingest("payment failed: card 1", "all good", "payment failed: card 2")
    harness.clock.move(1)
    result = await evaluator.evaluate()
    assert result.claimed
    assert result.firings == 0
    await harness.ingest("payment failed: card 3", "payment failed: card 4")
    harness.clock.move(1)
    result = await evaluator.evaluate()
    assert result.firings == 1
    [delivery] = await harness.deliveries()
    assert delivery.event == "trigger"
    assert delivery.status == "pending"
    assert delivery.integration == "webhook"
    payload = delivery.payload
    assert payload["count"] == 3
    assert [m["_line"] for m in payload["matches"]] == [
        "payment failed: card 1",
        "payment failed: card 2",
        "payment failed: card 3",
    ]
    # More matches within the same interval do not fire again.
    await harness.ingest("payment failed: card 5")
    harness.clock.move(5)
    assert (await evaluator.evaluate()).firings == 0
    assert len(await harness.deliveries()) == 1


async def test_a_line_sent_after_a_channel_is_edited_meets_the_edited_channel(
    harness: Harness,
) -> None:
    """A round reads the views, then a channel is edited to fire at once and a line
    arrives, all before the round reads its lines (a busy machine, a matching process
    still starting). The line is judged by the edited channel: judged by the one read
    before the edit (firing at the end of 15 minutes), it was counted there and lost
    when the edit took effect, and the alert never fired."""
    view_id = await harness.view([webhook(triggerlimit=1, triggerinterval="15m")])
    evaluator = harness.evaluator()
    await evaluator.evaluate()
    load = evaluator.watch.load
    edits = [view_id]

    async def load_then_edit(session: Any) -> Any:
        specs = await load(session)
        if edits:
            edited = await harness.client.put(
                f"{VIEWS}/{edits.pop()}",
                json={
                    "name": "Payments errors",
                    "query": "payment failed",
                    "channels": [webhook(triggerlimit=1, immediate="true")],
                },
                headers=harness.who.account.headers,
            )
            assert edited.status_code == 200, edited.text
            await harness.ingest("payment failed: card declined")
        return specs

    evaluator.watch.load = load_then_edit  # type: ignore[method-assign]
    for _ in range(3):
        harness.clock.move(1)
        await evaluator.evaluate()
    assert not edits
    [delivery] = await harness.deliveries()
    assert delivery.payload["count"] == 1
    assert [m["_line"] for m in delivery.payload["matches"]] == ["payment failed: card declined"]


async def test_the_alert_link_opens_the_view_over_the_window_that_fired(
    harness: Harness,
) -> None:
    """The link is the web app's ``/views/<id>`` (a page there opens the view's search)
    with the fired window as ``from`` and ``to``: every matched line is inside it."""
    view_id = await harness.view([webhook(triggerlimit=2)])
    evaluator = harness.evaluator()
    await evaluator.evaluate()
    await harness.ingest("payment failed 1", "payment failed 2")
    harness.clock.move(35)  # the window the lines opened has ended
    await evaluator.evaluate()
    [delivery] = await harness.deliveries()
    link = urlsplit(delivery.payload["url"])
    public = urlsplit(harness.settings.public_url)
    assert (link.scheme, link.netloc, link.path) == (
        public.scheme, public.netloc, f"/views/{view_id}",
    )  # fmt: skip
    query = {name: value for name, [value] in parse_qs(link.query).items()}
    # The view's account: a person working in another one is switched to it.
    assert query.pop("account") == delivery.account_id
    window = {name: int(value) for name, value in query.items()}
    assert window["to"] == delivery.fired_ms
    assert window["to"] - window["from"] == 30_000  # the channel's "30"
    stamps = [match["_ts"] for match in delivery.payload["matches"]]
    assert len(stamps) == 2
    assert all(window["from"] <= ts <= window["to"] for ts in stamps)


async def test_the_alert_link_covers_lines_whose_own_time_is_outside_the_window(
    harness: Harness,
) -> None:
    """A window counts lines by when they arrived; the search finds them by their own
    time. A backlog shipped ten minutes late (or a host whose clock is off) fires the
    alert now: its link's range reaches back to the lines, or opens onto nothing."""
    view_id = await harness.view([webhook(triggerlimit=2)])
    evaluator = harness.evaluator()
    await evaluator.evaluate()
    ten_minutes_ago = harness.clock.now_ms - 600_000
    await harness.ingest("payment failed late 1", timestamp=ten_minutes_ago)
    await harness.ingest("payment failed late 2", timestamp=ten_minutes_ago + 5)
    harness.clock.move(35)
    await evaluator.evaluate()
    [delivery] = await harness.deliveries()
    query = parse_qs(urlsplit(delivery.payload["url"]).query)
    start, end = int(query["from"][0]), int(query["to"][0])
    assert [m["_ts"] for m in delivery.payload["matches"]] == [
        ten_minutes_ago,
        ten_minutes_ago + 5,
    ]
    assert start == ten_minutes_ago  # the first line's own time
    assert end == delivery.fired_ms  # still the window's end
    assert view_id in delivery.payload["url"]


async def test_presence_at_interval_end_and_absence(harness: Harness) -> None:
    await harness.view([webhook(triggerlimit=2)], name="presence")
    await harness.view(
        [webhook(operator="absence", triggerlimit=1, triggerinterval="1m")],
        name="absence",
        query="heartbeat",
    )
    evaluator = harness.evaluator()
    await evaluator.evaluate()
    await harness.ingest("payment failed 1", "payment failed 2", "heartbeat")
    harness.clock.move(1)
    assert (await evaluator.evaluate()).firings == 0
    harness.clock.move(35)  # the presence window (opened by the lines) has ended
    result = await evaluator.evaluate()
    assert result.firings == 1
    harness.clock.move(30)  # a minute since the absence channel started: it had a line
    assert (await evaluator.evaluate()).firings == 0
    harness.clock.move(60)  # a minute with no heartbeat
    assert (await evaluator.evaluate()).firings == 1
    events = [(d.payload["name"], d.payload["count"]) for d in await harness.deliveries()]
    assert events == [("presence", 2), ("absence", 0)]


async def test_each_line_counts_once_across_racing_evaluators(harness: Harness) -> None:
    # Never fires (the limit is beyond reach): the stored window count is the number
    # of lines the evaluators counted between them.
    await harness.view([webhook(triggerlimit=100_000, triggerinterval="24h")])
    first = harness.evaluator()
    await first.evaluate()
    ahead = type(harness.clock)(harness.clock.now_ms)
    second = harness.evaluator(clock=ahead)
    sent = 0
    lost = 0
    for round_ in range(8):
        await harness.ingest(*(f"payment failed {round_}.{n}" for n in range(7)), "unrelated")
        sent += 7
        # The second evaluator's clock is past the first one's lease: both claim and
        # evaluate the same batch at once; the cursor's version lets one commit.
        harness.clock.move(100)
        ahead.now_ms = harness.clock.now_ms + 50_000
        results = await asyncio.gather(first.evaluate(), second.evaluate())
        assert any(result.claimed for result in results)
        lost += sum(result.lost_race for result in results)
    for evaluator in (first, second):
        harness.clock.move(100)
        ahead.now_ms = harness.clock.now_ms + 50_000
        await evaluator.evaluate()
    assert lost > 0  # the race did happen
    [state] = await harness.states()
    assert state["count"] == sent


async def test_a_restart_does_not_fire_twice(harness: Harness) -> None:
    await harness.view([webhook(immediate="true", triggerlimit=2)])
    before = harness.evaluator()
    await before.evaluate()
    await harness.ingest("payment failed a", "payment failed b")
    harness.clock.move(1)
    assert (await before.evaluate()).firings == 1
    # A new process (another owner): the lease expires, the cursor and states are read
    # from the database, nothing is judged again.
    harness.clock.move(120)
    after = harness.evaluator()
    result = await after.evaluate()
    assert result.claimed
    assert result.firings == 0
    assert len(await harness.deliveries()) == 1


async def test_the_view_filters_apply(harness: Harness) -> None:
    await harness.view(
        [webhook(immediate="true", triggerlimit=1)], query="payment", apps=["billing"], hosts=[]
    )
    evaluator = harness.evaluator()
    await evaluator.evaluate()
    await harness.ingest("payment failed", app="api")
    harness.clock.move(1)
    assert (await evaluator.evaluate()).firings == 0
    await harness.ingest("payment failed", app="billing")
    harness.clock.move(1)
    assert (await evaluator.evaluate()).firings == 1


async def test_a_view_deleted_while_its_lines_are_judged_fails_no_round(
    harness: Harness,
) -> None:
    """A round reads the views and judges the new lines; one view is deleted before the
    round writes what it found. The other view's firing and states are written, the
    deleted one's are not: written, they failed the whole round (every account's) on the
    foreign keys, and the round was tried again a tick later."""
    kept = await harness.view([webhook(triggerlimit=1, immediate="true")], name="Kept")
    gone = await harness.view([webhook(triggerlimit=1, immediate="true")], name="Gone")
    evaluator = harness.evaluator()
    await evaluator.evaluate()
    await harness.ingest("payment failed: card declined")
    harness.clock.move(1)
    commit = evaluator._commit

    async def delete_then_commit(*args: Any) -> int | None:
        deleted = await harness.client.delete(
            f"{VIEWS}/{gone}", headers=harness.who.account.headers
        )
        assert deleted.status_code == 200, deleted.text
        return await commit(*args)

    evaluator._commit = delete_then_commit  # type: ignore[method-assign]
    result = await evaluator.evaluate()
    # The round counts the firing it wrote, not the one it left out.
    assert (result.claimed, result.lost_race, result.firings) == (True, False, 1)
    assert [delivery.view_id for delivery in await harness.deliveries()] == [kept]
    async with harness.db.read_sessions() as session:
        rows = await session.execute(select(AlertState.view_id))
        assert set(rows.scalars()) == {kept}
    # The next round goes on from there: a new match fires the kept view's alert again
    # once its interval allows, and nothing of the deleted view comes back.
    evaluator._commit = commit  # type: ignore[method-assign]
    harness.clock.move(60)
    await harness.ingest("payment failed: card declined again")
    harness.clock.move(1)
    await evaluator.evaluate()
    assert {delivery.view_id for delivery in await harness.deliveries()} == {kept}


async def test_workers_starting_at_once_make_one_cursor(harness: Harness) -> None:
    """Two workers' first rounds on a new store: each finds no cursor and makes one. The
    second's insert waits for the first's commit and then changes nothing (before, it
    failed that worker's round on the primary key, seen in four-worker servers' logs).
    PostgreSQL's: SQLite's writer holds the database, so the two never overlap."""
    if harness.db.sqlite_path is not None:
        pytest.skip("SQLite has one writer: the two never overlap")
    async with harness.db.write_sessions() as first:
        await cursor.ensure_cursor(first, now_ms=1)

        async def second_worker() -> None:
            async with harness.db.write_sessions() as second:
                await cursor.ensure_cursor(second, now_ms=2)
                await second.commit()

        second = asyncio.create_task(second_worker())

        async def waiting() -> bool:
            # The second's insert waits on the first's row (a lock wait in PostgreSQL).
            async with harness.db.read_sessions() as probe:
                found = await probe.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                    )
                )
                return bool(found.scalar_one())

        await eventually(waiting, what="the second worker waiting on the first's insert")
        await first.commit()
    await second
    async with harness.db.read_sessions() as session:
        rows = (
            await session.execute(
                select(AlertCursor.name, AlertCursor.evaluated_ms).where(
                    AlertCursor.name == cursor.CURSOR
                )
            )
        ).all()
    assert [tuple(row) for row in rows] == [(cursor.CURSOR, 1)]
