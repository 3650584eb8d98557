"""The ``stringify`` processor: the whole event becomes ``{"message": "<its JSON>"}``."""

from __future__ import annotations

import orjson
from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import PerEventProcessor

__all__ = ["COMPONENT", "StringifyConfig"]


class StringifyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _stringify(event: Event) -> Event:
    return {"message": orjson.dumps(event, default=str).decode()}


def _build(_config: StringifyConfig, _context: BuildContext, _node: NodeRef) -> PerEventProcessor:
    return PerEventProcessor(_stringify, name="stringify")


COMPONENT: Component[StringifyConfig] = Component(
    kind="processor",
    type="stringify",
    config_model=StringifyConfig,
    build=_build,
    describe='Turns the event into `{"message": "<the event as JSON>"}`; no options',
)
