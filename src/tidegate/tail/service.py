"""One live-tail stream, whatever carries it: server-sent events (``GET /v1/tail``) and
the platform's WebSocket (``/ws/tail``) both run ``stream_events`` and only encode its
events differently.

A stream is authenticated once, when it opens, then re-checks its credential in the
database every ``tail_recheck_s`` seconds (so a key deleted, an account deactivated, a
key's maker removed or a person's groups' scope changed through any worker or host ends
it), reads its bounded ``Subscription`` in batches, and says so when the subscription
had to drop lines or when it has been quiet for a while.

A stream opened again after a break can first be given what it missed: the stored lines
after the last one it had (``stored_since``, by id; SSE's ``Last-Event-ID``), then the
live ones without those.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import closing
from dataclasses import dataclass

from tidegate.app_state import AppState
from tidegate.auth import repository as auth_repository
from tidegate.auth.principal import Principal
from tidegate.auth.roles import MINIMUM_ROLE, Permission, Role
from tidegate.logs import read_queries
from tidegate.logs.filtering import LineFilter
from tidegate.logs.reading import PageReader
from tidegate.logs.tail import TailBroker, TailLine
from tidegate.tail import repository

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15.0
# How often a quiet stream looks for a client that went away.
DISCONNECT_CHECK_SECONDS = 1.0
# A re-check that cannot reach the database keeps the stream open (nothing can be
# revoked while the database is down either), but not forever.
MAX_FAILED_RECHECKS = 3
# What a stream opened again is given of what it missed: the lines stored after the
# last one it had, received in the last REPLAY_WINDOW_MS, the newest REPLAY_SCAN of them
# read, the newest REPLAY_MAX_LINES of those the stream's filter selects.
REPLAY_WINDOW_MS = 10 * 60_000
REPLAY_SCAN = 2_000
REPLAY_MAX_LINES = 1_000
TOO_MANY_STREAMS = "Too many live tail streams for this account"
UNAVAILABLE = "Live tail is unavailable, try again"


class TailCredential:
    """The stream's credential (a key, a person's membership, a browser session),
    re-checked in the database every ``tail_recheck_s`` seconds. ``needs``: the
    permission the stream was opened with; a person (or a key's maker) whose role no
    longer grants it ends the stream (a pipeline's live tap is an admin's)."""

    def __init__(
        self,
        *,
        state: AppState,
        principal: Principal,
        account_id: str,
        needs: Permission = Permission.READ,
    ) -> None:
        self._db = state.db
        self._least_role = MINIMUM_ROLE[needs]
        self._sessions = state.db.read_sessions
        self._interval = state.settings.tail_recheck_s
        self.principal = principal
        self.account_id = account_id
        self._checked_at = time.monotonic()
        self._failures = 0

    async def revoked(self) -> str | None:
        """Why the stream must end now, or None (also while the next check is not due)."""
        now = time.monotonic()
        if now - self._checked_at < self._interval:
            return None
        self._checked_at = now
        try:
            async with self._sessions() as session:
                reason = await repository.principal_revoked_reason(
                    session=session, principal=self.principal, account_id=self.account_id
                )
            if reason is None:
                reason = await self._person_changed()
        except Exception:  # the database is unreachable: try again at the next check
            self._failures += 1
            log.warning("live tail could not re-check its credential", exc_info=True)
            if self._failures >= MAX_FAILED_RECHECKS:
                return "Live tail could not re-check its credentials, reconnect"
            return None
        self._failures = 0
        return reason

    async def _person_changed(self) -> str | None:
        """A person's (or a key maker's) scope as the stream opened with it no longer
        holds: the stream's filter was built from it (docs/isolation.md)."""
        person = self.principal.person_id
        if person is None:
            return None
        if self.principal.maker_id is not None or self._least_role > Role.READONLY:
            member = await auth_repository.member(
                db=self._db, user_id=person, account_id=self.account_id
            )
            if member is None or member.role is None:
                return repository.MAKER_LEFT if self.principal.maker_id else repository.LEFT
            if Role.parse(member.role) < self._least_role:
                return repository.ROLE_LOWERED
        scope = await auth_repository.access_scope(
            db=self._db, user_id=person, account_id=self.account_id
        )
        return None if scope == self.principal.scope else repository.SCOPE_CHANGED


@dataclass(frozen=True, slots=True)
class Ready:
    """Lines published from now on reach the stream."""


@dataclass(frozen=True, slots=True)
class Lines:
    lines: list[TailLine]
    dropped: int
    """Matching lines discarded since the previous batch (the reader fell behind)."""


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Nothing for ``HEARTBEAT_SECONDS``: lets proxies and clients see the stream alive."""


@dataclass(frozen=True, slots=True)
class Revoked:
    """The credential may no longer read the account: the last event of the stream."""

    reason: str


TailEvent = Ready | Lines | Heartbeat | Revoked


def stored_since(
    reader: PageReader, *, account_id: str, after_id: int, now_ms: int, line_filter: LineFilter
) -> list[TailLine]:
    """The account's stored lines after ``after_id`` that ``line_filter`` selects,
    oldest first, within the REPLAY bounds above. Ids are taken as the order the lines
    were stored in: on PostgreSQL a line whose id was handed out before ``after_id`` but
    committed after it is not among them (docs/export-and-tail.md, "Missed lines")."""
    statement = read_queries.received_after(
        account_id=account_id,
        after_id=after_id,
        since_ms=now_ms - REPLAY_WINDOW_MS,
        limit=REPLAY_SCAN,
    )
    with closing(reader.rows(statement)) as rows:
        found = [line for line in map(TailLine.from_row, rows) if line.selected_by(line_filter)]
    return found[:REPLAY_MAX_LINES][::-1]


class Replayed:
    """The ids of the lines a stream was given from the store, so that the same lines
    arriving live are not given twice."""

    def __init__(self, lines: list[TailLine]) -> None:
        self._ids = {line.line_id for line in lines if line.line_id is not None}

    def fresh(self, lines: list[TailLine]) -> list[TailLine]:
        if not self._ids:
            return lines
        return [line for line in lines if line.line_id not in self._ids]


async def stream_events(
    *,
    broker: TailBroker,
    credential: TailCredential,
    line_filter: LineFilter,
    gone: Callable[[], Awaitable[bool]],
    missed: Callable[[], Awaitable[list[TailLine]]] | None = None,
) -> AsyncIterator[TailEvent]:
    """The events of one stream until the client is ``gone()``, the credential is
    revoked (a ``Revoked`` event ends it) or the broker closes (server shutdown).
    ``missed``: the stored lines the stream missed (``stored_since``), asked once the
    subscription is open, so that no line falls between them and the live ones.

    Raises ``TooManySubscribers`` or ``TailUnavailable`` (from ``broker.subscribe``)
    before the first event when the stream cannot start."""
    async with broker.subscribe(credential.account_id, line_filter) as subscription:
        yield Ready()
        replayed = Replayed([])
        if missed is not None:
            try:
                caught_up = await missed()
            except Exception:  # the database, or the read's budget: the stream goes on live
                log.warning("live tail could not read the lines a stream missed", exc_info=True)
                caught_up = []
            replayed = Replayed(caught_up)
            if caught_up:
                yield Lines(caught_up, 0)
        quiet_since = time.monotonic()
        while not subscription.closed:
            # Before anything more is sent: a revoked key reads nothing further.
            reason = await credential.revoked()
            if reason is not None:
                yield Revoked(reason)
                return
            batch = await subscription.next_batch(timeout=DISCONNECT_CHECK_SECONDS)
            now = time.monotonic()
            lines = replayed.fresh(batch.lines)
            if lines or batch.dropped:
                yield Lines(lines, batch.dropped)
                quiet_since = now
            elif now - quiet_since >= HEARTBEAT_SECONDS:
                yield Heartbeat()
                quiet_since = now
            if not batch.lines and await gone():
                return
