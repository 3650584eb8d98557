"""The ``http`` source: events POSTed to its gateway route (``POST /gateway/{id}``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, Needs, NodeRef

__all__ = ["COMPONENT", "HttpSourceConfig"]


class HttpSourceConfig(BaseModel):
    """No options yet: the gateway route's body forms are described in docs/runtime.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _build(_config: HttpSourceConfig, _context: BuildContext, _node: NodeRef) -> Any:
    return None


COMPONENT: Component[HttpSourceConfig] = Component(
    kind="source",
    type="http",
    config_model=HttpSourceConfig,
    build=_build,
    describe="Events POSTed to the source's gateway route; no options",
    needs=Needs(gateway_route=True),
)
