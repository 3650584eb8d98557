"""Live tap: a short look at the events passing one component of a running pipeline.

A tap is a bounded buffer (at most ``limit`` events and ``MAX_TAP_BYTES`` of their JSON)
registered under ``(pipeline_id, component_id)``. After each batch runs, the runtime
offers every tapped component's output; nothing is stored anywhere. The request waits
until the buffer is full or its timeout passes, then the tap is gone.

Across workers (``TIDEGATE_REDIS_URL`` set) a tap is announced on a Redis channel;
every worker keeps a forwarding tap for it until its deadline and publishes what it
captures to the tap's own channel, which the tapping worker reads. Without Redis a tap
sees the events of its own worker only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from redis.asyncio import Redis

from tidegate.config import DEFAULT_REDIS_PREFIX
from tidegate.processing.conditions import compile_condition

log = logging.getLogger("tidegate.runtime")

__all__ = ["MAX_TAPS", "MAX_TAP_BYTES", "Tap", "TapBusy", "TapRegistry", "compile_filter"]

Event = dict[str, Any]
Predicate = Callable[[Any, bytes], bool]
"""``(event, its JSON)`` -> whether the tap keeps it."""

MAX_TAPS: Final = 64  # open taps per worker (local and forwarding ones together)
MAX_TAP_BYTES: Final = 1024 * 1024  # JSON of the events one tap holds
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


class TapBusy(Exception):
    """The worker already holds ``MAX_TAPS`` open taps."""


@dataclass(slots=True, eq=False)
class Tap:
    pipeline_id: str
    component_id: str
    limit: int
    predicate: Predicate | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    deadline: float = 0.0  # time.monotonic() after which a forwarding tap is dropped
    events: list[bytes] = field(default_factory=list)
    count: int = 0
    size: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    forward: Callable[[bytes], None] | None = None  # set on another worker's behalf

    def offer(self, events: Iterable[Event]) -> None:
        for event in events:
            if self.done.is_set():
                return
            try:
                encoded = orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS)
                if self.predicate is not None and not self.predicate(event, encoded):
                    continue
            except (TypeError, ValueError) as error:  # one odd event never fails the run
                log.debug("tap skipped an event: %s", error)
                continue
            self.take(encoded)

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


class TapRegistry:
    """One worker's open taps. ``offer`` costs one dict lookup when none is open."""

    def __init__(
        self, redis: Redis | None = None, *, redis_prefix: str = DEFAULT_REDIS_PREFIX
    ) -> None:
        self._redis = redis
        self._channel_prefix = redis_prefix + CHANNEL_PART
        self.control_channel = self._channel_prefix + "control"
        self._origin = uuid.uuid4().hex
        self._taps: dict[tuple[str, str], set[Tap]] = {}
        self._by_pipeline: dict[str, int] = {}
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

    async def close(self) -> None:
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
        (a route's outputs; a throttle's ``dropped`` only when wired)."""
        if pipeline_id not in self._by_pipeline:
            return
        for (tapped_pipeline, component_id), taps in list(self._taps.items()):
            if tapped_pipeline != pipeline_id:
                continue
            output = outputs.get(component_id)
            if output is None:
                continue
            emitted = list(output.main)
            for name, events in getattr(output, "named", {}).items():
                if (component_id, name) in taken:
                    emitted.extend(events)
            if not emitted:
                continue
            for tap in list(taps):
                if tap.forward is not None and time.monotonic() > tap.deadline:
                    self._remove(tap)
                    continue
                tap.offer(emitted)
                if tap.forward is not None and tap.done.is_set():
                    self._remove(tap)

    # Taps

    def _add(self, tap: Tap) -> None:
        if len(self) >= MAX_TAPS:
            raise TapBusy(f"This worker already holds {MAX_TAPS} open taps; retry shortly")
        self._taps.setdefault((tap.pipeline_id, tap.component_id), set()).add(tap)
        self._by_pipeline[tap.pipeline_id] = self._by_pipeline.get(tap.pipeline_id, 0) + 1

    def _remove(self, tap: Tap) -> None:
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
    ) -> tuple[list[Any], bool]:
        """Up to ``limit`` events passing the component within ``timeout_s``:
        ``(events, timed_out)``. ``filter_spec`` as ``compile_filter`` takes it."""
        tap = Tap(pipeline_id, component_id, limit, compile_filter(filter_spec))
        self._add(tap)
        try:
            async with self._remote(tap, timeout_s, filter_spec):
                try:
                    async with asyncio.timeout(timeout_s):
                        await tap.done.wait()
                    timed_out = False
                except TimeoutError:
                    timed_out = True
        finally:
            self._remove(tap)
        return tap.decoded(), timed_out and tap.count < limit

    # Across workers

    @contextlib.asynccontextmanager
    async def _remote(self, tap: Tap, timeout_s: float, filter_spec: Any) -> AsyncIterator[None]:
        """Announce the tap to every worker and collect what they forward."""
        if self._redis is None:
            yield
            return
        pubsub = self._redis.pubsub()
        reader: asyncio.Task[None] | None = None
        try:
            await pubsub.subscribe(self._channel(tap.id))
            announcement = {
                "id": tap.id,
                "pipeline_id": tap.pipeline_id,
                "component_id": tap.component_id,
                "limit": tap.limit,
                "timeout_s": timeout_s,
                "filter": filter_spec,
                "origin": self._origin,
            }
            await self._redis.publish(self.control_channel, orjson.dumps(announcement))
            reader = asyncio.create_task(self._collect(pubsub, tap))
        except Exception as error:  # Redis down: this worker's events only
            log.warning("live tap without Redis fan-out: %s", error)
        try:
            yield
        finally:
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
            with contextlib.suppress(Exception):
                await pubsub.unsubscribe()
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _collect(self, pubsub: Any, tap: Tap) -> None:
        async for message in pubsub.listen():
            if message.get("type") != "message":
                continue
            data = message["data"]
            if isinstance(data, bytes):
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
        try:
            announced = orjson.loads(data)
            if announced.get("origin") == self._origin:
                return
            channel = self._channel(str(announced["id"]))
            tap = Tap(
                str(announced["pipeline_id"]),
                str(announced["component_id"]),
                min(int(announced["limit"]), 100),
                compile_filter(announced.get("filter")),
                deadline=time.monotonic() + min(float(announced["timeout_s"]), 20.0),
            )
        except (ValueError, KeyError, TypeError) as error:
            log.warning("ignored a malformed tap announcement: %s", error)
            return

        def forward(encoded: bytes) -> None:
            with contextlib.suppress(asyncio.QueueFull):
                self._outbox.put_nowait((channel, encoded))

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
