"""The ``parse`` processor: parses the text at ``field`` with ``parser`` (json,
key_value, regex, grok, apache, nginx, syslog, csv_row, cef, timestamp and VRL's
others, ``vrl_parsers``; see ``parsing``) and puts the result at ``target_field``, or in place of ``field`` when no
target is given (the platform's Terraform provider sends an empty one).

An event whose field is missing, not a string, or not of the parser's format passes
unchanged (the ``parse-sequentially`` processor has an ``_unmatched`` output for those).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import FieldText, PerEventProcessor
from tidegate.components.processors.parsing import ParserSpec, make_parser
from tidegate.processing.fields import FieldPath, with_value

__all__ = ["COMPONENT", "ParseConfig"]

MAX_TEXT = 1024 * 1024
"""Longer texts are not parsed (they pass unchanged)."""


class ParseConfig(ParserSpec):
    field: FieldText = ".message"
    target_field: FieldText | Literal[""] | None = Field(
        default=None, description="where the result goes; none or empty: in place of `field`"
    )


def _build(config: ParseConfig, _context: BuildContext, _node: NodeRef) -> PerEventProcessor:
    parse = make_parser(config)
    source = FieldPath.parse(config.field)
    target = FieldPath.parse(config.target_field or config.field)
    get = source.getter()

    def apply(event: Event) -> Event:
        text = get(event)
        if not isinstance(text, str) or len(text) > MAX_TEXT:
            return event
        parsed = parse(text)
        if parsed is None:
            return event
        return with_value(event, target, parsed)

    return PerEventProcessor(apply, name="parse")


COMPONENT: Component[ParseConfig] = Component(
    kind="processor",
    type="parse",
    config_model=ParseConfig,
    build=_build,
    describe="Parses `field` (json, key_value, regex, grok, apache, nginx, syslog, csv_row, "
    "cef, timestamp, query_string, url, tokens, int, klog, glog, linux_authorization, "
    "aws_vpc_flow_log, aws_cloudwatch_log, aws_alb_log, user_agent) into `target_field`",
)
