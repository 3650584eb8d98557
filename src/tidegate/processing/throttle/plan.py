"""What the processor reads from each event: its bucket key, exclusion and time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tidegate.processing.conditions import Predicate
from tidegate.processing.fields import MISSING, Getter, string_form
from tidegate.processing.throttle.clock import EventTimeReader
from tidegate.processing.throttle.config import ThrottleConfig

__all__ = ["DEFAULT_BUCKET", "EventPlan", "bucket_key"]

DEFAULT_BUCKET = ""
"""Events with no key field, or a missing, null or empty value, share this bucket."""


def bucket_key(value: Any) -> str:
    """The bucket a key field's value selects: its string form, or the default bucket."""
    if value.__class__ is str:
        return value
    if value is None or value is MISSING:
        return DEFAULT_BUCKET
    return string_form(value)


@dataclass(frozen=True, slots=True)
class EventPlan:
    """Precompiled readers for one configuration, shared by both stores."""

    key_name: str | None
    """The key when `key_field` is one plain key (`.app`): read inline, fastest."""
    key_getter: Getter | None
    """Otherwise the getter of a nested path; both None means no key field."""
    exclude: Predicate | None
    event_time: EventTimeReader | None

    @classmethod
    def from_config(cls, config: ThrottleConfig) -> EventPlan:
        path = config.key_path
        key_name = path.single_key if path is not None else None
        key_getter = path.getter() if path is not None and key_name is None else None
        time_path = config.time_path
        return cls(
            key_name=key_name,
            key_getter=key_getter,
            exclude=config.exclude.predicate if config.exclude is not None else None,
            event_time=EventTimeReader(time_path) if time_path is not None else None,
        )

    def key_of(self, event: Any) -> str:
        if self.key_name is not None:
            return bucket_key(event.get(self.key_name, MISSING))
        if self.key_getter is not None:
            return bucket_key(self.key_getter(event))
        return DEFAULT_BUCKET
