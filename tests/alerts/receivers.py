"""Real receivers started by the tests: an HTTP/1.1 server on 127.0.0.1 (on the
test's loop) and an SMTP server (aiosmtpd, in its own thread)."""

from __future__ import annotations

import asyncio
import email
import email.policy
import json
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

from tests.smtp import LoopbackSmtp


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class HttpReceiver:
    """Answers each request with the next status of ``script`` (the last repeats)."""

    def __init__(self, script: list[int] | None = None) -> None:
        self.script = script or [200]
        self.requests: list[Request] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> HttpReceiver:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                method, path, _ = head[0].split(" ", 2)
                headers = {}
                for line in head[1:]:
                    name, _, value = line.partition(":")
                    if name:
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status = self.script[min(len(self.requests), len(self.script) - 1)]
                self.requests.append(Request(method, path, headers, body))
                writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n".encode())
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


class _Mailbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], EmailMessage]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 OK"


class SmtpReceiver:
    def __init__(self) -> None:
        self.mailbox = _Mailbox()
        self._controller = LoopbackSmtp(self.mailbox)
        self.port = self._controller.bound_port

    def __enter__(self) -> SmtpReceiver:
        self._controller.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._controller.stop()

    @property
    def messages(self) -> list[tuple[str, list[str], EmailMessage]]:
        return self.mailbox.messages


class ThreadedReceiver:
    """An HTTP receiver in a thread of its own, for tests that block (live servers,
    the official logging handler)."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.requests: list[Request] = []
        lock = threading.Condition()
        self._arrived = lock
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _record(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                with lock:
                    owner.requests.append(
                        Request(
                            self.command,
                            self.path,
                            {name.lower(): value for name, value in self.headers.items()},
                            body,
                        )
                    )
                    lock.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_PUT = do_GET = _record

            def log_message(self, *_: Any) -> None:
                return None

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ThreadedReceiver:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def on(self, path: str) -> list[Request]:
        return [request for request in list(self.requests) if request.path == path]

    def wait_for(self, path: str, *, timeout: float) -> list[Request]:
        """The requests to ``path`` once there is one (woken by each arrival; a generous
        deadline, not a timing)."""
        with self._arrived:
            self._arrived.wait_for(lambda: bool(self.on(path)), timeout=timeout)
        return self.on(path)
