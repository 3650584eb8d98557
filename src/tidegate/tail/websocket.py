"""The platform's live tail over WebSocket: ``/ws/tail``, as ``logdna-cli`` and ``mzm``
open it (docs/export-and-tail.md, "Live tail over WebSocket").

Query: ``q`` (the search syntax), ``hosts``, ``apps``, ``levels``, ``tags`` (comma
lists; empty means all). Credentials: whatever the management API accepts
(``Authorization: Token`` as mzm sends it, the ``servicekey`` header, ...) and the
``servicekey`` query parameter, read by the same resolver, which also counts the
connection once against the rate limit.

Every text frame is one JSON object ``{"e": ..., "p": ...}``:
- ``{"e": "p", "p": [line, ...]}``: lines, each the export's record (``_ts``, ``_host``,
  ``_app``, ``level``, ``_line``, ...);
- ``{"e": "meta", "p": {"type": ...}}``: everything else, which the CLIs ignore:
  ``ready`` once after the handshake, ``heartbeat`` after ``HEARTBEAT_SECONDS`` of
  quiet, ``dropped`` (``"dropped": n``) when this reader fell behind and n matching lines
  were discarded, ``error`` (``"error": text``) just before the server closes.

Refused before the handshake completes: an HTTP answer with the legacy error body (401
missing or bad credentials, 403 wrong kind of key, 400 bad query, 429 too many streams
or rate limited, 503 tail unavailable), as the CLIs read it ("401" in the error means
"log in again"). Closed after it: 1008 (policy violation) when the credential is
revoked or the client does not read its frames, 1013 (try again later) when the stream
cannot go on, 1001 (going away) when the server shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import orjson
from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect, WebSocketState

from tidegate.api.error_handlers import render
from tidegate.app_state import app_state
from tidegate.auth.dependencies import accept_query_key, principal_of
from tidegate.auth.roles import Permission
from tidegate.auth.scope import AccessScope, scoped_query
from tidegate.errors import ApiError, RateLimited, ServiceUnavailable
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.logs.tail import TailUnavailable, TooManySubscribers
from tidegate.tail.service import (
    TOO_MANY_STREAMS,
    UNAVAILABLE,
    Heartbeat,
    Lines,
    Ready,
    Revoked,
    TailCredential,
    stream_events,
)

log = logging.getLogger(__name__)

PATH = "/ws/tail"
POLICY_VIOLATION = 1008
TRY_AGAIN_LATER = 1013
GOING_AWAY = 1001
# A frame the client has not taken within this time (the socket's write buffer stayed
# full) ends the connection: a reader that stopped reading is dropped, not buffered for.
SEND_TIMEOUT_SECONDS = 30.0
# Clients only ever send pings (answered by the server) or nothing; anything else they
# send is read and discarded, at most this many bytes a message (the server's limit).
_OFFERED_SUBPROTOCOL = "json"

router = APIRouter(tags=["Live tail"])


@router.websocket(PATH, name="tail_socket")
async def tail_socket(websocket: WebSocket) -> None:
    """Stream the account's lines as they arrive, in the platform's ``{e, p}`` frames."""
    state = app_state(websocket)
    try:
        accept_query_key(websocket)
        principal = await principal_of(websocket)
        principal.require(Permission.READ)
        account_id = principal.account()
        line_filter = socket_filter(
            websocket.query_params, account_id=account_id, scope=principal.scope
        )
        broker = state.tail
        if broker.subscriber_count(account_id) >= broker.max_subscribers_per_account:
            raise RateLimited(TOO_MANY_STREAMS, headers={"Retry-After": "10"})
    except ApiError as error:
        await _refuse(websocket, error)
        return
    credential = TailCredential(state=state, principal=principal, account_id=account_id)
    client = _Incoming(websocket)
    try:
        async for event in stream_events(
            broker=broker,
            credential=credential,
            line_filter=line_filter,
            gone=client.gone,
        ):
            if isinstance(event, Ready):
                await websocket.accept(subprotocol=_subprotocol(websocket))
                client.start()
                await _send(websocket, _meta("ready"))
            elif isinstance(event, Lines):
                if event.dropped:
                    await _send(websocket, _meta("dropped", dropped=event.dropped))
                if event.lines:
                    await _send(websocket, {"e": "p", "p": [item.record() for item in event.lines]})
            elif isinstance(event, Heartbeat):
                await _send(websocket, _meta("heartbeat"))
            elif isinstance(event, Revoked):
                await _close(websocket, POLICY_VIOLATION, event.reason)
                return
        if not await client.gone():
            # The broker closed the subscription: the server is shutting down.
            await _close(websocket, GOING_AWAY, "The server is shutting down")
    except TooManySubscribers:
        await _refuse(websocket, RateLimited(TOO_MANY_STREAMS, headers={"Retry-After": "10"}))
    except TailUnavailable:
        await _refuse(websocket, ServiceUnavailable(UNAVAILABLE))
    except _ClientTooSlow:
        await _close(websocket, POLICY_VIOLATION, "The client did not read its frames in time")
    except (WebSocketDisconnect, OSError, RuntimeError):
        # The client went away while a frame was being sent (RuntimeError: sent after
        # the close); nothing is left to tell it.
        pass
    finally:
        await client.stop()


def socket_filter(
    params: Mapping[str, str], *, account_id: str, scope: AccessScope | None
) -> LineFilter:
    """The stream's filter from its query: ``q`` (``query`` also accepted, as on
    ``/v1/tail``) and the comma lists, within a person's groups' ``scope``
    (docs/people.md, "Groups"); a ``BadRequest`` naming the parameter otherwise."""
    return parse_line_filter(
        hosts=params.get("hosts"),
        apps=params.get("apps"),
        levels=params.get("levels"),
        tags=params.get("tags"),
        query=scoped_query(params.get("q") or params.get("query"), scope),
        account_id=account_id,
    )


class _ClientTooSlow(Exception):
    pass


def _meta(kind: str, **fields: Any) -> dict[str, Any]:
    return {"e": "meta", "p": {"type": kind, **fields}}


def _subprotocol(websocket: WebSocket) -> str | None:
    offered = websocket.scope.get("subprotocols") or []
    return _OFFERED_SUBPROTOCOL if _OFFERED_SUBPROTOCOL in offered else None


async def _send(websocket: WebSocket, frame: dict[str, Any]) -> None:
    text = orjson.dumps(frame).decode()
    try:
        await asyncio.wait_for(websocket.send_text(text), SEND_TIMEOUT_SECONDS)
    except TimeoutError:
        raise _ClientTooSlow from None


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    """Say why (a ``meta`` error frame, for clients that show frames), then close."""
    if websocket.application_state != WebSocketState.CONNECTED:
        return
    with contextlib.suppress(Exception):
        await asyncio.wait_for(
            websocket.send_text(orjson.dumps(_meta("error", error=reason)).decode()),
            SEND_TIMEOUT_SECONDS,
        )
        # A close reason is at most 123 bytes.
        await asyncio.wait_for(
            websocket.close(code, reason.encode()[:123].decode(errors="ignore")),
            SEND_TIMEOUT_SECONDS,
        )


async def _refuse(websocket: WebSocket, error: ApiError) -> None:
    """Before the handshake: an HTTP answer with the legacy error body where the server
    can send one (uvicorn can), else a close, which the server turns into a 403."""
    if websocket.application_state != WebSocketState.CONNECTING:
        await _close(websocket, TRY_AGAIN_LATER, error.message)
        return
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(render(error, PATH))
    else:
        await websocket.close(POLICY_VIOLATION, error.message[:123])


class _Incoming:
    """Reads (and drops) what the client sends until it disconnects: the stream learns
    of the disconnect from this reader ending."""

    def __init__(self, websocket: WebSocket) -> None:
        self._websocket = websocket
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._discard())

    async def gone(self) -> bool:
        return self._task is not None and self._task.done()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _discard(self) -> None:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):
            while True:
                message = await self._websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
