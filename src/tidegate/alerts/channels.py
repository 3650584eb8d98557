"""Alert channels as the platform's clients send and read them.

The Terraform provider sends ``immediate`` and ``terminal`` as the strings ``"true"`` /
``"false"``, ``bodyTemplate`` as a JSON object, unset lists as ``[]`` and unset
strings as ``""``; it reads ``bodyTemplate`` back as a string of JSON. Every form is
accepted here and stored in one canonical shape (``Channel``), which is what the
evaluator and the deliveries use and what reads render.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import zoneinfo
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from tidegate.alerts.intervals import canonical_interval

Integration = Literal["email", "webhook", "slack", "pagerduty"]
MAX_CHANNELS = 20
MAX_EMAILS = 50
MAX_HEADERS = 50
MAX_TEMPLATE_BYTES = 64 * 1024
MAX_TEMPLATE_DEPTH = 16
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$")
# Deliberately plain: one @, no whitespace, no control characters (header injection).
_EMAIL = re.compile(r"^[^@\s\x00-\x1f\x7f,;<>]{1,64}@[^@\s\x00-\x1f\x7f,;<>]{1,255}$")
_FORBIDDEN_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})


def _flag(value: Any) -> Any:
    """``true``/``false`` as JSON booleans or as the provider's strings; ``""`` is
    false."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("", "false"):
            return False
        if text == "true":
            return True
    if value is None:
        return False
    return value


def _empty_is_none(value: Any) -> Any:
    return None if value == "" or value == 0 else value


def empty_text_is_none(value: Any) -> Any:
    """The provider sends an unset string as ``""``."""
    return None if value == "" else value


def none_is_empty(value: Any) -> Any:
    """An unset list may come as ``null``."""
    return [] if value is None else value


Flag = Annotated[bool, BeforeValidator(_flag)]


def _storable(value: Any, depth: int = 0) -> None:
    if depth > MAX_TEMPLATE_DEPTH:
        raise ValueError(f"may nest at most {MAX_TEMPLATE_DEPTH} levels")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("may not contain NaN or infinite numbers")
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("may not contain NUL characters")
        value.encode("utf-8")
    elif isinstance(value, dict):
        for key, item in value.items():
            _storable(key, depth + 1)
            _storable(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _storable(item, depth + 1)


class ChannelIn(BaseModel):
    """One channel of a request body (views and preset alerts)."""

    model_config = ConfigDict(extra="forbid")

    integration: Integration
    alertid: str | None = Field(default=None, description="Read-only: accepted and ignored")
    emails: list[str] | str | None = None
    immediate: Flag = False
    operator: Annotated[Literal["presence", "absence"] | None, BeforeValidator(_empty_is_none)] = (
        None
    )
    terminal: Flag = False
    triggerinterval: str | int | None = None
    triggerlimit: int | None = None
    timezone: str | None = None
    key: str | None = Field(default=None, max_length=256)
    url: str | None = Field(default=None, max_length=2048)
    method: str | None = None
    headers: dict[str, str] | None = None
    bodyTemplate: dict[str, Any] | str | None = None
    autoresolve: Flag = False
    autoresolveinterval: str | int | None = None
    autoresolvelimit: int | None = None

    @field_validator("emails")
    @classmethod
    def _emails(cls, value: list[str] | str | None) -> list[str] | str | None:
        items = _email_list(value)
        if len(items) > MAX_EMAILS:
            raise ValueError(f"at most {MAX_EMAILS} addresses")
        for item in items:
            if not _EMAIL.match(item):
                raise ValueError(f"{item!r} is not an e-mail address")
        return items

    @field_validator("triggerinterval", "autoresolveinterval")
    @classmethod
    def _interval(cls, value: str | int | None) -> str | None:
        if value is None or value == "":
            return None
        text = canonical_interval(value)
        if text is None:
            raise ValueError("must be one of 30, 1m, 5m, 15m, 30m, 1h, 6h, 12h, 24h")
        return text

    @field_validator("triggerlimit", "autoresolvelimit")
    @classmethod
    def _limit(cls, value: int | None) -> int | None:
        if value is None or value == 0:
            return None
        if not 1 <= value <= 100_000:
            raise ValueError("must be between 1 and 100000")
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        if not value:
            return None
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not a known time zone") from None
        return value

    @field_validator("method")
    @classmethod
    def _method(cls, value: str | None) -> str | None:
        if not value:
            return None
        # Kept as sent (the platform answers "post" for "post"; Terraform would otherwise
        # plan a change forever); requests go out upper-cased (``Channel.http_method``).
        method = value.strip()
        if method.upper() not in METHODS:
            raise ValueError(f"must be one of {', '.join(METHODS)}")
        return method

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if not value:
            return None
        if len(value) > MAX_HEADERS:
            raise ValueError(f"at most {MAX_HEADERS} headers")
        for name, text in value.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a header name")
            if name.lower() in _FORBIDDEN_HEADERS:
                raise ValueError(f"{name!r} is set by the server")
            if any(ch in text for ch in "\r\n\x00") or len(text) > 8192:
                raise ValueError(f"the value of {name!r} is not a header value")
        return value

    @field_validator("bodyTemplate")
    @classmethod
    def _template(cls, value: dict[str, Any] | str | None) -> dict[str, Any] | None:
        if value is None or value == "":
            return None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError("must be a JSON object (or its text)") from None
            if not isinstance(value, dict):
                raise ValueError("must be a JSON object")
        _storable(value)
        if len(json.dumps(value)) > MAX_TEMPLATE_BYTES:
            raise ValueError(f"must be at most {MAX_TEMPLATE_BYTES} bytes of JSON")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if not value:
            return None
        if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise ValueError("must not contain whitespace or control characters")
        return value

    @field_validator("key")
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        """Sent only inside a JSON body, so any printable text (the provider's own
        examples hold spaces)."""
        if not value or not value.strip():
            return None
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise ValueError("must not contain control characters")
        return value


def _email_list(value: list[str] | str | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # the platform answers a comma list on some reads
        return [item.strip() for item in value.split(",") if item.strip()]
    return [item.strip() for item in value if item.strip()]


@dataclass(slots=True)
class Channel:
    """A channel in its canonical, stored form."""

    integration: str
    operator: str
    triggerinterval: str
    triggerlimit: int
    immediate: bool = False
    terminal: bool = False
    timezone: str = ""
    emails: list[str] = field(default_factory=list)
    key: str = ""
    url: str = ""
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)
    body_template: dict[str, Any] | None = None
    autoresolve: bool = False
    autoresolveinterval: str = ""
    autoresolvelimit: int = 0

    def stored(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def http_method(self) -> str:
        """The webhook's method as HTTP spells it (``method`` is kept as it was sent)."""
        return self.method.upper()

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> Channel:
        return cls(**data)

    @property
    def fires_at_end(self) -> bool:
        """Presence: at the end of the interval (``terminal``, or not ``immediate``)."""
        return self.terminal or not self.immediate

    def key_text(self, position: int, source: str) -> str:
        """Names this channel and its settings: state kept under another key (the
        channel changed) is not carried over."""
        digest = hashlib.sha256(json.dumps(self.stored(), sort_keys=True).encode()).hexdigest()[:40]
        return f"{source}{position}:{digest}"

    def wire(self, position: int) -> dict[str, Any]:
        """The read shape (what the provider's channelResponse decodes)."""
        body: dict[str, Any] = {
            "alertid": str(position),
            "integration": self.integration,
            "operator": self.operator,
            "triggerinterval": self.triggerinterval,
            "triggerlimit": self.triggerlimit,
            "immediate": self.immediate,
            "terminal": self.terminal,
            "timezone": self.timezone,
        }
        if self.integration == "email":
            body["emails"] = list(self.emails)
        if self.integration == "pagerduty":
            body["key"] = self.key
        if self.integration in ("slack", "webhook"):
            body["url"] = self.url
        if self.integration == "webhook":
            body["method"] = self.method
            body["headers"] = dict(self.headers)
            body["bodyTemplate"] = (
                json.dumps(self.body_template) if self.body_template is not None else ""
            )
        body["autoresolve"] = self.autoresolve
        body["autoresolveinterval"] = self.autoresolveinterval
        body["autoresolvelimit"] = self.autoresolvelimit
        return body


DEFAULT_INTERVAL = {"presence": "30", "absence": "15m"}


def canonical_channel(body: ChannelIn, *, where: str) -> Channel:
    """The stored form of ``body``; ``ValueError`` naming ``where`` and the field when
    it lacks what its integration needs."""
    operator = body.operator or "presence"
    if body.triggerlimit is None:
        raise ValueError(f"{where}.triggerlimit: required, between 1 and 100000")
    emails = _email_list(body.emails)
    integration = body.integration
    if integration == "email" and not emails:
        raise ValueError(f"{where}.emails: an email channel needs at least one address")
    if integration == "pagerduty" and not body.key:
        raise ValueError(f"{where}.key: a pagerduty channel needs its routing key")
    if integration in ("slack", "webhook") and not body.url:
        raise ValueError(f"{where}.url: a {integration} channel needs a url")
    if integration != "webhook" and (body.headers or body.bodyTemplate or body.method):
        raise ValueError(f"{where}: headers, method and bodyTemplate are for webhooks only")
    interval = str(body.triggerinterval or DEFAULT_INTERVAL[operator])
    resolve_interval = ""
    resolve_limit = 0
    if body.autoresolve:
        resolve_interval = str(body.autoresolveinterval or interval)
        resolve_limit = body.autoresolvelimit or 1
    template = body.bodyTemplate if isinstance(body.bodyTemplate, dict) else None
    return Channel(
        integration=integration,
        operator=operator,
        triggerinterval=interval,
        triggerlimit=body.triggerlimit,
        immediate=body.immediate,
        terminal=body.terminal,
        timezone=body.timezone or "",
        emails=emails,
        key=body.key or "",
        url=body.url or "",
        method=body.method or "POST",
        headers=dict(body.headers or {}),
        body_template=template,
        autoresolve=body.autoresolve,
        autoresolveinterval=resolve_interval,
        autoresolvelimit=resolve_limit,
    )


Channels = Annotated[list[ChannelIn], Field(max_length=MAX_CHANNELS)]
