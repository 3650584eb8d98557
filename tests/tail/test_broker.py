"""The live-tail broker: in-process fan-out, bounds, and Redis across brokers."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.api.test_rate_limit import HungRedis
from tests.conftest import REDIS_PREFIX, REDIS_URL
from tests.tail.channels import left_the_channel, subscribers

from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.logs.store import NewLine
from tidegate.logs.tail import (
    RedisTailBroker,
    TailBroker,
    TailLine,
    TooManySubscribers,
)
from tidegate.tail import endpoints as tail_endpoints
from tidegate.tail import service as tail_service

EVERYTHING = LineFilter()


def _line(text: str, **fields: Any) -> TailLine:
    return TailLine(line=text, ts=1_763_800_000_000, host=fields.pop("host", "h"), **fields)


async def test_published_lines_reach_the_accounts_subscribers_only() -> None:
    broker = TailBroker()
    async with (
        broker.subscribe("acct-a", EVERYTHING) as mine,
        broker.subscribe("acct-b", EVERYTHING) as theirs,
    ):
        await broker.publish("acct-a", [_line("one"), NewLine(line="two", ts=1, host="h2")])
        batch = await mine.next_batch(timeout=1)
        assert [item.line for item in batch.lines] == ["one", "two"]
        assert batch.dropped == 0
        assert batch.lines[1].record() == {"_ts": 1, "_host": "h2", "_line": "two"}
        assert (await theirs.next_batch(timeout=0.05)).lines == []
    assert broker.subscriber_count("acct-a") == 0


async def test_lines_published_before_subscribing_are_not_replayed() -> None:
    broker = TailBroker()
    await broker.publish("acct", [_line("early")])
    async with broker.subscribe("acct", EVERYTHING) as subscription:
        assert (await subscription.next_batch(timeout=0.05)).lines == []


async def test_filters_use_lists_and_the_search_syntax() -> None:
    broker = TailBroker()
    only_errors = parse_line_filter(hosts=None, apps="api", levels=None, query="level:error")
    async with broker.subscribe("acct", only_errors) as subscription:
        await broker.publish(
            "acct",
            [
                _line("a", app="api", level="ERROR"),
                _line("b", app="api", level="info"),
                _line("c", app="worker", level="error"),
                _line("d", app="API", level="error", indexonly=True),
            ],
        )
        batch = await subscription.next_batch(timeout=1)
        assert [item.line for item in batch.lines] == ["a", "d"]
        assert batch.lines[1].indexonly


async def test_a_slow_subscriber_drops_the_oldest_lines_and_is_told_how_many() -> None:
    broker = TailBroker(max_queued=10)
    async with (
        broker.subscribe("acct", EVERYTHING) as slow,
        broker.subscribe("acct", EVERYTHING) as fast,
    ):
        for start in range(0, 100, 10):
            await broker.publish("acct", [_line(f"l{i}") for i in range(start, start + 10)])
            assert len((await fast.next_batch(timeout=1)).lines) == 10
        batch = await slow.next_batch(timeout=1)
        assert batch.dropped == 90
        assert [item.line for item in batch.lines] == [f"l{i}" for i in range(90, 100)]
        # Told once: the count starts again.
        await broker.publish("acct", [_line("next")])
        again = await slow.next_batch(timeout=1)
        assert (again.dropped, [item.line for item in again.lines]) == (0, ["next"])


async def test_batches_are_capped_and_the_rest_waits() -> None:
    broker = TailBroker()
    async with broker.subscribe("acct", EVERYTHING) as subscription:
        await broker.publish("acct", [_line(str(i)) for i in range(30)])
        assert len((await subscription.next_batch(timeout=1, max_lines=20)).lines) == 20
        assert len((await subscription.next_batch(timeout=1, max_lines=20)).lines) == 10


async def test_subscribers_per_account_are_capped() -> None:
    broker = TailBroker(max_subscribers_per_account=1)
    async with broker.subscribe("acct", EVERYTHING):
        with pytest.raises(TooManySubscribers):
            async with broker.subscribe("acct", EVERYTHING):
                pass
        async with broker.subscribe("other", EVERYTHING):
            pass


async def test_close_ends_waiting_subscribers() -> None:
    broker = TailBroker()
    async with broker.subscribe("acct", EVERYTHING) as subscription:
        waiting = asyncio.create_task(subscription.next_batch(timeout=30))
        await asyncio.sleep(0.01)
        await broker.close()
        batch = await asyncio.wait_for(waiting, 30)
        assert batch.lines == []
        assert subscription.closed


async def test_publish_never_raises_for_a_broken_filter() -> None:
    class Broken(LineFilter):
        def matches(self, **_fields: Any) -> bool:
            raise RuntimeError("boom")

    broker = TailBroker()
    async with (
        broker.subscribe("acct", Broken(levels=frozenset({"x"}))),
        broker.subscribe("acct", EVERYTHING) as healthy,
    ):
        await broker.publish("acct", [_line("still delivered")])
        assert [item.line for item in (await healthy.next_batch(timeout=1)).lines] == [
            "still delivered"
        ]


def test_wire_form_round_trips() -> None:
    line = TailLine(
        line="x",
        ts=5,
        host="h",
        app="a",
        level="l",
        env="e",
        file="f",
        ip="i",
        mac="m",
        tags=("t",),
        meta={"k": [1, {"n": None}]},
        indexonly=True,
        line_id=9,
    )
    assert TailLine.from_wire(line.to_wire()) == line
    assert TailLine.from_new_line(NewLine(line="x", ts=5, host="h", tags=["t"])).tags == ("t",)


@pytest.fixture
async def redis_brokers() -> AsyncIterator[tuple[RedisTailBroker, RedisTailBroker, Redis]]:
    first, second, probe = (
        Redis.from_url(REDIS_URL),
        Redis.from_url(REDIS_URL),
        Redis.from_url(REDIS_URL),
    )
    one = RedisTailBroker(first, redis_prefix=REDIS_PREFIX)
    two = RedisTailBroker(second, redis_prefix=REDIS_PREFIX)
    await one.start()
    await two.start()
    try:
        yield one, two, probe
    finally:
        await one.close()
        await two.close()
        for client in (first, second, probe):
            await client.aclose()


@pytest.mark.redis
async def test_redis_carries_lines_between_brokers(
    redis_brokers: tuple[RedisTailBroker, RedisTailBroker, Redis],
) -> None:
    one, two, probe = redis_brokers
    account = f"acct-{uuid.uuid4().hex[:8]}"
    channel = f"{REDIS_PREFIX}tail:{account}"
    errors_only = parse_line_filter(hosts=None, apps=None, levels="error", query=None)
    async with (
        two.subscribe(account, errors_only) as remote,
        one.subscribe(account, EVERYTHING) as local,
    ):
        assert await subscribers(probe, channel) == 2
        await one.publish(
            account,
            [_line("boom", level="ERROR", meta={"a": 1}), NewLine(line="ok", ts=1, host="h")],
        )
        remote_batch = await remote.next_batch(timeout=30)
        local_batch = await local.next_batch(timeout=30)
        assert [item.line for item in remote_batch.lines] == ["boom"]
        assert remote_batch.lines[0].meta == {"a": 1}
        # The publisher's own subscribers get the lines once, through Redis.
        assert [item.line for item in local_batch.lines] == ["boom", "ok"]
        assert (await local.next_batch(timeout=0.2)).lines == []
    # The last local subscriber gone, each broker leaves the channel.
    await left_the_channel(probe, channel)


@pytest.mark.redis
async def test_resubscribing_right_after_leaving(
    redis_brokers: tuple[RedisTailBroker, RedisTailBroker, Redis],
) -> None:
    one, two, _probe = redis_brokers
    account = f"acct-{uuid.uuid4().hex[:8]}"
    for round_number in range(5):
        async with two.subscribe(account, EVERYTHING) as remote:
            await one.publish(account, [_line(f"round {round_number}")])
            batch = await remote.next_batch(timeout=30)
            assert [item.line for item in batch.lines] == [f"round {round_number}"]


async def test_a_broker_knows_which_accounts_are_tailed_here() -> None:
    broker = TailBroker()
    assert await broker.listened({"acct-a", "acct-b"}) == set()
    async with broker.subscribe("acct-a", EVERYTHING):
        assert await broker.listened({"acct-a", "acct-b"}) == {"acct-a"}
    assert await broker.listened({"acct-a"}) == set()


@pytest.mark.redis
async def test_a_broker_knows_which_accounts_are_tailed_in_any_process(
    redis_brokers: tuple[RedisTailBroker, RedisTailBroker, Redis],
) -> None:
    """What decides whether a PostgreSQL write takes its rows' ids first (live lines
    carry them): one PUBSUB NUMSUB for the accounts not tailed here."""
    one, two, probe = redis_brokers
    watched, other = (f"acct-{uuid.uuid4().hex[:8]}" for _ in range(2))
    assert await one.listened({watched, other}) == set()
    async with two.subscribe(watched, EVERYTHING):
        assert await one.listened({watched, other}) == {watched}
        async with one.subscribe(other, EVERYTHING):
            assert await one.listened({watched, other}) == {watched, other}
    # Each broker leaves a channel in the background: until then it still counts.
    for account in (watched, other):
        await left_the_channel(probe, f"{REDIS_PREFIX}tail:{account}")
    assert await one.listened({watched, other}) == set()


async def test_a_redis_that_does_not_answer_holds_up_no_write() -> None:
    """Asked before each PostgreSQL write commits: a hung Redis costs one short wait,
    then none for a while, and every account counts as tailed meanwhile."""
    server = HungRedis()
    async with server as url:
        hung = Redis.from_url(url)
        broker = RedisTailBroker(hung)
        try:
            assert await asyncio.wait_for(broker.listened({"a", "b"}), 30) == {"a", "b"}
            asked = len(server.connections)
            assert asked >= 1
            # Not asked again for a while: no new connection, no wait.
            for _ in range(3):
                assert await asyncio.wait_for(broker.listened({"a"}), 30) == {"a"}
            assert len(server.connections) == asked
        finally:
            await hung.aclose()


async def test_unreachable_redis_answers_every_account_as_listened() -> None:
    """Unknown is as if tailed: the write takes ids it may not need, never the reverse."""
    dead = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    broker = RedisTailBroker(dead)
    try:
        assert await broker.listened({"acct-a", "acct-b"}) == {"acct-a", "acct-b"}
    finally:
        await dead.aclose()


async def test_unreachable_redis_keeps_local_subscribers_fed() -> None:
    dead = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    broker = RedisTailBroker(dead, subscribe_timeout=0.3)
    await broker.start()
    try:
        # Publishing must not raise (ingestion already answered).
        await broker.publish("acct", [_line("x")])
        with pytest.raises(Exception, match="did not confirm"):
            async with broker.subscribe("acct", EVERYTHING):
                pass
        assert broker.subscriber_count("acct") == 0
    finally:
        await broker.close()
        await dead.aclose()


class _FakeRequest:
    def __init__(self) -> None:
        self.gone = False

    async def is_disconnected(self) -> bool:
        return self.gone


class _NeverRevoked:
    """The stream's credential check (tests/tail/test_revocation.py tests the real one)."""

    account_id = "acct"

    async def revoked(self) -> str | None:
        return None


def _sse(
    broker: TailBroker,
    request: _FakeRequest,
    missed: Callable[[], Awaitable[list[TailLine]]] | None = None,
) -> AsyncIterator[str]:
    """A stream's server-sent events of every line of the account "acct"."""
    return tail_endpoints._events(
        request=request,  # type: ignore[arg-type]
        broker=broker,
        credential=_NeverRevoked(),  # type: ignore[arg-type]
        line_filter=EVERYTHING,
        missed=missed,
    )


async def test_event_stream_format(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tail_service, "HEARTBEAT_SECONDS", 0.2)
    monkeypatch.setattr(tail_service, "DISCONNECT_CHECK_SECONDS", 0.05)
    broker = TailBroker(max_queued=3)
    request = _FakeRequest()
    events = _sse(broker, request)
    ready = await anext(events)
    assert ready == "retry: 3000\nevent: ready\ndata: {}\n\n"
    await broker.publish("acct", [_line(f"l{i}") for i in range(5)])
    chunk = await anext(events)
    assert chunk == (
        'event: dropped\ndata: {"dropped":2}\n\n'
        'data: {"_ts":1763800000000,"_host":"h","_line":"l2"}\n\n'
        'data: {"_ts":1763800000000,"_host":"h","_line":"l3"}\n\n'
        'data: {"_ts":1763800000000,"_host":"h","_line":"l4"}\n\n'
    )
    assert await asyncio.wait_for(anext(events), 30) == ": heartbeat\n\n"
    request.gone = True
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(events), 30)
    assert broker.subscriber_count("acct") == 0


async def test_lines_read_from_the_store_come_first_and_are_not_given_again_live() -> None:
    """A reopened stream's missed lines (asked once it is subscribed) come after
    ``ready``, each with its id as the event's ``id``; a line both read from the store
    and published live (committed between the two) is sent once."""
    broker = TailBroker()
    request = _FakeRequest()

    async def missed() -> list[TailLine]:
        # Committed after the stream subscribed: published live and in the store.
        await broker.publish("acct", [_line("both", line_id=6), _line("live", line_id=7)])
        return [_line("stored", line_id=5), _line("both", line_id=6)]

    events = _sse(broker, request, missed)
    assert await anext(events) == "retry: 3000\nevent: ready\ndata: {}\n\n"
    assert await anext(events) == (
        'id: 5\ndata: {"_id":"5","_ts":1763800000000,"_host":"h","_line":"stored"}\n\n'
        'id: 6\ndata: {"_id":"6","_ts":1763800000000,"_host":"h","_line":"both"}\n\n'
    )
    assert await anext(events) == (
        'id: 7\ndata: {"_id":"7","_ts":1763800000000,"_host":"h","_line":"live"}\n\n'
    )
    request.gone = True
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(events), 30)


async def test_a_stream_whose_missed_lines_cannot_be_read_goes_on_live() -> None:
    """The read of what a reopened stream missed failing (the database unreachable, the
    read's budget spent) leaves the stream open and live, without those lines."""
    broker = TailBroker()
    request = _FakeRequest()

    async def missed() -> list[TailLine]:
        raise ConnectionRefusedError("the database is down")

    events = _sse(broker, request, missed)
    assert await anext(events) == "retry: 3000\nevent: ready\ndata: {}\n\n"
    await broker.publish("acct", [_line("live", line_id=9)])  # subscribed since ready
    assert (await anext(events)).startswith('id: 9\ndata: {"_id":"9"')
    request.gone = True
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(events), 30)


async def test_ending_the_streams_closes_every_subscription_and_any_new_one() -> None:
    """``end_streams`` is what a stop signal runs (``shutdown.on_stop_signal``): every
    open stream's next batch comes at once, and a stream that subscribes after it (one
    accepted just before the stop) ends at once too."""
    broker = TailBroker()
    async with broker.subscribe("a", EVERYTHING) as open_before:
        broker.end_streams()
        assert open_before.closed
        batch = await open_before.next_batch(timeout=3600)
        assert batch.lines == []
        async with broker.subscribe("a", EVERYTHING) as opened_after:
            assert opened_after.closed
