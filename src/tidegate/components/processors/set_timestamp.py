"""The ``set-timestamp`` processor: sets ``target_field`` (``.timestamp``) to the time,
in epoch milliseconds, read from the first of ``parsers`` that yields one.

A parser is ``{field, format}``: ``format`` ``auto`` reads epoch milliseconds, seconds
with a fraction as text (``"1700000000.5"`` is not auto: digits are milliseconds) or
ISO 8601 (UTC when it has no offset; the rule every writer of lines shares); any other
format is read as the ``parse`` processor's ``timestamp`` parser reads its format (the
platform's chrono specifiers, compiled once to RE2: ``tidegate.processing.
timestamp_format``), e.g. ``%d/%b/%Y:%H:%M:%S %z`` or ``%F %T%.3f``, UTC without an
offset; a format that states no date is refused on save. An event none of them can read
passes unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tidegate.clock import epoch_ms_of
from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import FieldText, PerEventProcessor
from tidegate.logs.timestamps import epoch_ms, in_range
from tidegate.processing.fields import FieldPath, with_value
from tidegate.processing.timestamp_format import TimestampFormat, TimestampFormatError

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

    @field_validator("format")
    @classmethod
    def _readable(cls, value: str) -> str:
        if value != "auto":
            try:
                TimestampFormat(value)
            except TimestampFormatError as error:
                raise ValueError(f"not a timestamp format: {error}") from None
        return value


class SetTimestampConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    parsers: Annotated[list[TimestampParser], Field(min_length=1, max_length=20)]
    target_field: FieldText = ".timestamp"


def _reader(parser: TimestampParser) -> Callable[[Event], int | None]:
    get = FieldPath.parse(parser.field).getter()
    compiled = None if parser.format == "auto" else TimestampFormat(parser.format)

    def read(event: Event) -> int | None:
        value: Any = get(event)
        if compiled is None:
            return epoch_ms(value)
        moment = compiled.read(value) if isinstance(value, str) else None
        return None if moment is None else in_range(epoch_ms_of(moment))

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
