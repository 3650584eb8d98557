"""Live tail: fan an account's lines out to its subscribers as they arrive.

Writers (ingestion, the pipeline's log_analysis destination) call
``await broker.publish(account_id, lines)`` after their transaction commits, with the
lines they stored and the ``indexonly`` lines they did not store. ``publish`` never
blocks on a subscriber and never raises: a live-tail problem must not fail ingestion.

Readers hold a ``Subscription`` (``async with broker.subscribe(...)``): a bounded queue
of the lines that pass its ``LineFilter``. When a subscriber falls behind, its oldest
queued lines are dropped and counted; the next batch it takes says how many.

``TailBroker`` fans out inside one process. ``RedisTailBroker`` (with
``TIDEGATE_REDIS_URL``) publishes every batch on the account's Redis channel and fans
out what it receives, so a subscriber on one worker or host sees lines ingested on any
other. Without Redis, a subscriber only sees lines ingested by its own worker process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import PubSub

from tidegate.config import DEFAULT_REDIS_PREFIX
from tidegate.logs.filtering import LineFilter
from tidegate.logs.read_queries import LineRow
from tidegate.logs.record import public_record
from tidegate.logs.store import NewLine
from tidegate.shutdown import close_step, stop_task

logger = logging.getLogger(__name__)

# After the deployment's Redis prefix (TIDEGATE_REDIS_PREFIX): an account's channel is
# ``<prefix>tail:<account id>``.
CHANNEL_PART = "tail:"
# Subscribed from the start so the pub/sub connection always exists.
_CONTROL_PART = "_control"
DEFAULT_MAX_QUEUED = 1_000
DEFAULT_MAX_SUBSCRIBERS_PER_ACCOUNT = 32
_LINES_PER_MESSAGE = 1_000


@dataclass(frozen=True, slots=True)
class TailLine:
    """One line as live tail carries it. ``indexonly`` lines were never stored, so they
    have no ``line_id``; stored lines have theirs (the writer learns them as it writes:
    ``StoreBatch.ids``)."""

    line: str
    ts: int
    host: str
    app: str | None = None
    level: str | None = None
    env: str | None = None
    file: str | None = None
    ip: str | None = None
    mac: str | None = None
    tags: tuple[str, ...] | None = None
    meta: Mapping[str, Any] | None = None
    indexonly: bool = False
    line_id: int | None = None
    meta_unindexed: Mapping[str, Any] | None = None

    @classmethod
    def from_new_line(
        cls, new: NewLine, *, indexonly: bool = False, line_id: int | None = None
    ) -> TailLine:
        return cls(
            line=new.line,
            ts=new.ts,
            host=new.host,
            app=new.app,
            level=new.level,
            env=new.env,
            file=new.file,
            ip=new.ip,
            mac=new.mac,
            tags=tuple(new.tags) if new.tags is not None else None,
            meta=new.meta,
            indexonly=indexonly,
            line_id=line_id,
            meta_unindexed=new.meta_unindexed,
        )

    @classmethod
    def from_row(cls, row: LineRow) -> TailLine:
        """A stored line as the store reads it back (live tail's replay of what a
        stream missed)."""
        tags = row.tags()
        return cls(
            line=row.line, ts=row.ts, host=row.host, app=row.app, level=row.level,
            env=row.env, file=row.file, ip=row.ip, mac=row.mac,
            tags=tuple(tags) if tags is not None else None, meta=row.meta(),
            line_id=row.id, meta_unindexed=row.meta_unindexed(),
        )  # fmt: skip

    def record(self) -> dict[str, Any]:
        """The public shape (the same as an export line)."""
        return public_record(
            line=self.line,
            ts=self.ts,
            host=self.host,
            app=self.app,
            level=self.level,
            env=self.env,
            file=self.file,
            ip=self.ip,
            mac=self.mac,
            tags=self.tags,
            meta=self.meta,
            line_id=self.line_id,
            meta_unindexed=self.meta_unindexed,
        )

    def selected_by(self, line_filter: LineFilter) -> bool:
        return line_filter.matches(
            line=self.line,
            host=self.host,
            app=self.app,
            level=self.level,
            file=self.file,
            meta=self.meta,
            tags=self.tags,
        )

    def to_wire(self) -> list[Any]:
        return [
            self.line, self.ts, self.host, self.app, self.level, self.env, self.file,
            self.ip, self.mac, list(self.tags) if self.tags is not None else None,
            self.meta, self.indexonly, self.line_id, self.meta_unindexed,
        ]  # fmt: skip

    @classmethod
    def from_wire(cls, item: Sequence[Any]) -> TailLine:
        line, ts, host, app, level, env, file, ip, mac, tags, meta, indexonly, line_id = item[:13]
        # A worker of the previous release publishes 13 items.
        unindexed = item[13] if len(item) > 13 else None
        return cls(
            line=line, ts=ts, host=host, app=app, level=level, env=env, file=file,
            ip=ip, mac=mac, tags=tuple(tags) if tags is not None else None, meta=meta,
            indexonly=bool(indexonly), line_id=line_id, meta_unindexed=unindexed,
        )  # fmt: skip


def as_tail_lines(lines: Sequence[TailLine | NewLine]) -> list[TailLine]:
    """``NewLine`` objects (stored lines) are accepted as they are."""
    return [item if isinstance(item, TailLine) else TailLine.from_new_line(item) for item in lines]


@dataclass(frozen=True, slots=True)
class TailBatch:
    lines: list[TailLine]
    dropped: int
    """Lines that matched but were dropped since the previous batch (queue full)."""


class TooManySubscribers(Exception):
    """The account already has as many live-tail subscribers as this process allows."""


class TailUnavailable(Exception):
    """Live tail cannot start now (Redis does not answer)."""


class Subscription:
    """One reader's bounded queue. Filled by the broker, drained by the reader."""

    def __init__(self, account_id: str, line_filter: LineFilter, max_queued: int) -> None:
        self.account_id = account_id
        self.line_filter = line_filter
        self.max_queued = max_queued
        self.closed = False
        self._queue: deque[TailLine] = deque()
        self._dropped = 0
        self._wakeup = asyncio.Event()

    def offer(self, lines: Sequence[TailLine]) -> None:
        """Queue the lines that pass the filter; never blocks, never grows past the
        bound (the oldest queued lines make room and are counted as dropped)."""
        select = self.line_filter
        queued = False
        for item in lines:
            if select.selects_everything or item.selected_by(select):
                if len(self._queue) >= self.max_queued:
                    self._queue.popleft()
                    self._dropped += 1
                self._queue.append(item)
                queued = True
        if queued:
            self._wakeup.set()

    def close(self) -> None:
        self.closed = True
        self._wakeup.set()

    async def next_batch(self, *, timeout: float, max_lines: int = 500) -> TailBatch:
        """Up to ``max_lines`` queued lines, waiting at most ``timeout`` seconds for the
        first; an empty batch means nothing arrived (or the broker closed)."""
        if not self._queue and not self.closed:
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)
        count = min(len(self._queue), max_lines)
        lines = [self._queue.popleft() for _ in range(count)]
        dropped, self._dropped = self._dropped, 0
        return TailBatch(lines=lines, dropped=dropped)


class TailBroker:
    """In-process fan-out: a line reaches the subscribers of this process only."""

    def __init__(
        self,
        *,
        max_queued: int = DEFAULT_MAX_QUEUED,
        max_subscribers_per_account: int = DEFAULT_MAX_SUBSCRIBERS_PER_ACCOUNT,
    ) -> None:
        self.max_queued = max_queued
        self.max_subscribers_per_account = max_subscribers_per_account
        self._subscribers: defaultdict[str, set[Subscription]] = defaultdict(set)
        self._ending = False

    @property
    def spans_processes(self) -> bool:
        return False

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        self.end_streams()
        self._subscribers.clear()

    def end_streams(self) -> None:
        """End every stream (the server is stopping): each reader's next batch comes at
        once, empty, and its stream ends. A subscription made after this ends at once."""
        self._ending = True
        for subscriptions in self._subscribers.values():
            for subscription in subscriptions:
                subscription.close()

    def subscriber_count(self, account_id: str) -> int:
        return len(self._subscribers.get(account_id, ()))

    async def listened(self, account_ids: Collection[str]) -> set[str]:
        """Which of the accounts have a live-tail subscriber now (here; with Redis, in
        any process). A subscriber that joins after this answer and before the lines
        are published gets them without their ids (``TailLine.id`` ``None``), as one
        that joins while a write is in flight always has."""
        return {account_id for account_id in account_ids if self.subscriber_count(account_id)}

    async def publish(self, account_id: str, lines: Sequence[TailLine | NewLine]) -> None:
        """Hand ``lines`` (already committed, or ``indexonly``) to the account's
        subscribers. Never blocks on a subscriber and never raises."""
        if lines and account_id in self._subscribers:
            self._fan_out(account_id, as_tail_lines(lines))

    def _fan_out(self, account_id: str, lines: Sequence[TailLine]) -> None:
        for subscription in tuple(self._subscribers.get(account_id, ())):
            try:
                subscription.offer(lines)
            except Exception:  # a filter bug must not stop the other subscribers
                logger.exception("live tail: a subscriber's filter failed")

    @contextlib.asynccontextmanager
    async def subscribe(
        self, account_id: str, line_filter: LineFilter
    ) -> AsyncIterator[Subscription]:
        """Lines published after this returns reach the subscription (across
        processes too, with Redis: it returns once the channel is subscribed)."""
        if self.subscriber_count(account_id) >= self.max_subscribers_per_account:
            raise TooManySubscribers(account_id)
        subscription = Subscription(account_id, line_filter, self.max_queued)
        if self._ending:
            subscription.close()
        self._subscribers[account_id].add(subscription)
        try:
            await self._on_first_subscriber(account_id)
            yield subscription
        finally:
            subscription.close()
            subscribers = self._subscribers.get(account_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[account_id]
                    self._on_last_subscriber_left(account_id)

    async def _on_first_subscriber(self, account_id: str) -> None:
        return None

    def _on_last_subscriber_left(self, account_id: str) -> None:
        return None


# RedisTailBroker.listened: how long a write waits for Redis to say who tails, and how
# long it then takes the ids without asking.
LISTENED_TIMEOUT_S = 0.25
LISTENED_RETRY_S = 5.0


class RedisTailBroker(TailBroker):
    """Fan-out across processes and hosts through Redis pub/sub, one channel per
    account. Each process subscribes to the channel of an account only while it has a
    local subscriber for it, so lines travel only to where someone is watching.

    Delivery is at most once: lines published while Redis is unreachable are lost for
    other processes (this process's own subscribers still get them)."""

    def __init__(
        self,
        redis: Redis,
        *,
        redis_prefix: str = DEFAULT_REDIS_PREFIX,
        max_queued: int = DEFAULT_MAX_QUEUED,
        max_subscribers_per_account: int = DEFAULT_MAX_SUBSCRIBERS_PER_ACCOUNT,
        poll_seconds: float = 0.05,
        subscribe_timeout: float = 5.0,
        close_timeout: float = 5.0,
    ) -> None:
        super().__init__(
            max_queued=max_queued, max_subscribers_per_account=max_subscribers_per_account
        )
        self._redis = redis
        self.channel_prefix = redis_prefix + CHANNEL_PART
        self._control_channel = self.channel_prefix + _CONTROL_PART
        self._poll_seconds = poll_seconds
        self.subscribe_timeout = subscribe_timeout
        self.close_timeout = close_timeout
        self._pubsub: PubSub | None = None
        self._reader: asyncio.Task[None] | None = None
        # Channels confirmed subscribed, and readers waiting for a confirmation.
        self._requested: set[str] = set()
        self._subscribed: set[str] = set()
        self._waiting: defaultdict[str, list[asyncio.Future[None]]] = defaultdict(list)
        self._changed = False
        # Set by close(): the reader checks it every loop. Cancelling alone is not
        # enough: get_message can swallow the cancel (shutdown.py).
        self._stopping = asyncio.Event()
        # listened(): when Redis may be asked again after it failed to answer.
        self._ask_again_at = 0.0

    @property
    def spans_processes(self) -> bool:
        return True

    async def start(self) -> None:
        # Redis being down at startup must not stop the server: the reader subscribes
        # (and keeps retrying) in the background.
        self._stopping.clear()
        self._pubsub = self._redis.pubsub()
        self._reader = asyncio.create_task(self._read(), name="tidegate-tail-reader")

    async def close(self) -> None:
        self._stopping.set()
        if self._reader is not None:
            # The flag stops the reader within one poll even if the cancel is lost.
            await stop_task(self._reader, "live tail reader", timeout_s=self.close_timeout)
            self._reader = None
        for futures in self._waiting.values():
            for future in futures:
                if not future.done():
                    future.cancel()
        self._waiting.clear()
        if self._pubsub is not None:
            await close_step(
                "live tail pub/sub connection",
                self._pubsub.aclose,
                timeout_s=self.close_timeout,
            )
            self._pubsub = None
        await super().close()

    async def publish(self, account_id: str, lines: Sequence[TailLine | NewLine]) -> None:
        if not lines:
            return
        tail_lines = as_tail_lines(lines)
        channel = self.channel_prefix + account_id
        try:
            for start in range(0, len(tail_lines), _LINES_PER_MESSAGE):
                chunk = tail_lines[start : start + _LINES_PER_MESSAGE]
                payload = json.dumps([item.to_wire() for item in chunk], separators=(",", ":"))
                await self._redis.publish(channel, payload)
        except Exception:
            logger.warning("live tail: Redis publish failed; local subscribers only")
            self._fan_out(account_id, tail_lines)

    async def listened(self, account_ids: Collection[str]) -> set[str]:
        here = await super().listened(account_ids)
        elsewhere = [account_id for account_id in account_ids if account_id not in here]
        if not elsewhere:
            return here
        # Asked before a write commits, so a Redis that does not answer must not hold up
        # ingestion: a short bound, and after a failure no asking for a while. Unknown
        # is as if listened (the cost is only the ids taken for nothing).
        if time.monotonic() < self._ask_again_at:
            return set(account_ids)
        try:
            async with asyncio.timeout(LISTENED_TIMEOUT_S):
                # One round trip: every process subscribes to an account's channel while
                # it has a subscriber for it (_sync_requested), and only then.
                counts = await self._redis.pubsub_numsub(
                    *(self.channel_prefix + account_id for account_id in elsewhere)
                )
        except Exception:
            self._ask_again_at = time.monotonic() + LISTENED_RETRY_S
            return set(account_ids)
        prefix = len(self.channel_prefix)
        return here | {
            (channel.decode() if isinstance(channel, bytes) else channel)[prefix:]
            for channel, count in counts
            if count
        }

    async def _on_first_subscriber(self, account_id: str) -> None:
        channel = self.channel_prefix + account_id
        if channel in self._subscribed:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[channel].append(future)
        self._changed = True
        try:
            await asyncio.wait_for(future, self.subscribe_timeout)
        except TimeoutError:
            raise TailUnavailable("Redis did not confirm the subscription") from None

    def _on_last_subscriber_left(self, account_id: str) -> None:
        self._changed = True

    async def _read(self) -> None:
        pubsub = self._pubsub
        assert pubsub is not None
        while not self._stopping.is_set():
            try:
                if not pubsub.subscribed:
                    await pubsub.subscribe(self._control_channel)
                if self._changed:
                    await self._sync_requested(pubsub)
                message = await pubsub.get_message(timeout=self._poll_seconds)
                if message is not None:
                    self._handle(message)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("live tail: Redis pub/sub failed; retrying", exc_info=True)
                # Subscribe every wanted channel again once Redis answers (a repeated
                # SUBSCRIBE is harmless and confirms again).
                self._requested.clear()
                self._subscribed.clear()
                self._changed = True
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), 1.0)

    async def _sync_requested(self, pubsub: PubSub) -> None:
        self._changed = False
        wanted = {self.channel_prefix + account_id for account_id in self._subscribers}
        to_add = wanted - self._requested
        to_drop = self._requested - wanted
        if to_drop:
            self._requested -= to_drop
            self._subscribed -= to_drop
            await pubsub.unsubscribe(*to_drop)
        if to_add:
            self._requested |= to_add
            await pubsub.subscribe(*to_add)

    def _handle(self, message: Mapping[str, Any]) -> None:
        kind = message.get("type")
        channel = _text(message.get("channel"))
        if kind == "subscribe":
            if channel in self._requested:
                self._subscribed.add(channel)
            for future in self._waiting.pop(channel, []):
                if not future.done():
                    future.set_result(None)
            return
        if kind != "message" or not channel.startswith(self.channel_prefix):
            return
        account_id = channel.removeprefix(self.channel_prefix)
        if account_id not in self._subscribers:
            return
        try:
            lines = [TailLine.from_wire(item) for item in json.loads(message["data"])]
        except (ValueError, TypeError, KeyError):
            logger.warning("live tail: ignoring a malformed message on %s", channel)
            return
        self._fan_out(account_id, lines)


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return str(value) if value is not None else ""


def create_tail_broker(redis: Redis | None, *, redis_prefix: str) -> TailBroker:
    if redis is None:
        return TailBroker()
    return RedisTailBroker(redis, redis_prefix=redis_prefix)
