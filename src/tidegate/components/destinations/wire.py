"""What the outbound destinations (``http``, ``loki``, ``elasticsearch``,
``splunk-hec-logs``) share: the platform's ``auth`` and ``headers`` fields, gzip,
``{{ .field }}`` templates, and ``WireRequest`` (one request to send: method, URL,
headers, body), which each destination's pure encoder builds and ``OutboundSender``
(``sender.py``) sends with retries, backoff and the destination guard.

Encoders are plain functions of (config, events, now): tests compare their output, and
what a real receiver gets, byte for byte.
"""

from __future__ import annotations

import base64
import gzip
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from tidegate.logs.timestamps import epoch_ms
from tidegate.processing.fields import MISSING, FieldPath, FieldPathError, string_form

__all__ = [
    "MAX_BODY_BYTES",
    "Auth",
    "Compression",
    "Header",
    "Headers",
    "Template",
    "WireRequest",
    "auth_headers",
    "batched",
    "check_header",
    "compress",
    "event_seconds",
    "header_pairs",
    "headers_list",
    "templates",
    "unique_headers",
]

MAX_BODY_BYTES: Final = 10 * 1024 * 1024

Compression = Literal["gzip", "none"]

_HEADER_NAME: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$")
_HEADER_VALUE: Final = re.compile(r"^[^\x00-\x08\x0a-\x1f\x7f]{0,8192}$")
# Set by the client from the connection and the batch; a configured value would lie.
_RESERVED_HEADERS: Final = frozenset(
    {"content-length", "host", "transfer-encoding", "connection", "content-encoding"}
)


def check_header(name: str, value: str) -> None:
    """ValueError naming what is wrong with a configured header."""
    if not _HEADER_NAME.match(name):
        raise ValueError(f"{name!r} is not a valid HTTP header name")
    if name.lower() in _RESERVED_HEADERS:
        raise ValueError(f"header {name!r} is set by tidegate and cannot be configured")
    if not _HEADER_VALUE.match(value):
        raise ValueError(
            f"the value of header {name!r} must be at most 8192 characters "
            "without control characters"
        )


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Header(_Strict):
    """One of the platform's ``headers[{header_name, header_value}]``."""

    header_name: Annotated[str, Field(min_length=1, max_length=256)]
    header_value: Annotated[str, Field(max_length=8192)]

    @model_validator(mode="after")
    def _valid(self) -> Header:
        check_header(self.header_name, self.header_value)
        return self


class Auth(_Strict):
    """The platform's ``auth``: ``basic`` with ``user``/``password``, or ``bearer`` with
    ``token``. Sent as the ``Authorization`` header."""

    strategy: Literal["basic", "bearer", "none"] = "basic"
    user: Annotated[str, Field(max_length=1024)] = ""
    password: Annotated[str, Field(max_length=4096)] = ""
    token: Annotated[str, Field(max_length=8192)] = ""

    @model_validator(mode="after")
    def _complete(self) -> Auth:
        if self.strategy == "basic" and not self.user:
            raise ValueError("basic auth needs a user")
        if self.strategy == "bearer" and not self.token:
            raise ValueError("bearer auth needs a token")
        if self.strategy == "bearer":
            check_header("Authorization", f"Bearer {self.token}")
        return self


def auth_headers(auth: Auth | None) -> list[tuple[str, str]]:
    if auth is None or auth.strategy == "none":
        return []
    if auth.strategy == "bearer":
        return [("Authorization", f"Bearer {auth.token}")]
    pair = f"{auth.user}:{auth.password}".encode()
    return [("Authorization", "Basic " + base64.b64encode(pair).decode("ascii"))]


def compress(body: bytes, compression: Compression) -> tuple[bytes, list[tuple[str, str]]]:
    """The body as sent and the ``Content-Encoding`` header it needs. ``mtime=0`` makes
    the gzip bytes a function of the body alone."""
    if compression == "gzip":
        return gzip.compress(body, mtime=0), [("Content-Encoding", "gzip")]
    return body, []


@dataclass(frozen=True, slots=True)
class WireRequest:
    """One request a destination sends."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


_TEMPLATE_PART: Final = re.compile(r"\{\{\s*([^{}]{1,1024}?)\s*\}\}")


class Template:
    """A value with ``{{ .field }}`` parts replaced by the event's field (its text; an
    absent field renders as the empty string). Text without ``{{`` is constant."""

    __slots__ = ("_parts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        parts: list[str | Any] = []
        position = 0
        for match in _TEMPLATE_PART.finditer(text):
            parts.append(text[position : match.start()])
            try:
                parts.append(FieldPath.parse(match.group(1)).getter())
            except FieldPathError as error:
                raise ValueError(f"template {text!r}: {error}") from None
            position = match.end()
        parts.append(text[position:])
        self._parts = tuple(part for part in parts if part != "")

    @property
    def constant(self) -> bool:
        return all(isinstance(part, str) for part in self._parts)

    def render(self, event: Mapping[str, Any]) -> str:
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = part(event)
            if value is not MISSING and value is not None:
                out.append(string_form(value))
        return "".join(out)


def templates(values: Mapping[str, str]) -> dict[str, Template]:
    return {name: Template(value) for name, value in values.items()}


def event_seconds(value: Any) -> float | None:
    """An event's time field as epoch seconds (with milliseconds), by the one timestamp
    rule (``logs.timestamps``); None when it holds no time."""
    millis = epoch_ms(value)
    return None if millis is None else millis / 1000


def headers_list(value: Any) -> Any:
    """``headers`` as the platform's list of ``{header_name, header_value}``; an object
    ``{name: value}`` (tidegate's first form) is read as that list too."""
    if isinstance(value, Mapping):
        # An error then points at the header's place in that list (/headers/0).
        return [{"header_name": name, "header_value": item} for name, item in value.items()]
    return value


def unique_headers(headers: Sequence[Header]) -> Sequence[Header]:
    """ValueError when a header name is given twice (any case)."""
    seen: set[str] = set()
    for header in headers:
        folded = header.header_name.lower()
        if folded in seen:
            raise ValueError(f"header {header.header_name!r} is given twice")
        seen.add(folded)
    return headers


Headers = Annotated[
    list[Header],
    BeforeValidator(headers_list),
    AfterValidator(unique_headers),
    Field(max_length=50),
]
"""The platform's ``headers`` list (an object ``{name: value}`` is read as that list)."""


def header_pairs(headers: Sequence[Header]) -> list[tuple[str, str]]:
    return [(header.header_name, header.header_value) for header in headers]


def batched(
    chunks: Iterable[bytes],
    *,
    max_bytes: int,
    url: str,
    headers: Sequence[tuple[str, str]],
    compression: Compression,
) -> list[WireRequest]:
    """POST requests whose bodies join ``chunks`` up to ``max_bytes`` (before
    compression; a larger chunk travels alone)."""
    requests: list[WireRequest] = []
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        if parts and size + len(chunk) > max_bytes:
            requests.append(_request(parts, url, headers, compression))
            parts, size = [], 0
        parts.append(chunk)
        size += len(chunk)
    if parts:
        requests.append(_request(parts, url, headers, compression))
    return requests


def _request(
    parts: list[bytes], url: str, headers: Sequence[tuple[str, str]], compression: Compression
) -> WireRequest:
    sent, extra = compress(b"".join(parts), compression)
    return WireRequest("POST", url, (*headers, *extra), sent)
