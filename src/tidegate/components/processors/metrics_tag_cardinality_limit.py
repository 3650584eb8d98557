"""The ``metrics-tag-cardinality-limit`` processor: at most ``value_limit`` distinct
values per tag of each metric.

A metric event (``{name, namespace?, tags: {key: value}, ...}``, as ``aggregate`` and
``event-to-metric`` emit them) is checked tag by tag: ``tags`` lists the tags limited
(none: every tag), ``exclude_tags`` the tags never limited. Per (namespace, metric name,
tag key) the first ``value_limit`` distinct values are let through; a new value past
them exceeds the limit, and ``action`` decides: ``drop_event`` (default) discards the
event (none of its values is then counted), ``drop_tag`` removes that tag from a copy of
the event. An event without an object ``tags`` passes unchanged.

``mode`` ``exact`` (default) or ``probabilistic`` (also written ``probabalistic``, as
the provider's test data does) is accepted and read back; both count exactly, since
the per-key set is capped at the limit anyway.

Bounded: each key keeps at most ``value_limit`` 8-byte digests (never the values), and
a node at most ``MAX_KEYS`` keys and ``MAX_VALUES`` digests in all; past them the least
recently seen keys are forgotten (their values count afresh). State is per worker.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import PerEventProcessor

__all__ = ["COMPONENT", "MetricsTagCardinalityLimitConfig"]

MAX_KEYS: Final = 10_000
MAX_VALUES: Final = 1_000_000

TagName = Annotated[str, Field(min_length=1, max_length=100)]


class MetricsTagCardinalityLimitConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    tags: Annotated[list[TagName], Field(max_length=10)] | None = None
    exclude_tags: Annotated[list[TagName], Field(max_length=10)] | None = None
    action: Literal["drop_event", "drop_tag"] = "drop_event"
    value_limit: Annotated[int, Field(strict=True, ge=1, le=100_000)]
    mode: Literal["exact", "probabilistic", "probabalistic"] = "exact"


def _digest(value: object) -> bytes:
    text = value if isinstance(value, str) else repr(value)
    return hashlib.blake2b(text.encode(), digest_size=8).digest()


class TagLimiter:
    def __init__(
        self,
        config: MetricsTagCardinalityLimitConfig,
        *,
        max_keys: int = MAX_KEYS,
        max_values: int = MAX_VALUES,
    ) -> None:
        self._only = frozenset(config.tags) if config.tags else None
        self._exclude = frozenset(config.exclude_tags or ())
        self._drop_event = config.action == "drop_event"
        self._limit = config.value_limit
        self._max_keys = max_keys
        self._max_values = max_values
        self._seen: OrderedDict[tuple[object, object, str], set[bytes]] = OrderedDict()
        self.values = 0
        """Digests held across every key (the memory bound)."""

    @property
    def keys(self) -> int:
        return len(self._seen)

    def _limited(self, key: str) -> bool:
        return key not in self._exclude and (self._only is None or key in self._only)

    def _values(self, key: tuple[object, object, str]) -> set[bytes]:
        values = self._seen.get(key)
        if values is not None:
            self._seen.move_to_end(key)
            return values
        values = self._seen[key] = set()
        return values

    def _trim(self) -> None:
        while len(self._seen) > self._max_keys or self.values > self._max_values:
            _, values = self._seen.popitem(last=False)
            self.values -= len(values)

    def __call__(self, event: Event) -> Event | None:
        tags = event.get("tags")
        if not isinstance(tags, dict):
            return event
        metric = (event.get("namespace"), event.get("name"))
        fresh: list[tuple[set[bytes], bytes]] = []
        over: list[str] = []
        for key, value in tags.items():
            if not self._limited(key):
                continue
            values = self._values((*metric, key))
            digest = _digest(value)
            if digest in values:
                continue
            if len(values) >= self._limit:
                over.append(key)
            else:
                fresh.append((values, digest))
        if over and self._drop_event:
            return None
        for values, digest in fresh:
            values.add(digest)
            self.values += 1
        self._trim()
        if not over:
            return event
        return {**event, "tags": {k: v for k, v in tags.items() if k not in over}}


def _build(
    config: MetricsTagCardinalityLimitConfig, _context: BuildContext, _node: NodeRef
) -> PerEventProcessor:
    return PerEventProcessor(TagLimiter(config), name="metrics-tag-cardinality-limit")


COMPONENT: Component[MetricsTagCardinalityLimitConfig] = Component(
    kind="processor",
    type="metrics-tag-cardinality-limit",
    config_model=MetricsTagCardinalityLimitConfig,
    build=_build,
    describe="At most `value_limit` distinct values per tag of each metric: past it, "
    "drops the event or the tag",
)
