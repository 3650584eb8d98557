"""The floor for bench_account_read: a bare ASGI app that answers every request with the
same JSON bytes tidegate returned, on the same server (uvicorn, uvloop, httptools)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

BODY = Path(os.environ["BENCH_BODY_FILE"]).read_bytes()
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})
