"""The HTTP/1.1 protocol tidegate serves with: uvicorn's httptools protocol (uvloop and
httptools speed), plus what it lacks at the connection level:

- a size limit on the request line plus headers (``TIDEGATE_MAX_HEADER_BYTES``): httptools
  gathers a header in memory until it ends, so the bytes are counted as they arrive
  and a request whose headers do not end within the limit gets a 431;
- a time limit to complete them (``TIDEGATE_HEADER_TIMEOUT_S``), which also closes a
  connection that never sends a byte;
- errors in the family's JSON shape instead of uvicorn's plain-text 400;
- a bound on how long a connection may go on sending a body nobody reads (a request
  answered before its body was read, e.g. a 401): the rest is discarded as it comes,
  for at most the body timeout;
- the access-log filter that keeps credentials given in the query string out of logs.

Body limits, the body read timeout and the per-worker byte budget are in
``body_guard``, at the ASGI level, where the request's path and handler are known.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import re
from functools import cache
from typing import Any
from urllib.parse import unquote_plus

import httptools
import orjson
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from tidegate.api.error_handlers import family_of
from tidegate.config import Settings
from tidegate.errors import ApiError, BadRequest, HeadersTooLarge, RequestTimeout

PROTOCOL = "tidegate.api.http_server:TidegateHttpProtocol"
# After an error answer the connection is half-closed and whatever the client still
# sends is read and dropped for this long, so that it sees the answer rather than a
# reset (closing a socket with unread data makes the kernel send RST).
_LINGER_S = 2.0


@cache
def _limits() -> tuple[int, float, float]:
    settings = Settings.from_env()
    return settings.max_header_bytes, settings.header_timeout_s, settings.body_timeout_s


class TidegateHttpProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_header_bytes, self.header_timeout_s, self.body_timeout_s = _limits()
        self._reading_headers = True
        self._header_bytes = 0
        self._header_tail = b""
        self._header_timer: asyncio.TimerHandle | None = None
        self._linger_timer: asyncio.TimerHandle | None = None
        self._discarding = False

    # Connection events

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            return
        self._unset_keepalive_if_required()
        if self._reading_headers:
            self._arm_header_timer()
            room = self.max_header_bytes - self._header_bytes
            if len(data) > room:
                window = self._header_tail + data[: max(room, 0)]
                if b"\r\n\r\n" not in window and b"\n\n" not in window:
                    self.logger.warning("Request headers over %d bytes.", self.max_header_bytes)
                    self._answer_and_close(
                        HeadersTooLarge(
                            f"Request line and headers exceed {self.max_header_bytes} bytes"
                        )
                    )
                    return
            self._header_bytes += len(data)
            self._header_tail = data[-3:]
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.logger.warning("Invalid HTTP request received.")
            self._answer_and_close(BadRequest("Invalid HTTP request received."))
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()

    def send_400_response(self, msg: str) -> None:
        self._answer_and_close(BadRequest(msg))

    # Parser callbacks

    def on_headers_complete(self) -> None:
        self._reading_headers = False
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading_headers = True
        self._header_bytes = 0
        self._header_tail = b""
        if self._linger_timer is not None:
            # The client finished the body nobody read: the connection may carry on.
            self._linger_timer.cancel()
            self._linger_timer = None

    def on_response_complete(self) -> None:
        cycle = self.cycle
        super().on_response_complete()
        if cycle is not None and cycle.more_body and not self.transport.is_closing():
            # Answered before its body was read (a 401, a 413): the rest is dropped as it
            # arrives (uvicorn ignores body after the response), but not forever.
            self._linger_timer = self.loop.call_later(self.body_timeout_s, self._close)

    # Helpers

    def _arm_header_timer(self) -> None:
        if self._header_timer is None and self.header_timeout_s > 0:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timeout)

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        if self._header_bytes == 0:
            self._close()  # never said anything: nobody to answer
            return
        self.logger.warning("Request headers not complete in %gs.", self.header_timeout_s)
        self._answer_and_close(
            RequestTimeout(
                f"Request line and headers not complete within {self.header_timeout_s:g} seconds"
            )
        )

    def _answer_and_close(self, error: ApiError) -> None:
        """Answer in the family's JSON shape, then half-close and drop what follows."""
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and cycle.response_started and not cycle.response_complete:
            # Mid-answer (a bad chunk while the handler streams): no room for another one.
            cycle.disconnected = True
            self.transport.close()
            return
        url = getattr(self, "url", b"")
        path = url.split(b"?", 1)[0].decode("latin-1")
        body = orjson.dumps(error.v3_body() if family_of(path) == "v3" else error.legacy_body())
        content = [STATUS_LINE[error.status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                body,
            ]
        )
        self.transport.write(b"".join(content))
        self._discarding = True
        self._cancel_timers()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self._linger_timer = self.loop.call_later(_LINGER_S, self._close)
        else:  # pragma: no cover - TLS transports cannot half-close
            self.transport.close()

    def _close(self) -> None:
        self._linger_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def _cancel_timers(self) -> None:
        for timer in (self._header_timer, self._linger_timer):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._linger_timer = None


# Access log: query parameters that carry credentials, by their decoded name (``hmac``:
# logdna-cli's signature, good for a few minutes until used).
CREDENTIAL_PARAMS = frozenset(
    {"apikey", "api_key", "servicekey", "service_key", "key", "token", "access_token", "hmac"}
)
_QUERY_PARAM = re.compile(r"([?&])([^&=#]*)=([^&#]*)")


def redact_credentials(target: str) -> str:
    """A request target with the values of credential parameters replaced."""
    if "?" not in target:
        return target

    def replace(match: re.Match[str]) -> str:
        if unquote_plus(match.group(2)).strip().lower() in CREDENTIAL_PARAMS:
            return f"{match.group(1)}{match.group(2)}=REDACTED"
        return match.group(0)

    head, _, query = target.partition("?")
    return head + _QUERY_PARAM.sub(replace, "?" + query)


class RedactCredentials(logging.Filter):
    """Replaces credential query values in uvicorn's access log lines (the request
    target is one of the record's arguments)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_credentials(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        elif isinstance(record.msg, str):
            record.msg = redact_credentials(record.msg)
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's logging configuration with the credential filter on the access log and
    the error log (given to uvicorn, so every worker process installs it)."""
    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_credentials"] = {"()": f"{__name__}.RedactCredentials"}
    config["handlers"]["access"]["filters"] = ["redact_credentials"]
    # WebSocket handshakes are logged on the error log ('"WebSocket /ws/tail?..."
    # [accepted]'), with their query, which may hold a service key.
    config["handlers"]["default"]["filters"] = ["redact_credentials"]
    return config
