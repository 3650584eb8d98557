"""The ``blackhole`` destination: takes every event and keeps none."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import BuildContext, Component, DeliveryContext, NodeRef, Parcel

__all__ = ["COMPONENT", "BlackholeConfig"]


class BlackholeConfig(BaseModel):
    """``ack_enabled`` is accepted (the platform's field); nothing waits on a blackhole."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ack_enabled: bool = True


def _build(_config: BlackholeConfig, _context: BuildContext, _node: NodeRef) -> Any:
    return None


async def _deliver(_parcels: Sequence[Parcel], _context: DeliveryContext) -> None:
    return None


COMPONENT: Component[BlackholeConfig] = Component(
    kind="destination",
    type="blackhole",
    config_model=BlackholeConfig,
    build=_build,
    describe="Discards everything it receives",
    deliver=_deliver,
)
