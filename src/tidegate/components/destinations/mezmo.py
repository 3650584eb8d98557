"""The ``mezmo`` destination (alias ``log_analysis``): the account's own log store.

Events become lines (``logs.log_lines``) and go through the one writer of lines
(``logs.intake``), exactly as ``/logs/ingest``: the account's exclusion rules (excluded
lines counted, not stored; indexonly ones still reach live tail), usage, the group
commit, the one timestamp rule, then live tail. Every account's lines of one request go
to the worker's writer as one write: all of them are stored, or none, as the request
is answered.

Fields (the platform's): ``ack_enabled``, ``host`` (the host of events that carry
none; default ``gateway``), ``ingestion_key``, ``query``, and as the platform's
Terraform provider writes them ``mezmo_host``, ``use_ingestion_key`` and ``message``:
``{"scheme": "Message pass-through"}`` (the event as it is, the default) or
``{"scheme": "Explicit field selection", "line", "app", "file", "env", "meta_field",
"timestamp_field"}``, each a field path: the line is then built from those fields only
(``line``'s value, text as it is and anything else as JSON; the whole event when
``line`` is not given or absent from the event; ``meta`` from ``meta_field``).

**Decision:** lines always go to the pipeline's own account; ``mezmo_host``,
``ingestion_key``, ``use_ingestion_key`` and ``query`` are accepted for the platform's
clients, stored and read back, and not used (there is no other platform host to send
to).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.components.base import (
    BuildContext,
    Component,
    DeliveryContext,
    Event,
    NodeRef,
    Parcel,
)
from tidegate.components.processors.kit import FieldText
from tidegate.logs.exclusion import RuleSet
from tidegate.logs.intake import JudgedLines, judge_lines
from tidegate.logs.log_lines import DEFAULT_HOST, EVENT_TIME_FIELDS, event_to_line
from tidegate.logs.store import NewLine
from tidegate.processing.fields import MISSING, FieldPath

__all__ = ["COMPONENT", "MezmoConfig"]

log = logging.getLogger("tidegate.runtime")


PASS_THROUGH: Final = "Message pass-through"
EXPLICIT: Final = "Explicit field selection"
_SELECTED: Final = (
    ("line", "line"),
    ("app", "app"),
    ("file", "file"),
    ("env", "env"),
    ("meta", "meta_field"),
    ("timestamp", "timestamp_field"),
)


class Message(BaseModel):
    """How an event becomes a line (the platform's ``message``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    scheme: Literal["Message pass-through", "Explicit field selection"] = PASS_THROUGH
    line: FieldText | None = None
    app: FieldText | None = None
    file: FieldText | None = None
    env: FieldText | None = None
    meta_field: FieldText | None = None
    timestamp_field: FieldText | None = None

    @model_validator(mode="after")
    def _fields_need_explicit(self) -> Message:
        chosen = [name for _, name in _SELECTED if getattr(self, name) is not None]
        if chosen and self.scheme != EXPLICIT:
            raise ValueError(f"{', '.join(chosen)}: only with scheme {EXPLICIT!r}")
        return self


class Query(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    hostname: Annotated[str, Field(max_length=256)] | None = None
    ip: Annotated[str, Field(max_length=64)] | None = None
    mac: Annotated[str, Field(max_length=64)] | None = None
    tags: Annotated[list[Annotated[str, Field(max_length=256)]], Field(max_length=100)] = []


class MezmoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ack_enabled: bool = True
    host: Annotated[str, Field(min_length=1, max_length=256)] = DEFAULT_HOST
    mezmo_host: Annotated[str, Field(max_length=256)] | None = None
    use_ingestion_key: bool = False
    ingestion_key: Annotated[str, Field(max_length=512)] | None = None
    query: Query | None = None
    message: Message = Message()


@dataclass(frozen=True, slots=True)
class _Shaper:
    """An event -> the event whose line is stored (``message``)."""

    host: str
    selected: tuple[tuple[str, Callable[[Event], Any]], ...] | None

    def __call__(self, event: Event) -> Event:
        if self.selected is None:
            return event
        shaped: Event = {}
        for name, get in self.selected:
            value = get(event)
            if value is not MISSING:
                shaped[name] = value
        line = shaped.get("line", MISSING)
        if line is MISSING:
            shaped["line"] = orjson.dumps(event, default=str).decode()
        elif not isinstance(line, str):
            shaped["line"] = orjson.dumps(line, default=str).decode()
        return shaped


def _build(config: MezmoConfig, _context: BuildContext, _node: NodeRef) -> _Shaper:
    message = config.message
    if message.scheme == PASS_THROUGH:
        return _Shaper(config.host, None)
    selected = tuple(
        (name, FieldPath.parse(path).getter())
        for name, attribute in _SELECTED
        if (path := getattr(message, attribute)) is not None
    )
    return _Shaper(config.host, selected)


async def _deliver(parcels: Sequence[Parcel], context: DeliveryContext) -> None:
    by_account: dict[str, list[tuple[Event, str]]] = {}
    for parcel in parcels:
        shape: _Shaper = parcel.runtime
        by_account.setdefault(parcel.account_id, []).extend(
            (shape(event), shape.host) for event in parcel.events
        )
    judged: list[JudgedLines] = []
    for account_id, events in by_account.items():
        rules = await context.intake.rules_for(account_id)
        judged.append(
            await context.offload(
                partial(_judged, account_id, events, context.received_ms, rules),
                work=len(events),
            )
        )
    await context.intake.store(judged)


def _judged(
    account_id: str, events: list[tuple[Event, str]], received_ms: int, rules: RuleSet
) -> JudgedLines:
    """The events as lines, through the exclusion rules, and the rows to store (CPU
    work: may run in a thread)."""
    return judge_lines(
        account_id=account_id,
        lines=(_line(event, received_ms, host) for event, host in events),
        rules=rules,
        received_ms=received_ms,
    )


def _line(event: Event, received_ms: int, host: str) -> NewLine:
    """The event's line. A value the conversion cannot handle must not fail the batch:
    the request would fail again on every retry (a poison batch). The event is then
    stored without its time fields (at the receive time), or, failing that, as text."""
    try:
        return event_to_line(event, received_ms=received_ms, default_host=host)
    except Exception as error:  # any: one event may never fail its neighbours
        log.warning("event stored with a fallback: %s: %s", type(error).__name__, error)
    try:
        rest = {key: value for key, value in event.items() if key not in EVENT_TIME_FIELDS}
        return event_to_line(rest, received_ms=received_ms, default_host=host)
    except Exception:  # any, as above
        return event_to_line(
            {"line": repr(event)[:32_768]}, received_ms=received_ms, default_host=host
        )


COMPONENT: Component[MezmoConfig] = Component(
    kind="destination",
    type="mezmo",
    aliases=("log_analysis",),
    config_model=MezmoConfig,
    build=_build,
    describe="The account's log store (searchable, exported, live tail); alias "
    "`log_analysis`; `host` for events without one",
    deliver=_deliver,
)
