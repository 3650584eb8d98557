"""HTTP for live tail: ``GET /v1/tail``, server-sent events of an account's lines.

Events (``text/event-stream``):
- ``event: ready`` once, when lines published from now on will arrive;
- one unnamed event (``message`` for an ``EventSource``) per line, its data the line
  record as JSON (the export's shape; ``_id`` for every stored line: published after
  its commit, so ``/v1/export/context`` finds it at once; an indexonly line has none);
- ``event: dropped`` with ``{"dropped": n}`` when this subscriber fell behind and n
  matching lines were discarded (its queue holds ``DEFAULT_MAX_QUEUED`` lines);
- a ``: heartbeat`` comment after ``tail.service.HEARTBEAT_SECONDS`` without any event;
- ``event: error`` with ``{"error": "..."}`` just before the server ends the stream: the
  key was deleted or the account deactivated (re-checked in the database every
  ``tail_recheck_s`` seconds, so it works across workers and hosts), or the stream
  could not start.

A stored line's event carries its id (``id:``), so a client that reconnects (an
``EventSource`` does by itself) sends the last one as ``Last-Event-ID``; the stream then
gives it the lines stored since, those its filters select, before the live ones
(``tail.service.stored_since``: the last ten minutes at most).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.app_state import AppState, app_state
from tidegate.auth.dependencies import CurrentPrincipal
from tidegate.auth.scope import scoped_query
from tidegate.clock import now_ms
from tidegate.errors import RateLimited
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.logs.reading import run_off_loop
from tidegate.logs.record import parse_line_id
from tidegate.logs.tail import TailBroker, TailLine, TailUnavailable, TooManySubscribers
from tidegate.tail.service import (
    TOO_MANY_STREAMS,
    UNAVAILABLE,
    Heartbeat,
    Lines,
    Ready,
    Revoked,
    TailCredential,
    stored_since,
    stream_events,
)
from tidegate.views.service import apply_view

RETRY_MS = 3_000

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
    tags: Annotated[Text, Query(description="Comma list of tags (any of them)")] = None,
    last_event_id: Annotated[
        Text,
        Header(
            alias="Last-Event-ID",
            description="The id of the last line a stream had (its event's `id`, as an "
            "EventSource sends it when it reconnects): the lines stored since, as far back "
            "as ten minutes, come first. Anything that is not a line's id is ignored",
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
            tags=tags,
        )
    line_filter = parse_line_filter(
        hosts=search.hosts,
        apps=search.apps,
        levels=search.levels,
        # A person in groups sees only their scope (docs/people.md, "Groups").
        query=scoped_query(search.query, principal.scope),
        tags=search.tags,
        account_id=account_id,
    )
    state = app_state(request)
    broker = state.tail
    if broker.subscriber_count(account_id) >= broker.max_subscribers_per_account:
        raise RateLimited(TOO_MANY_STREAMS, headers={"Retry-After": "10"})
    # Reconnecting: the id of the last line it had (an id not a line's is ignored).
    after_id = parse_line_id(last_event_id)
    return StreamingResponse(
        _events(
            request=request,
            broker=broker,
            credential=TailCredential(state=state, principal=principal, account_id=account_id),
            line_filter=line_filter,
            missed=None
            if after_id is None
            else _missed(state, account_id=account_id, after_id=after_id, line_filter=line_filter),
        ),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _missed(
    state: AppState, *, account_id: str, after_id: int, line_filter: LineFilter
) -> Callable[[], Awaitable[list[TailLine]]]:
    """What a stream reopened after ``after_id`` missed, read off the loop when asked."""

    async def missed() -> list[TailLine]:
        at = now_ms()
        async with state.db.read_sessions() as session:
            return await run_off_loop(
                database=state.db,
                session=session,
                account_id=account_id,
                page=lambda reader: stored_since(
                    reader,
                    account_id=account_id,
                    after_id=after_id,
                    now_ms=at,
                    line_filter=line_filter,
                ),
            )

    return missed


def _event(data: Any, *, name: str | None = None, event_id: int | None = None) -> str:
    head = f"event: {name}\n" if name else ""
    if event_id is not None:
        head += f"id: {event_id}\n"
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n"


async def _events(
    *,
    request: Request,
    broker: TailBroker,
    credential: TailCredential,
    line_filter: LineFilter,
    missed: Callable[[], Awaitable[list[TailLine]]] | None,
) -> AsyncIterator[str]:
    try:
        async for event in stream_events(
            broker=broker,
            credential=credential,
            line_filter=line_filter,
            gone=request.is_disconnected,
            missed=missed,
        ):
            if isinstance(event, Lines):
                parts: list[str] = []
                if event.dropped:
                    parts.append(_event({"dropped": event.dropped}, name="dropped"))
                parts.extend(_event(item.record(), event_id=item.line_id) for item in event.lines)
                yield "".join(parts)
            elif isinstance(event, Heartbeat):
                yield ": heartbeat\n\n"
            elif isinstance(event, Ready):
                yield f"retry: {RETRY_MS}\n" + _event({}, name="ready")
            elif isinstance(event, Revoked):
                yield _event({"error": event.reason}, name="error")
    except TooManySubscribers:
        yield _event({"error": TOO_MANY_STREAMS}, name="error")
    except TailUnavailable:
        yield _event({"error": UNAVAILABLE}, name="error")
