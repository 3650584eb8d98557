"""Pure ASGI middleware that refuses oversized bodies and non-JSON bodies on the
JSON APIs before any handler or parser sees them."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tidegate.api.error_handlers import render
from tidegate.errors import ApiError, PayloadTooLarge, UnsupportedMediaType

INGEST_MAX_BYTES = 10 * 1024 * 1024
_BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
_JSON_API_PREFIXES = ("/v1/", "/v2/", "/v3/")


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


class BodyGuard:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        limit = (
            INGEST_MAX_BYTES if path.startswith(("/logs/", "/gateway/")) else self.max_body_bytes
        )
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        length_header = headers.get("content-length")
        declared = int(length_header) if length_header and length_header.isdigit() else None
        if declared is not None and declared > limit:
            await self._refuse(
                PayloadTooLarge(f"Request body exceeds {limit} bytes"), scope, receive, send
            )
            return
        has_body = (declared or 0) > 0 or "transfer-encoding" in headers
        if (
            has_body
            and path.startswith(_JSON_API_PREFIXES)
            and not _is_json(headers.get("content-type", ""))
        ):
            await self._refuse(UnsupportedMediaType(context="headers"), scope, receive, send)
            return
        # Count what actually arrives too: a chunked or lying client is held to the same limit.
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body.extend(message.get("body", b""))
            more = message.get("more_body", False)
            if len(body) > limit:
                await self._refuse(
                    PayloadTooLarge(f"Request body exceeds {limit} bytes"), scope, receive, send
                )
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(error: ApiError, scope: Scope, receive: Receive, send: Send) -> None:
        response = render(error, scope["path"])
        await response(scope, receive, send)
