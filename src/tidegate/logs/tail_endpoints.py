"""HTTP for live tail: ``GET /v1/tail``, server-sent events of an account's lines.

Events (``text/event-stream``):
- ``event: ready`` once, when lines published from now on will arrive;
- one unnamed event (``message`` for an ``EventSource``) per line, its data the line
  record as JSON (the export's shape; ``_id`` only when the writer knew it);
- ``event: dropped`` with ``{"dropped": n}`` when this subscriber fell behind and n
  matching lines were discarded (its queue holds ``DEFAULT_MAX_QUEUED`` lines);
- a ``: heartbeat`` comment after ``HEARTBEAT_SECONDS`` without any event.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId
from tidegate.errors import RateLimited
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.logs.tail import TailBroker, TailUnavailable, TooManySubscribers

HEARTBEAT_SECONDS = 15.0
# How often a quiet stream looks for a client that went away.
DISCONNECT_CHECK_SECONDS = 1.0
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
    account_id: AccountId,
    hosts: Annotated[Text, Query(description="Comma list of hosts")] = None,
    apps: Annotated[Text, Query(description="Comma list of apps")] = None,
    levels: Annotated[Text, Query(description="Comma list of levels")] = None,
    query: Annotated[Text, Query(description="A search query (the platform syntax)")] = None,
) -> StreamingResponse:
    line_filter = parse_line_filter(hosts=hosts, apps=apps, levels=levels, query=query)
    broker = app_state(request).tail
    if broker.subscriber_count(account_id) >= broker.max_subscribers_per_account:
        raise RateLimited(
            "Too many live tail streams for this account", headers={"Retry-After": "10"}
        )
    return StreamingResponse(
        _events(request=request, broker=broker, account_id=account_id, line_filter=line_filter),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _event(data: Any, *, name: str | None = None) -> str:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n"


async def _events(
    *, request: Request, broker: TailBroker, account_id: str, line_filter: LineFilter
) -> AsyncIterator[str]:
    try:
        async with broker.subscribe(account_id, line_filter) as subscription:
            yield f"retry: {RETRY_MS}\n" + _event({}, name="ready")
            quiet_since = time.monotonic()
            while not subscription.closed:
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
