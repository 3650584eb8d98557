"""The ``parse-sequentially`` processor: tries ``parsers`` in order on the text at
``field`` and puts the first result at ``target_field`` (in place of ``field`` when
none is given). Parsed events leave on the main output; events no parser could read
(or whose field is missing or not text) leave on ``<id>._unmatched``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import UNMATCHED, BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import FieldText, PerEventProcessor
from tidegate.components.processors.parse import MAX_TEXT
from tidegate.components.processors.parsing import ParserSpec, make_parser
from tidegate.processing.fields import FieldPath, with_value

__all__ = ["COMPONENT", "ParseSequentiallyConfig"]


class ParseSequentiallyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    field: FieldText = ".message"
    target_field: FieldText | None = None
    parsers: Annotated[list[ParserSpec], Field(min_length=1, max_length=20)]


def _build(
    config: ParseSequentiallyConfig, _context: BuildContext, _node: NodeRef
) -> PerEventProcessor:
    parsers = [make_parser(spec) for spec in config.parsers]
    source = FieldPath.parse(config.field)
    target = FieldPath.parse(config.target_field or config.field)
    get = source.getter()

    def apply(event: Event) -> Event | tuple[str, Event]:
        text = get(event)
        if isinstance(text, str) and len(text) <= MAX_TEXT:
            for parse in parsers:
                parsed = parse(text)
                if parsed is not None:
                    return with_value(event, target, parsed)
        return (UNMATCHED, event)

    return PerEventProcessor(apply, outputs=(UNMATCHED,), name="parse-sequentially")


def _outputs(_config: ParseSequentiallyConfig) -> list[str]:
    return [UNMATCHED]


COMPONENT: Component[ParseSequentiallyConfig] = Component(
    kind="processor",
    type="parse-sequentially",
    config_model=ParseSequentiallyConfig,
    build=_build,
    describe="Tries `parsers` in order on `field`; unparsed events go to `<id>._unmatched`",
    outputs=_outputs,
)
