"""The ``dedupe`` processor: discards an event equal to one of the last
``number_of_events`` it let through.

``comparison_type: match`` (or ``Match``, as the platform's clients write it) compares the listed ``fields`` only (a missing field counts
as a value of its own); ``ignore`` compares everything except them. The cache keeps a
16-byte digest per event, least recently seen out first: bounded by
``number_of_events`` (at most 100,000, about 10 MB)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Annotated, Literal

import orjson
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import MAX_FIELDS, FieldText, PerEventProcessor
from tidegate.processing.fields import MISSING, FieldPath, without

__all__ = ["COMPONENT", "DedupeConfig"]


def _lower(value: object) -> object:
    """The platform writes ``Match`` and ``Ignore``; tidegate's API ``match``, ``ignore``."""
    return value.lower() if isinstance(value, str) else value


class DedupeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    fields: Annotated[list[FieldText], Field(max_length=MAX_FIELDS)] = []
    number_of_events: Annotated[int, Field(strict=True, ge=1, le=100_000)] = 5_000
    comparison_type: Annotated[Literal["match", "ignore"], BeforeValidator(_lower)] = "match"


def _digest(value: object) -> bytes:
    encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.blake2b(encoded, digest_size=16).digest()


class _Dedupe:
    def __init__(self, config: DedupeConfig) -> None:
        self._paths = [FieldPath.parse(text) for text in config.fields]
        self._getters = [path.getter() for path in self._paths]
        self._match = config.comparison_type == "match"
        self._capacity = config.number_of_events
        self._seen: OrderedDict[bytes, None] = OrderedDict()

    def _key(self, event: Event) -> bytes:
        if self._match:
            values = [get(event) for get in self._getters]
            return _digest([[v is MISSING, None if v is MISSING else v] for v in values])
        rest = event
        for path in self._paths:
            rest = without(rest, path)
        return _digest(rest)

    def __call__(self, event: Event) -> Event | None:
        key = self._key(event)
        if key in self._seen:
            self._seen.move_to_end(key)
            return None
        self._seen[key] = None
        if len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
        return event


def _build(config: DedupeConfig, _context: BuildContext, _node: NodeRef) -> PerEventProcessor:
    return PerEventProcessor(_Dedupe(config), name="dedupe")


COMPONENT: Component[DedupeConfig] = Component(
    kind="processor",
    type="dedupe",
    config_model=DedupeConfig,
    build=_build,
    describe="Discards events equal (on `fields`, or all but them) to one of the last "
    "`number_of_events`",
)
