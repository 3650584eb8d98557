"""Live tap: a short look at the events passing one component of a running pipeline.

A tap is a bounded buffer (at most ``limit`` events and ``MAX_TAP_BYTES`` of their JSON)
registered under ``(pipeline_id, component_id)``. After each batch runs, the runtime
offers every tapped component's output; nothing is stored anywhere. The request waits
until the buffer is full or its timeout passes, then the tap is gone.

A **stream** (``StreamTap``) stays open until its reader leaves: nothing passes
unseen between two rounds, as it does between two requests of ``capture``. It carries
at most ``rate`` events a second and holds at most ``STREAM_QUEUED`` events (and
``MAX_TAP_BYTES``) for a reader that fell behind; every event it did not carry is
counted, and the count is told to the reader (``drain``), so a gap is never silent.

Across workers (``TIDEGATE_REDIS_URL`` set) a tap is announced on a Redis channel;
every worker keeps a forwarding tap for it until its deadline and publishes what it
captures to the tap's own channel, which the tapping worker reads. A stream announces
itself again every ``STREAM_RENEW_S`` (each worker's forwarding tap lives
``STREAM_LEASE_S`` past the last announcement) and says when it closes; a forwarding
stream applies the rate on its worker too and sends the count of what it skipped.
Without Redis a tap sees the events of its own worker only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from redis.asyncio import Redis

from tidegate.config import DEFAULT_REDIS_PREFIX
from tidegate.processing.conditions import compile_condition

log = logging.getLogger("tidegate.runtime")

__all__ = [
    "MAX_STREAMS_PER_ACCOUNT",
    "MAX_STREAM_RATE",
    "MAX_TAPS",
    "MAX_TAP_BYTES",
    "StreamTap",
    "Tap",
    "TapBusy",
    "TapRegistry",
    "compile_filter",
]

Event = dict[str, Any]
Predicate = Callable[[Any, bytes], bool]
"""``(event, its JSON)`` -> whether the tap keeps it."""

MAX_TAPS: Final = 64  # open taps per worker (local and forwarding ones together)
MAX_TAP_BYTES: Final = 1024 * 1024  # JSON of the events one tap holds
MAX_STREAMS_PER_ACCOUNT: Final = 8  # open streams of one account, per worker
MAX_STREAM_RATE: Final = 1_000  # events a second a stream may ask for
STREAM_QUEUED: Final = 1_000  # events a stream holds for a reader that fell behind
STREAM_RENEW_S: Final = 5.0  # a stream announces itself again this often
STREAM_LEASE_S: Final = 15.0  # a forwarding stream lives this long after its last announcement
MAIN_OUTPUT: Final = "main"  # a tap's ``output``: the component's main output only
# A forwarding stream's count of the events it skipped, sent on the tap's channel: never
# the first byte of an event's JSON.
SKIPPED_MARK: Final = b"\x00skipped:"
# After the deployment's Redis prefix (TIDEGATE_REDIS_PREFIX): the control channel is
# ``<prefix>tap:control`` and a tap's own ``<prefix>tap:<tap id>``.
CHANNEL_PART: Final = "tap:"


def compile_filter(spec: Any) -> Predicate | None:
    """A tap's ``filter``: a string keeps the events whose JSON contains it (any case);
    an object is a condition of the pipeline condition language. Raises
    ``ConditionError`` (a ``ValueError``) for an invalid condition."""
    if spec is None or spec == "" or spec == {}:
        return None
    if isinstance(spec, str):
        needle = spec.lower().encode()
        return lambda _event, encoded: needle in encoded.lower()
    condition = compile_condition(spec)
    return lambda event, _encoded: bool(condition.predicate(event))


def _accepted(events: Iterable[Event], predicate: Predicate | None) -> Iterable[bytes]:
    """The JSON of each event ``predicate`` keeps (all, without one)."""
    for event in events:
        try:
            encoded = orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS)
            if predicate is not None and not predicate(event, encoded):
                continue
        except (TypeError, ValueError) as error:  # one odd event never fails the run
            log.debug("tap skipped an event: %s", error)
            continue
        yield encoded


class TapBusy(Exception):
    """The worker already holds ``MAX_TAPS`` open taps."""


@dataclass(slots=True, eq=False)
class Tap:
    pipeline_id: str
    component_id: str
    limit: int
    predicate: Predicate | None = None
    output: str | None = None  # one output (MAIN_OUTPUT or a name); None: all it emits
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    deadline: float = 0.0  # time.monotonic() after which a forwarding tap is dropped
    events: list[bytes] = field(default_factory=list)
    count: int = 0
    size: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    # Set on another worker's behalf: sends one event's JSON on, True when it was queued.
    forward: Callable[[bytes], bool] | None = None

    def offer(self, events: Iterable[Event]) -> None:
        for encoded in _accepted(events, self.predicate):
            if self.done.is_set():
                return
            self.take(encoded)

    def finished(self) -> bool:
        return self.done.is_set()

    def take(self, encoded: bytes) -> None:
        if self.done.is_set():
            return
        if self.size + len(encoded) > MAX_TAP_BYTES:
            self.done.set()
            return
        self.size += len(encoded)
        self.count += 1
        if self.forward is not None:
            self.forward(encoded)
        else:
            self.events.append(encoded)
        if self.count >= self.limit:
            self.done.set()

    def decoded(self) -> list[Any]:
        return [orjson.loads(item) for item in self.events]


@dataclass(slots=True, eq=False)
class StreamTap:
    """An open-ended tap: what passes, at most ``rate`` events a second, until closed.

    Events over the rate, or past what the queue holds while its reader is behind, are
    not kept but counted (``skipped``); ``drain`` hands both to the reader."""

    pipeline_id: str
    component_id: str
    rate: int
    predicate: Predicate | None = None
    output: str | None = None  # as Tap's
    account_id: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    deadline: float = 0.0  # as Tap's, for a forwarding stream (renewed by announcements)
    forward: Callable[[bytes], bool] | None = None
    queued: deque[bytes] = field(default_factory=deque)
    size: int = 0
    skipped: int = 0
    carried: int = 0  # events taken since the stream opened (queued or forwarded)
    second: int = -1  # the whole second of time.monotonic() being counted against the rate
    in_second: int = 0
    closed: bool = False
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def offer(self, events: Iterable[Event]) -> None:
        for encoded in _accepted(events, self.predicate):
            self.take(encoded)

    def finished(self) -> bool:
        return self.closed

    def take(self, encoded: bytes) -> None:
        if self.closed:
            return
        second = int(time.monotonic())
        if second != self.second:
            self.second, self.in_second = second, 0
        if self.in_second >= self.rate or (
            self.forward is None
            and (len(self.queued) >= STREAM_QUEUED or self.size + len(encoded) > MAX_TAP_BYTES)
        ):
            self.skipped += 1
            self.arrived.set()
            return
        self.in_second += 1
        if self.forward is not None:
            if self.forward(encoded):
                self.carried += 1
            else:  # the worker's queue to Redis is full: counted like the rate's
                self.skipped += 1
            return
        self.carried += 1
        self.queued.append(encoded)
        self.size += len(encoded)
        self.arrived.set()

    def count_skipped(self, count: int) -> None:
        """Events another worker's forwarding stream skipped."""
        self.skipped += count
        self.arrived.set()

    def close(self) -> None:
        self.closed = True
        self.arrived.set()

    async def drain(self, timeout_s: float) -> tuple[list[bytes], int]:
        """What came since the last drain, waiting up to ``timeout_s`` for something:
        ``(events' JSON, how many were skipped)``; at once, empty, once closed."""
        if not self.queued and not self.skipped and not self.closed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await self.arrived.wait()
        self.arrived.clear()
        events, self.queued, self.size = list(self.queued), deque(), 0
        skipped, self.skipped = self.skipped, 0
        return events, skipped


class TapRegistry:
    """One worker's open taps. ``offer`` costs one dict lookup when none is open."""

    def __init__(
        self, redis: Redis | None = None, *, redis_prefix: str = DEFAULT_REDIS_PREFIX
    ) -> None:
        self._redis = redis
        self._channel_prefix = redis_prefix + CHANNEL_PART
        self.control_channel = self._channel_prefix + "control"
        self._origin = uuid.uuid4().hex
        self._taps: dict[tuple[str, str], set[Tap | StreamTap]] = {}
        self._by_pipeline: dict[str, int] = {}
        self._forwarding: dict[str, Tap | StreamTap] = {}  # by tap id: other workers' taps
        self._ending = False
        self._listener: asyncio.Task[None] | None = None
        self._outbox: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue(maxsize=10_000)
        self._sender: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return sum(len(taps) for taps in self._taps.values())

    def _channel(self, tap_id: str) -> str:
        return self._channel_prefix + tap_id

    # Lifecycle (with Redis)

    async def start(self) -> None:
        if self._redis is None or self._listener is not None:
            return
        self._listener = asyncio.create_task(self._listen(), name="tap control listener")
        self._sender = asyncio.create_task(self._send(), name="tap forwarder")

    def end_streams(self) -> None:
        """End every open stream (the server is stopping): each reader's next drain
        comes at once and its stream ends; a stream opened after this ends at once."""
        self._ending = True
        for taps in self._taps.values():
            for tap in taps:
                if isinstance(tap, StreamTap) and tap.forward is None:
                    tap.close()

    async def close(self) -> None:
        self.end_streams()
        for task in (self._listener, self._sender):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._listener = self._sender = None

    # The data plane

    def offer(
        self,
        pipeline_id: str,
        outputs: Mapping[str, Any],
        taken: Collection[tuple[str, str | None]] = (),
    ) -> None:
        """``outputs``: node id -> its output (``main`` and ``named`` events). A tap sees
        what the component emits: its main output, and those of its named outputs that
        ``taken`` (``(node id, output name)`` pairs other nodes read) says go somewhere
        (a route's outputs; a throttle's ``dropped`` only when wired); a tap of one
        ``output`` sees that output only, wired or not."""
        if pipeline_id not in self._by_pipeline:
            return
        for (tapped_pipeline, component_id), taps in list(self._taps.items()):
            if tapped_pipeline != pipeline_id:
                continue
            output = outputs.get(component_id)
            if output is None:
                continue
            named: Mapping[str, Any] = getattr(output, "named", {})
            everything: list[Any] | None = None
            for tap in list(taps):
                if tap.forward is not None and time.monotonic() > tap.deadline:
                    self._remove(tap)
                    continue
                if tap.output is None:
                    if everything is None:
                        everything = list(output.main)
                        for name, events in named.items():
                            if (component_id, name) in taken:
                                everything.extend(events)
                    chosen = everything
                elif tap.output in named:
                    chosen = named[tap.output]
                elif tap.output == MAIN_OUTPUT:
                    chosen = output.main
                else:
                    continue
                if not chosen:
                    continue
                tap.offer(chosen)
                if tap.forward is None:
                    continue
                if (
                    isinstance(tap, StreamTap)
                    and tap.skipped
                    and tap.forward(SKIPPED_MARK + str(tap.skipped).encode())
                ):
                    tap.skipped = 0  # told (else told with the next batch's count)
                if tap.finished():
                    self._remove(tap)

    # Taps

    def _add(self, tap: Tap | StreamTap) -> None:
        self._sweep()
        if len(self) >= MAX_TAPS:
            raise TapBusy(f"This worker already holds {MAX_TAPS} open taps; retry shortly")
        self._taps.setdefault((tap.pipeline_id, tap.component_id), set()).add(tap)
        self._by_pipeline[tap.pipeline_id] = self._by_pipeline.get(tap.pipeline_id, 0) + 1
        if tap.forward is not None:
            self._forwarding[tap.id] = tap

    def _sweep(self) -> None:
        """Drop the forwarding taps past their deadline. ``offer`` drops them too, but
        only those of a pipeline that runs: without this, taps of a quiet pipeline
        announced by other workers would fill ``MAX_TAPS`` here for good."""
        now = time.monotonic()
        for tap in [tap for tap in self._forwarding.values() if now > tap.deadline]:
            self._remove(tap)

    def _remove(self, tap: Tap | StreamTap) -> None:
        if self._forwarding.get(tap.id) is tap:
            del self._forwarding[tap.id]
        key = (tap.pipeline_id, tap.component_id)
        taps = self._taps.get(key)
        if taps is None or tap not in taps:
            return
        taps.discard(tap)
        if not taps:
            del self._taps[key]
        left = self._by_pipeline.get(tap.pipeline_id, 1) - 1
        if left <= 0:
            self._by_pipeline.pop(tap.pipeline_id, None)
        else:
            self._by_pipeline[tap.pipeline_id] = left

    async def capture(
        self,
        *,
        pipeline_id: str,
        component_id: str,
        limit: int,
        timeout_s: float,
        filter_spec: Any = None,
        output: str | None = None,
    ) -> tuple[list[Any], bool]:
        """Up to ``limit`` events passing the component within ``timeout_s``:
        ``(events, timed_out)``. ``filter_spec`` as ``compile_filter`` takes it."""
        tap = Tap(pipeline_id, component_id, limit, compile_filter(filter_spec), output=output)
        self._add(tap)
        announcement = {
            "limit": limit,
            "timeout_s": timeout_s,
            "filter": filter_spec,
            "output": output,
        }
        try:
            async with self._remote(tap, announcement):
                try:
                    async with asyncio.timeout(timeout_s):
                        await tap.done.wait()
                    timed_out = False
                except TimeoutError:
                    timed_out = True
        finally:
            self._remove(tap)
        return tap.decoded(), timed_out and tap.count < limit

    def can_stream(self, account_id: str) -> None:
        """Raises ``TapBusy`` when a stream of this account could not open here now."""
        self._sweep()
        if len(self) >= MAX_TAPS:
            raise TapBusy(f"This worker already holds {MAX_TAPS} open taps; retry shortly")
        open_here = sum(
            1
            for taps in self._taps.values()
            for tap in taps
            if isinstance(tap, StreamTap) and tap.account_id == account_id
        )
        if open_here >= MAX_STREAMS_PER_ACCOUNT:
            raise TapBusy(
                f"This account already holds {MAX_STREAMS_PER_ACCOUNT} open tap streams "
                "here; close one or retry shortly"
            )

    @contextlib.asynccontextmanager
    async def stream(
        self,
        *,
        account_id: str,
        pipeline_id: str,
        component_id: str,
        rate: int,
        filter_spec: Any = None,
        output: str | None = None,
    ) -> AsyncIterator[StreamTap]:
        """A ``StreamTap`` open while the block runs (across workers with Redis). Raises
        ``TapBusy`` as ``can_stream`` does."""
        self.can_stream(account_id)
        tap = StreamTap(
            pipeline_id,
            component_id,
            rate,
            compile_filter(filter_spec),
            output=output,
            account_id=account_id,
        )
        self._add(tap)
        if self._ending:
            tap.close()
        announcement = {
            "stream": True,
            "rate": rate,
            "timeout_s": STREAM_LEASE_S,
            "filter": filter_spec,
            "output": output,
        }
        try:
            async with self._remote(tap, announcement, renew_s=STREAM_RENEW_S):
                yield tap
        finally:
            tap.close()
            self._remove(tap)

    # Across workers

    @contextlib.asynccontextmanager
    async def _remote(
        self,
        tap: Tap | StreamTap,
        announced: dict[str, Any],
        *,
        renew_s: float | None = None,
    ) -> AsyncIterator[None]:
        """Announce the tap to every worker (again every ``renew_s``, and its end when
        renewed) and collect what they forward."""
        if self._redis is None:
            yield
            return
        redis = self._redis
        pubsub = redis.pubsub()
        tasks: list[asyncio.Task[None]] = []
        announcement = orjson.dumps(
            {
                "id": tap.id,
                "pipeline_id": tap.pipeline_id,
                "component_id": tap.component_id,
                "origin": self._origin,
                **announced,
            }
        )
        try:
            await pubsub.subscribe(self._channel(tap.id))
            await redis.publish(self.control_channel, announcement)
            tasks.append(asyncio.create_task(self._collect(pubsub, tap)))
            if renew_s is not None:
                tasks.append(asyncio.create_task(self._renew(announcement, renew_s)))
        except Exception as error:  # Redis down: this worker's events only
            log.warning("live tap without Redis fan-out: %s", error)
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            with contextlib.suppress(Exception):
                if renew_s is not None:
                    ending = {"id": tap.id, "origin": self._origin, "close": True}
                    await redis.publish(self.control_channel, orjson.dumps(ending))
                await pubsub.unsubscribe()
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _renew(self, announcement: bytes, every_s: float) -> None:
        assert self._redis is not None
        while True:
            await asyncio.sleep(every_s)
            try:
                await self._redis.publish(self.control_channel, announcement)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the lease runs on; the next renewal may reach
                log.warning("live tap stream could not renew its announcement: %s", error)

    async def _collect(self, pubsub: Any, tap: Tap | StreamTap) -> None:
        async for message in pubsub.listen():
            if message.get("type") != "message":
                continue
            data = message["data"]
            if not isinstance(data, bytes):
                continue
            if data.startswith(SKIPPED_MARK):
                if isinstance(tap, StreamTap):
                    with contextlib.suppress(ValueError):
                        tap.count_skipped(int(data[len(SKIPPED_MARK) :]))
                continue
            tap.take(data)  # the forwarding worker applied the filter

    async def _listen(self) -> None:
        """Every worker: open a forwarding tap for each announced one (but its own)."""
        assert self._redis is not None
        while True:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(self.control_channel)
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._forward_for(message["data"])
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("tap control channel: %s; reconnecting", error)
                await asyncio.sleep(1)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    def _forward_for(self, data: Any) -> None:
        tap: Tap | StreamTap
        try:
            announced = orjson.loads(data)
            if announced.get("origin") == self._origin:
                return
            tap_id = str(announced["id"])
            known = self._forwarding.get(tap_id)
            if announced.get("close"):
                if known is not None:
                    self._remove(known)
                return
            deadline = time.monotonic() + min(float(announced["timeout_s"]), 20.0)
            if known is not None:  # a stream's renewal
                known.deadline = deadline
                return
            channel = self._channel(tap_id)
            output = announced.get("output")
            output = None if output is None else str(output)
            if announced.get("stream"):
                tap = StreamTap(
                    str(announced["pipeline_id"]),
                    str(announced["component_id"]),
                    max(1, min(int(announced["rate"]), MAX_STREAM_RATE)),
                    compile_filter(announced.get("filter")),
                    output=output,
                    id=tap_id,
                    deadline=deadline,
                )
            else:
                tap = Tap(
                    str(announced["pipeline_id"]),
                    str(announced["component_id"]),
                    min(int(announced["limit"]), 100),
                    compile_filter(announced.get("filter")),
                    output=output,
                    id=tap_id,
                    deadline=deadline,
                )
        except (ValueError, KeyError, TypeError) as error:
            log.warning("ignored a malformed tap announcement: %s", error)
            return

        def forward(encoded: bytes) -> bool:
            try:
                self._outbox.put_nowait((channel, encoded))
            except asyncio.QueueFull:
                return False
            return True

        tap.forward = forward
        with contextlib.suppress(TapBusy):
            self._add(tap)

    async def _send(self) -> None:
        assert self._redis is not None
        while True:
            channel, encoded = await self._outbox.get()
            try:
                await self._redis.publish(channel, encoded)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.debug("tap forward failed: %s", error)
