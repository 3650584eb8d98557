"""HTTP for live tail: ``GET /v1/tail``, server-sent events of an account's lines.

Events (``text/event-stream``):
- ``event: ready`` once, when lines published from now on will arrive;
- one unnamed event (``message`` for an ``EventSource``) per line, its data the line
  record as JSON (the export's shape; ``_id`` only when the writer knew it);
- ``event: dropped`` with ``{"dropped": n}`` when this subscriber fell behind and n
  matching lines were discarded (its queue holds ``DEFAULT_MAX_QUEUED`` lines);
- a ``: heartbeat`` comment after ``HEARTBEAT_SECONDS`` without any event;
- ``event: error`` with ``{"error": "..."}`` just before the server ends the stream: the
  key was deleted or the account deactivated (re-checked in the database every
  ``tail_recheck_s`` seconds, so it works across workers and hosts), or the stream
  could not start.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.app_state import app_state
from tidegate.auth.dependencies import CurrentPrincipal
from tidegate.errors import RateLimited
from tidegate.logs import tail_repository
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.logs.tail import TailBroker, TailUnavailable, TooManySubscribers
from tidegate.views.service import apply_view

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15.0
# How often a quiet stream looks for a client that went away.
DISCONNECT_CHECK_SECONDS = 1.0
RETRY_MS = 3_000
# A re-check that cannot reach the database keeps the stream open (nothing can be
# revoked while the database is down either), but not forever.
MAX_FAILED_RECHECKS = 3

router = APIRouter(prefix="/v1/tail", tags=["Live tail"], responses=LEGACY_ERRORS)

Text = str | None


@router.get(
    "",
    summary="Stream the account's lines as they arrive (server-sent events)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "An event stream"}},
)
async def tail_lines(
    request: Request,
    principal: CurrentPrincipal,
    hosts: Annotated[Text, Query(description="Comma list of hosts")] = None,
    apps: Annotated[Text, Query(description="Comma list of apps")] = None,
    levels: Annotated[Text, Query(description="Comma list of levels")] = None,
    query: Annotated[Text, Query(description="A search query (the platform syntax)")] = None,
    view_id: Annotated[
        Text,
        Query(
            alias="viewID",
            description="A view's id: its query is ANDed with `query`; its hosts, apps and "
            "levels apply where the request gives none",
        ),
    ] = None,
) -> StreamingResponse:
    account_id = principal.account()
    async with app_state(request).db.read_sessions() as session:
        search = await apply_view(
            session=session,
            account_id=account_id,
            view_id=view_id,
            query=query,
            hosts=hosts,
            apps=apps,
            levels=levels,
        )
    line_filter = parse_line_filter(
        hosts=search.hosts,
        apps=search.apps,
        levels=search.levels,
        query=search.query,
        tags=search.tags,
    )
    broker = app_state(request).tail
    if broker.subscriber_count(account_id) >= broker.max_subscribers_per_account:
        raise RateLimited(
            "Too many live tail streams for this account", headers={"Retry-After": "10"}
        )
    return StreamingResponse(
        _events(
            request=request,
            broker=broker,
            credential=_Credential(request=request, key_id=principal.key_id, account_id=account_id),
            line_filter=line_filter,
        ),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _event(data: Any, *, name: str | None = None) -> str:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n"


class _Credential:
    """The stream's key, re-checked in the database every ``tail_recheck_s`` seconds."""

    def __init__(self, *, request: Request, key_id: str, account_id: str) -> None:
        state = app_state(request)
        self._sessions = state.db.read_sessions
        self._interval = state.settings.tail_recheck_s
        self.key_id = key_id
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
                reason = await tail_repository.revoked_reason(
                    session=session, key_id=self.key_id, account_id=self.account_id
                )
        except Exception:  # the database is unreachable: try again at the next check
            self._failures += 1
            log.warning("live tail could not re-check key %s", self.key_id, exc_info=True)
            if self._failures >= MAX_FAILED_RECHECKS:
                return "Live tail could not re-check its credentials, reconnect"
            return None
        self._failures = 0
        return reason


async def _events(
    *, request: Request, broker: TailBroker, credential: _Credential, line_filter: LineFilter
) -> AsyncIterator[str]:
    try:
        async with broker.subscribe(credential.account_id, line_filter) as subscription:
            yield f"retry: {RETRY_MS}\n" + _event({}, name="ready")
            quiet_since = time.monotonic()
            while not subscription.closed:
                # Before anything more is sent: a revoked key reads nothing further.
                reason = await credential.revoked()
                if reason is not None:
                    yield _event({"error": reason}, name="error")
                    return
                batch = await subscription.next_batch(timeout=DISCONNECT_CHECK_SECONDS)
                parts: list[str] = []
                if batch.dropped:
                    parts.append(_event({"dropped": batch.dropped}, name="dropped"))
                parts.extend(_event(item.record()) for item in batch.lines)
                now = time.monotonic()
                if parts:
                    yield "".join(parts)
                    quiet_since = now
                elif now - quiet_since >= HEARTBEAT_SECONDS:
                    yield ": heartbeat\n\n"
                    quiet_since = now
                if not batch.lines and await request.is_disconnected():
                    return
    except TooManySubscribers:
        yield _event({"error": "Too many live tail streams for this account"}, name="error")
    except TailUnavailable:
        yield _event({"error": "Live tail is unavailable, try again"}, name="error")
