"""The ``data-profiler`` processor: every event passes unchanged while the node records
a profile of what flows through it.

``app_fields``, ``host_fields``, ``level_fields``, ``line_fields`` (1-10 paths each,
required) and ``label_fields`` (0-10) name where an event's app, host, level, line and
labels are; the first path present wins. Paths start with a dot (``.app``), as the
platform requires ("must be a valid data access syntax").

The profile (``DataProfile``), per worker and node: events seen; per top-level field
and nested path (depth ≤ ``MAX_DEPTH``) the count of each JSON type seen; per app,
host and level the events seen; the number of events with a line, and with labels.
Bounded: at most ``MAX_PATHS`` paths and ``MAX_VALUES`` distinct values per app, host
and level (past them counted under ``(other)``), never the values of other fields.
The platform's Terraform provider reads nothing of it back; it is kept in memory on
the running node (``DataProfiler.profile``) and lost on a restart or a configuration
change.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated, Any, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import PerEventProcessor, parse_path
from tidegate.processing.fields import MISSING, FieldPath

__all__ = ["COMPONENT", "DataProfile", "DataProfilerConfig"]

MAX_PATHS: Final = 1_000
MAX_VALUES: Final = 1_000
MAX_DEPTH: Final = 4
OTHER: Final = "(other)"


def _data_access(text: str) -> str:
    if not text.startswith("."):
        raise ValueError("must be a valid data access syntax (a path starting with `.`)")
    return parse_path(text)


Path = Annotated[str, Field(min_length=1, max_length=512), AfterValidator(_data_access)]
Paths = Annotated[list[Path], Field(min_length=1, max_length=10)]


class DataProfilerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    app_fields: Paths
    host_fields: Paths
    level_fields: Paths
    line_fields: Paths
    label_fields: Annotated[list[Path], Field(max_length=10)] | None = None


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


@dataclass
class DataProfile:
    events: int = 0
    fields: dict[str, Counter[str]] = field(default_factory=dict)
    apps: Counter[str] = field(default_factory=Counter)
    hosts: Counter[str] = field(default_factory=Counter)
    levels: Counter[str] = field(default_factory=Counter)
    with_line: int = 0
    with_labels: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "fields": {path: dict(types) for path, types in self.fields.items()},
            "apps": dict(self.apps),
            "hosts": dict(self.hosts),
            "levels": dict(self.levels),
            "with_line": self.with_line,
            "with_labels": self.with_labels,
        }


def _count(counter: Counter[str], value: object) -> None:
    if value is MISSING:
        return
    text = value if isinstance(value, str) else repr(value)
    if text not in counter and len(counter) >= MAX_VALUES:
        text = OTHER
    counter[text] += 1


class DataProfiler:
    def __init__(self, config: DataProfilerConfig) -> None:
        def getters(paths: list[str] | None) -> list[Any]:
            return [FieldPath.parse(path).getter() for path in paths or ()]

        self._app = getters(config.app_fields)
        self._host = getters(config.host_fields)
        self._level = getters(config.level_fields)
        self._line = getters(config.line_fields)
        self._labels = getters(config.label_fields)
        self.profile = DataProfile()

    @staticmethod
    def _first(getters: list[Any], event: Event) -> object:
        for get in getters:
            value = get(event)
            if value is not MISSING and value is not None:
                return value
        return MISSING

    def _walk(self, value: dict[str, Any], prefix: str, depth: int) -> None:
        fields = self.profile.fields
        for key, item in value.items():
            path = f"{prefix}.{key}"
            types = fields.get(path)
            if types is None:
                if len(fields) >= MAX_PATHS:
                    continue
                types = fields[path] = Counter()
            types[_type_name(item)] += 1
            if isinstance(item, dict) and depth < MAX_DEPTH:
                self._walk(item, path, depth + 1)

    def __call__(self, event: Event) -> Event:
        profile = self.profile
        profile.events += 1
        self._walk(event, "", 1)
        _count(profile.apps, self._first(self._app, event))
        _count(profile.hosts, self._first(self._host, event))
        _count(profile.levels, self._first(self._level, event))
        profile.with_line += self._first(self._line, event) is not MISSING
        profile.with_labels += self._first(self._labels, event) is not MISSING
        return event


class DataProfilerProcessor(PerEventProcessor):
    def __init__(self, profiler: DataProfiler) -> None:
        super().__init__(profiler, name="data-profiler")
        self.profiler = profiler


def _build(
    config: DataProfilerConfig, _context: BuildContext, _node: NodeRef
) -> DataProfilerProcessor:
    return DataProfilerProcessor(DataProfiler(config))


COMPONENT: Component[DataProfilerConfig] = Component(
    kind="processor",
    type="data-profiler",
    config_model=DataProfilerConfig,
    build=_build,
    describe="Passes events unchanged and profiles them: field types and counts, apps, "
    "hosts and levels",
)
