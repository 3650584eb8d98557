"""Ingestion: credentials, the platform's line objects as ``NewLine`` records. Usage
reports. No HTTP. Exclusion rules, storage, usage and live tail are the one writer of
lines' (``logs.intake``), shared with the pipeline's log store.

Ingestion manages its own two short sessions instead of the request's session
dependency: credentials and rules are read through the read engine, and the write
transaction (on SQLite, BEGIN IMMEDIATE: the database's one write lock) is opened
only around the insert (the group-commit writer), after parsing and rule evaluation,
and committed before the caller answers. Holding the write lock while parsing a 10 MB body would serialise all
ingestion behind the slowest client.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import orjson

from tidegate import json_codec
from tidegate.auth.secrets import INGESTION_DOMAIN, hash_secret
from tidegate.clock import now_ms
from tidegate.errors import BadRequest, Forbidden
from tidegate.ingest import repository
from tidegate.ingest.decoding import (
    MAX_DECODED_BYTES,
    bad_request,
    body_lines,
    decode_content,
)
from tidegate.logs.exclusion import RuleSet
from tidegate.logs.intake import JudgedLines, LineIntake, judge_lines
from tidegate.logs.store import NewLine, utc_day
from tidegate.logs.timestamps import clock_skew, epoch_ms, in_range, time_from

INACTIVE = "Account not found or inactive"
SUSPENDED = "Ingestion is suspended for this account"
SYSLOG_DISABLED = "Syslog is not enabled for this account"
_MAX_HOST = 256
_MAX_ADDRESS = 64
_MAX_TAGS = 100
_MAX_TAG = 256


def utc_today() -> date:
    return utc_day(now_ms())


@dataclass(frozen=True, slots=True)
class IngestParams:
    hostname: str
    mac: str | None = None
    ip: str | None = None
    now: int | None = None
    tags: tuple[str, ...] = ()


def _storable(text: str) -> str:
    # PostgreSQL cannot store NUL; a logger cannot fix its lines, so replace, not refuse.
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def _optional(text: str | None) -> str | None:
    return None if text is None else _storable(text)


def _address(value: str | None) -> str | None:
    stripped = (value or "").strip()
    return _storable(stripped) if stripped else None


def check_params(
    *,
    hostname: str | None,
    mac: str | None,
    ip: str | None,
    now: str | None,
    tags: Sequence[str],
) -> IngestParams:
    host = (hostname or "").strip()
    if not host:
        raise BadRequest("Missing param hostname.")
    if len(host) > _MAX_HOST:
        raise bad_request(f"hostname: at most {_MAX_HOST} characters.")
    for name, value in (("mac", mac), ("ip", ip)):
        if value is not None and len(value) > _MAX_ADDRESS:
            raise bad_request(f"{name}: at most {_MAX_ADDRESS} characters.")
    now_value: int | None = None
    if now and now.strip():
        # ASCII digits only: str.isdigit() also takes "²", which int() then refuses.
        text = now.strip()
        now_value = epoch_ms(text) if text.isascii() and text.isdigit() else None
        if now_value is None:
            raise bad_request("now: an epoch time in seconds or milliseconds.")
    split = tuple(_storable(tag.strip()) for raw in tags for tag in raw.split(",") if tag.strip())
    if len(split) > _MAX_TAGS or any(len(tag) > _MAX_TAG for tag in split):
        raise bad_request(f"tags: at most {_MAX_TAGS} tags of {_MAX_TAG} characters.")
    return IngestParams(
        hostname=_storable(host),
        mac=_address(mac),
        ip=_address(ip),
        now=now_value,
        tags=split,
    )


async def account_for_key(
    *, intake: LineIntake, key: str, syslog: bool = False
) -> tuple[str, RuleSet]:
    """The account an ingestion key writes to and its active exclusion rules. An unknown
    or deleted key, a key of another kind, a deactivated account and an account whose
    ingestion is suspended are all 403; for ``syslog`` lines, an account without
    ``enable_syslog`` too."""
    found = await repository.ingestion_key(
        db=intake.db, key_hash=hash_secret(key, domain=INGESTION_DOMAIN)
    )
    if (
        found is None
        or found.kind != "ingestion"
        or found.account_id is None
        or found.account_status == "deactivated"
    ):
        raise Forbidden(INACTIVE)
    if found.suspended:
        # Refused like an inactive account (clients give up on 403 rather than retry):
        # nothing is read, stored, counted or tailed. docs/ingest.md
        raise Forbidden(SUSPENDED)
    if syslog and not found.syslog_enabled:
        raise Forbidden(SYSLOG_DISABLED)
    rules = await intake.rules_for(
        found.account_id,
        fingerprint=(
            found.rule_count,
            found.rules_updated,
            found.template_count,
            found.templates_updated,
        ),
    )
    return found.account_id, rules


_APP, _LEVEL, _ENV, _FILE = 512, 64, 256, 512


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def _field(value: Any, size: int) -> tuple[str | None, bool]:
    """A text field as the store holds it, and whether it needed a repair: text over the
    column size is truncated, a number or boolean becomes its JSON text, an object or
    array is dropped (none of them costs the line)."""
    if value is None:
        return None, False
    if isinstance(value, str):
        if len(value) > size:
            return _storable(value[:size]), True
        return _storable(value), False
    if isinstance(value, bool | int | float):
        return _json_text(value)[:size], True
    return None, True


def _meta(
    item: dict[str, Any],
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, bool]:
    """The line's meta as stored: what queries and rules see, what is only shown, and
    whether it needed a repair (a tuple: this runs for every line). An object is searchable. A string holding a JSON object is meta
    sent **unindexed**: ``@logdna/logger`` with ``indexMeta: false`` (its default) and
    the Python handler with ``index_meta=False`` (its default) send
    ``JSON.stringify(meta)``; the platform stores and shows it but does not search it.
    Any other value is kept (searchable) under ``value`` (a repair). The agent's
    ``label`` and ``annotation`` (Kubernetes) and the agent payload's ``pid`` join the
    searchable meta, as ``labels``, ``annotations`` and ``pid``."""
    value = item.get("meta")
    repaired = False
    meta: dict[str, Any] | None = None
    unindexed: dict[str, Any] | None = None
    if value is None or isinstance(value, dict):
        meta = value
    else:
        parsed: Any = None
        if isinstance(value, str):
            try:
                parsed = json_codec.loads(value)
            except ValueError:
                parsed = None
        if isinstance(parsed, dict):
            unindexed = parsed
        else:
            meta, repaired = {"value": value}, True
    if not _AGENT_KEYS.isdisjoint(item):
        extras = {
            name: item[key]
            for key, name in _AGENT_META
            if item.get(key) is not None and (meta is None or name not in meta)
        }
        if extras:
            meta = {**extras, **meta} if meta else extras
    return meta, unindexed, repaired


# (line field, meta key): what the platform agent (logdna-rust's ``Line`` serializes
# ``annotation`` and ``label``) and ``@logdna/logger``'s agent payload (``label``,
# ``pid``) send beside meta; the plural spellings are accepted too.
_AGENT_META = (
    ("label", "labels"),
    ("labels", "labels"),
    ("annotation", "annotations"),
    ("annotations", "annotations"),
    ("pid", "pid"),
)
_AGENT_KEYS = frozenset(key for key, _ in _AGENT_META)
# Where a line object carries its time: the protocol's field, then the agent payload's.
LINE_TIME_FIELDS = ("timestamp", "t")


def file_app(file: str) -> str:
    """The app of a line that names its file but no app, as the platform files it: the
    file's base name (``/var/log/nginx/access.log``: ``access.log``; a Windows path
    too). The agent's journald lines name the unit there, with no path: kept whole."""
    base = file.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    return base or file


def build_line(
    item: Any,
    *,
    params: IngestParams,
    default_ts: int,
    tags: list[str] | None,
    skew: int = 0,
) -> NewLine:
    """One line element as a store record, in a single pass, repairing rather than
    refusing (``docs/ingest.md``): a line is never lost because of what it carries.
    ``skew`` moves the line's own time onto our clock (``timestamps.clock_skew``)."""
    if not isinstance(item, dict):
        # A bare string is the line's text; any other value its JSON text.
        text = item if isinstance(item, str) else _json_text(item)
        return NewLine(
            line=_storable(text),
            ts=default_ts,
            host=params.hostname,
            ip=params.ip,
            mac=params.mac,
            tags=tags,
            repaired=True,
        )
    value = item.get("line")
    if isinstance(value, str):
        text, repaired = value, False
    else:
        # ``logger.log(12345)`` sends a number: stored as its JSON text. No line at all:
        # the whole element is the text, as the gateway stores an event without one.
        text, repaired = _json_text(item if value is None else value), True
    ts, time_field, fell_back = time_from(item, LINE_TIME_FIELDS, default=default_ts)
    if skew and time_field is not None:
        shifted = in_range(ts + skew)
        ts = default_ts if shifted is None else shifted
    # The Python handler's per-line ``hostname``, else the agent's ``host`` (the node).
    host_value = item.get("hostname")
    host, host_fix = _field(item.get("host") if host_value is None else host_value, _MAX_HOST)
    app, app_fix = _field(item.get("app"), _APP)
    level, level_fix = _field(item.get("level"), _LEVEL)
    env, env_fix = _field(item.get("env"), _ENV)
    file_value = item.get("file")
    file, file_fix = _field(item.get("f") if file_value is None else file_value, _FILE)
    if app is None and file:
        app = file_app(file)
    meta, unindexed, meta_fix = _meta(item)
    return NewLine(
        line=_storable(text),
        ts=ts,
        host=host or params.hostname,
        app=app,
        level=level,
        env=env,
        file=file,
        ip=params.ip,
        mac=params.mac,
        tags=tags,
        meta=meta,
        meta_unindexed=unindexed,
        repaired=(
            repaired
            or fell_back
            or host_fix
            or app_fix
            or level_fix
            or env_fix
            or file_fix
            or meta_fix
        ),
    )


def sort_lines(
    *,
    account_id: str,
    params: IngestParams,
    lines: Sequence[Any],
    rules: RuleSet,
    received_ms: int,
) -> JudgedLines:
    """Build the lines to store and judge each against the exclusion rules."""
    skew = clock_skew(sender_now=params.now, received_ms=received_ms)
    # A sender whose clock is off: its lines without a time take ours.
    default_ts = params.now if params.now is not None and not skew else received_ms
    tags = list(params.tags) or None
    return judge_lines(
        account_id=account_id,
        lines=(
            build_line(item, params=params, default_ts=default_ts, tags=tags, skew=skew)
            for item in lines
        ),
        rules=rules,
        received_ms=received_ms,
    )


def prepare(
    *,
    account_id: str,
    params: IngestParams,
    body: bytes,
    content_encoding: str | None,
    rules: RuleSet,
    received_ms: int,
) -> JudgedLines:
    """Everything CPU-heavy of one request (inflate, parse, build, exclusion rules, the
    rows to insert), for a worker thread: the event loop only awaits it."""
    raw = decode_content(body, content_encoding, limit=MAX_DECODED_BYTES)
    del body
    return sort_lines(
        account_id=account_id,
        params=params,
        lines=body_lines(raw),
        rules=rules,
        received_ms=received_ms,
    )
