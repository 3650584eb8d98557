"""The ``parse-sequentially`` processor: tries ``parsers`` in order on the text at
``field`` and puts the first result at ``target_field`` (in place of ``field`` when
none is given). Parsed events leave on the main output, and also on the output of the
parser that read them, ``<id>.<output name>`` (the platform's: each parser's output
name is stored in its ``_output_name``, which its Terraform provider reads back;
``parser-<n>`` unless the client sent one); events no parser could read (or whose
field is missing or not text) leave on ``<id>._unmatched``. A parser may carry a
``label``."""

from __future__ import annotations

import logging
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from tidegate.components.base import (
    UNMATCHED,
    BuildContext,
    Component,
    Event,
    NodeOutput,
    NodeRef,
    RunContext,
)
from tidegate.components.processors.kit import (
    FieldText,
    OutputName,
    on_batch,
    with_output_names,
)
from tidegate.components.processors.parse import MAX_TEXT
from tidegate.components.processors.parsing import ParserSpec, make_parser
from tidegate.processing.fields import FieldPath, with_value

__all__ = ["COMPONENT", "ParseSequentiallyConfig"]


log = logging.getLogger("tidegate.runtime.processors")


class SequentialParser(ParserSpec):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    label: Annotated[str, Field(max_length=250)] = ""
    generated_name: OutputName | None = Field(default=None, alias="_output_name")


class ParseSequentiallyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    field: FieldText = ".message"
    target_field: FieldText | Literal[""] | None = None
    parsers: Annotated[list[SequentialParser], Field(min_length=1, max_length=20)]
    _names: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _named(self) -> ParseSequentiallyConfig:
        names: list[str] = []
        for index, parser in enumerate(self.parsers):
            name = parser.generated_name
            if name is None or name in names or name == UNMATCHED:
                name = f"parser-{index + 1}"
            names.append(name)
        self._names = tuple(names)
        return self

    @property
    def output_names(self) -> tuple[str, ...]:
        return self._names


class ParseSequentially:
    def __init__(self, config: ParseSequentiallyConfig) -> None:
        self._parsers = list(
            zip(config.output_names, map(make_parser, config.parsers), strict=True)
        )
        self._get = FieldPath.parse(config.field).getter()
        self._target = FieldPath.parse(config.target_field or config.field)

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput:
        return await on_batch(self._run, events, context)

    def _run(self, events: list[Event]) -> NodeOutput:
        main: list[Event] = []
        named: dict[str, list[Event]] = {name: [] for name, _ in self._parsers}
        named[UNMATCHED] = []
        for event in events:
            try:
                output, parsed = self._parsed(event)
            except Exception as error:  # any: one odd event never fails its batch
                log.warning("parse-sequentially: an event passed after %s", type(error).__name__)
                main.append(event)
                continue
            if output == UNMATCHED:
                named[UNMATCHED].append(event)
            else:
                main.append(parsed)
                named[output].append(parsed)
        return NodeOutput(main, named, len(events))

    def _parsed(self, event: Event) -> tuple[str, Event]:
        text = self._get(event)
        if isinstance(text, str) and len(text) <= MAX_TEXT:
            for name, parse in self._parsers:
                parsed = parse(text)
                if parsed is not None:
                    return name, with_value(event, self._target, parsed)
        return UNMATCHED, event


def _build(
    config: ParseSequentiallyConfig, _context: BuildContext, _node: NodeRef
) -> ParseSequentially:
    return ParseSequentially(config)


def _outputs(config: ParseSequentiallyConfig) -> list[str]:
    return [*config.output_names, UNMATCHED]


def _stored(config: ParseSequentiallyConfig, user_config: dict[str, Any]) -> dict[str, Any]:
    """The client's configuration with each parser's ``_output_name``."""
    return with_output_names(user_config, "parsers", config.output_names)


COMPONENT: Component[ParseSequentiallyConfig] = Component(
    kind="processor",
    type="parse-sequentially",
    config_model=ParseSequentiallyConfig,
    build=_build,
    describe="Tries `parsers` in order on `field`; parsed events leave on the main output "
    "and `<id>.<parser's output>`, unparsed ones on `<id>._unmatched`",
    outputs=_outputs,
    stored=_stored,
)
