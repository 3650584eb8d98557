"""A worker's tap registry, in-process: a stream's rate and bounds (what it does not carry
is counted), the other workers' forwarding taps (a stream's renewal and end, the count
of what a forwarding stream skipped), and forwarding taps that expire on a pipeline
that never runs."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from tidegate.kit.tap import (
    MAX_TAP_BYTES,
    MAX_TAPS,
    SKIPPED_MARK,
    StreamTap,
    TapBusy,
    TapRegistry,
)

PIPELINE, NODE = "p" * 36, "n" * 36


def ran(*events: dict[str, Any]) -> dict[str, Any]:
    """The outputs of one batch in which ``NODE`` emitted ``events``."""
    return {NODE: SimpleNamespace(main=list(events), named={})}


def announcement(tap_id: str, **fields: Any) -> bytes:
    return orjson.dumps(
        {
            "id": tap_id,
            "pipeline_id": PIPELINE,
            "component_id": NODE,
            "origin": "another worker",
            "timeout_s": 15,
            **fields,
        }
    )


async def test_a_stream_carries_what_passes_between_drains() -> None:
    taps = TapRegistry()
    async with taps.stream(
        account_id="a", pipeline_id=PIPELINE, component_id=NODE, rate=1000
    ) as stream:
        seen: list[int] = []
        for number in range(20):
            taps.offer(PIPELINE, ran({"n": number}, {"n": number, "late": True}))
            if number % 3 == 0:
                events, skipped = await stream.drain(0.01)
                assert skipped == 0
                seen.extend(orjson.loads(event)["n"] for event in events)
        events, _ = await stream.drain(0.01)
        seen.extend(orjson.loads(event)["n"] for event in events)
    assert seen == [number for number in range(20) for _ in range(2)]
    assert len(taps) == 0


async def test_a_stream_counts_what_is_over_its_rate_or_its_bytes() -> None:
    taps = TapRegistry()
    async with taps.stream(account_id="a", pipeline_id=PIPELINE, component_id=NODE, rate=2) as slow:
        taps.offer(PIPELINE, ran(*({"n": n} for n in range(30))))
        events, skipped = await slow.drain(0.01)
    # One call within a second (at most two, should it straddle one's end).
    assert 1 <= len(events) <= 4
    assert len(events) + skipped == 30

    big = {"blob": "x" * 4000}
    async with taps.stream(
        account_id="a", pipeline_id=PIPELINE, component_id=NODE, rate=1000
    ) as behind:
        taps.offer(PIPELINE, ran(*([big] * 300)))  # 1.2 MB: more than a stream holds
        events, skipped = await behind.drain(0.01)
    assert sum(len(event) for event in events) <= MAX_TAP_BYTES
    assert skipped > 0
    assert len(events) + skipped == 300


async def test_an_accounts_streams_are_bounded_per_worker() -> None:
    taps = TapRegistry()
    opened = [
        taps.stream(account_id="a", pipeline_id=PIPELINE, component_id=NODE, rate=1)
        for _ in range(8)
    ]
    for stream in opened:
        await stream.__aenter__()
    with pytest.raises(TapBusy, match="tap streams"):
        taps.can_stream("a")
    taps.can_stream("b")  # another account's is not counted
    for stream in opened:
        await stream.__aexit__(None, None, None)
    taps.can_stream("a")
    assert len(taps) == 0


async def test_end_streams_ends_open_streams_and_those_opened_after() -> None:
    taps = TapRegistry()
    async with taps.stream(
        account_id="a", pipeline_id=PIPELINE, component_id=NODE, rate=5
    ) as open_:
        taps.end_streams()
        assert open_.closed
        assert await open_.drain(60) == ([], 0)  # at once
    async with taps.stream(account_id="a", pipeline_id=PIPELINE, component_id=NODE, rate=5) as late:
        assert late.closed


async def test_a_forwarding_stream_is_renewed_and_ended_by_its_origin() -> None:
    taps = TapRegistry()
    taps._forward_for(announcement("s1", stream=True, rate=1))
    assert len(taps) == 1
    [forwarding] = taps._forwarding.values()
    assert isinstance(forwarding, StreamTap)
    first_deadline = forwarding.deadline
    taps._forward_for(announcement("s1", stream=True, rate=1))  # a renewal, not a second tap
    assert len(taps) == 1
    assert forwarding.deadline >= first_deadline

    # It forwards at its rate and sends the count of what it skipped.
    taps.offer(PIPELINE, ran(*({"n": n} for n in range(5))))
    sent = [taps._outbox.get_nowait()[1] for _ in range(taps._outbox.qsize())]
    markers = [item for item in sent if item.startswith(SKIPPED_MARK)]
    carried = [item for item in sent if not item.startswith(SKIPPED_MARK)]
    assert 1 <= len(carried) <= 2
    assert sum(int(item[len(SKIPPED_MARK) :]) for item in markers) == 5 - len(carried)

    taps._forward_for(announcement("s1", close=True))
    assert len(taps) == 0


async def test_other_workers_expired_taps_never_fill_a_quiet_worker() -> None:
    """Forwarding taps are dropped past their deadline even when their pipeline never
    runs here; before, such taps counted against ``MAX_TAPS`` for good."""
    taps = TapRegistry()
    for number in range(MAX_TAPS):
        taps._forward_for(announcement(f"old{number}", limit=1))
    assert len(taps) == MAX_TAPS
    with pytest.raises(TapBusy):
        await taps.capture(pipeline_id=PIPELINE, component_id=NODE, limit=1, timeout_s=0.01)
    for forwarding in taps._forwarding.values():
        forwarding.deadline = 0.0  # their origins' requests ended long ago
    events, timed_out = await taps.capture(
        pipeline_id=PIPELINE, component_id=NODE, limit=1, timeout_s=0.01
    )
    assert (events, timed_out) == ([], True)
    assert len(taps) == 0


async def test_a_tap_of_one_output_sees_it_wired_or_not() -> None:
    taps = TapRegistry()
    outputs = {
        NODE: SimpleNamespace(
            main=[{"kept": 1}], named={"dropped": [{"dropped": 1}], "arm": [{"arm": 1}]}
        )
    }
    wired = frozenset({(NODE, "arm")})  # "dropped" goes nowhere
    streams = {}
    for output in (None, "main", "dropped", "arm", "none such"):
        streams[output] = await taps.stream(
            account_id=str(output), pipeline_id=PIPELINE, component_id=NODE, rate=10, output=output
        ).__aenter__()
    taps.offer(PIPELINE, outputs, wired)
    seen = {}
    for output, stream in streams.items():
        events, _ = await stream.drain(0.01)
        seen[output] = [orjson.loads(event) for event in events]
    assert seen == {
        None: [{"kept": 1}, {"arm": 1}],
        "main": [{"kept": 1}],
        "dropped": [{"dropped": 1}],
        "arm": [{"arm": 1}],
        "none such": [],
    }


async def test_a_forwarding_stream_counts_what_its_full_queue_could_not_send() -> None:
    """A worker's queue to Redis full: the events it could not queue are counted as
    skipped, and the count is sent once there is room (never lost with it)."""
    taps = TapRegistry()
    taps._outbox = asyncio.Queue(maxsize=2)
    taps._forward_for(announcement("s2", stream=True, rate=100))
    taps.offer(PIPELINE, ran(*({"n": n} for n in range(5))))
    queued = [taps._outbox.get_nowait()[1] for _ in range(taps._outbox.qsize())]
    assert [orjson.loads(item)["n"] for item in queued] == [0, 1]  # no room for a count
    taps.offer(PIPELINE, ran({"n": 5}))
    queued = [taps._outbox.get_nowait()[1] for _ in range(taps._outbox.qsize())]
    assert queued == [orjson.dumps({"n": 5}), SKIPPED_MARK + b"3"]
