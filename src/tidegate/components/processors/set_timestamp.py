"""The ``set-timestamp`` processor: sets ``target_field`` (``.timestamp``) to the time,
in epoch milliseconds, read from the first of ``parsers`` that yields one.

A parser is ``{field, format}``: ``format`` ``auto`` reads epoch milliseconds, seconds
with a fraction as text (``"1700000000.5"`` is not auto: digits are milliseconds) or
ISO 8601 (UTC when it has no offset; the rule every writer of lines shares); any other
format is a ``strftime`` pattern (``%d/%b/%Y:%H:%M:%S %z``), UTC without ``%z``. An
event none of them can read passes unchanged."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tidegate.clock import epoch_ms_of
from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import FieldText, PerEventProcessor
from tidegate.logs.timestamps import epoch_ms, in_range
from tidegate.processing.fields import FieldPath, with_value

__all__ = ["COMPONENT", "SetTimestampConfig"]


class TimestampParser(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    field: FieldText
    format: Annotated[str, Field(min_length=1, max_length=128)] = "auto"

    @model_validator(mode="before")
    @classmethod
    def _platform_shape(cls, data: Any) -> Any:
        """The platform's Terraform provider writes ``{"field", "options": {"format":
        "Custom", "custom_format": "<strftime>"}}``."""
        if not isinstance(data, dict) or not isinstance(data.get("options"), dict):
            return data
        options = data["options"]
        if options.get("format") != "Custom" or set(options) != {"format", "custom_format"}:
            raise ValueError('options: {"format": "Custom", "custom_format": "<format>"}')
        rest = {key: value for key, value in data.items() if key != "options"}
        return {**rest, "format": options["custom_format"]}


class SetTimestampConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    parsers: Annotated[list[TimestampParser], Field(min_length=1, max_length=20)]
    target_field: FieldText = ".timestamp"


def _reader(parser: TimestampParser) -> Callable[[Event], int | None]:
    get = FieldPath.parse(parser.field).getter()
    pattern = parser.format

    def read(event: Event) -> int | None:
        value: Any = get(event)
        if pattern == "auto":
            return epoch_ms(value)
        if not isinstance(value, str) or len(value) > 256:
            return None
        try:
            moment = datetime.strptime(value, pattern)  # noqa: DTZ007 (UTC below)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return in_range(epoch_ms_of(moment))

    return read


def _build(config: SetTimestampConfig, _context: BuildContext, _node: NodeRef) -> PerEventProcessor:
    readers = [_reader(parser) for parser in config.parsers]
    target = FieldPath.parse(config.target_field)

    def apply(event: Event) -> Event:
        for read in readers:
            ms = read(event)
            if ms is not None:
                return with_value(event, target, ms)
        return event

    return PerEventProcessor(apply, name="set-timestamp")


COMPONENT: Component[SetTimestampConfig] = Component(
    kind="processor",
    type="set-timestamp",
    config_model=SetTimestampConfig,
    build=_build,
    describe="Sets `target_field` (epoch ms) from the first of `parsers` ({field, "
    "format}) that reads a time",
)
