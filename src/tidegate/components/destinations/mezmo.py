"""The ``mezmo`` destination (alias ``log_analysis``): the account's own log store.

Events become lines (``runtime.log_lines``) and go through the one writer of lines
(``logs.intake``), exactly as ``/logs/ingest``: the account's exclusion rules (excluded
lines counted, not stored; indexonly ones still reach live tail), usage, the group
commit, the one timestamp rule, then live tail. Every account's lines of one request go
to the worker's writer as one write: all of them are stored, or none, as the request
is answered.

Fields (the platform's): ``ack_enabled``, ``host`` (the host of events that carry
none; default ``gateway``), ``ingestion_key``, ``query``. **Decision:** lines always go
to the pipeline's own account; ``ingestion_key`` and ``query`` are accepted for the
platform's clients and not used.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import (
    BuildContext,
    Component,
    DeliveryContext,
    Event,
    NodeRef,
    Parcel,
)
from tidegate.logs.exclusion import RuleSet
from tidegate.logs.intake import JudgedLines, judge_lines
from tidegate.logs.store import NewLine
from tidegate.runtime.log_lines import DEFAULT_HOST, EVENT_TIME_FIELDS, event_to_line

__all__ = ["COMPONENT", "MezmoConfig"]

log = logging.getLogger("tidegate.runtime")


class MezmoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ack_enabled: bool = True
    host: Annotated[str, Field(min_length=1, max_length=256)] = DEFAULT_HOST
    ingestion_key: Annotated[str, Field(max_length=512)] | None = None
    query: dict[str, Any] | None = None


def _build(config: MezmoConfig, _context: BuildContext, _node: NodeRef) -> MezmoConfig:
    return config


async def _deliver(parcels: Sequence[Parcel], context: DeliveryContext) -> None:
    by_account: dict[str, list[tuple[Event, str]]] = {}
    for parcel in parcels:
        config: MezmoConfig = parcel.runtime
        by_account.setdefault(parcel.account_id, []).extend(
            (event, config.host) for event in parcel.events
        )
    judged: list[JudgedLines] = []
    for account_id, events in by_account.items():
        rules = await context.intake.rules_for(account_id)
        judged.append(
            await context.offload(
                partial(_judged, account_id, events, context.received_ms, rules),
                work=len(events),
            )
        )
    await context.intake.store(judged)


def _judged(
    account_id: str, events: list[tuple[Event, str]], received_ms: int, rules: RuleSet
) -> JudgedLines:
    """The events as lines, through the exclusion rules, and the rows to store (CPU
    work: may run in a thread)."""
    return judge_lines(
        account_id=account_id,
        lines=(_line(event, received_ms, host) for event, host in events),
        rules=rules,
        received_ms=received_ms,
    )


def _line(event: Event, received_ms: int, host: str) -> NewLine:
    """The event's line. A value the conversion cannot handle must not fail the batch:
    the request would fail again on every retry (a poison batch). The event is then
    stored without its time fields (at the receive time), or, failing that, as text."""
    try:
        return event_to_line(event, received_ms=received_ms, default_host=host)
    except Exception as error:  # any: one event may never fail its neighbours
        log.warning("event stored with a fallback: %s: %s", type(error).__name__, error)
    try:
        rest = {key: value for key, value in event.items() if key not in EVENT_TIME_FIELDS}
        return event_to_line(rest, received_ms=received_ms, default_host=host)
    except Exception:  # any, as above
        return event_to_line(
            {"line": repr(event)[:32_768]}, received_ms=received_ms, default_host=host
        )


COMPONENT: Component[MezmoConfig] = Component(
    kind="destination",
    type="mezmo",
    aliases=("log_analysis",),
    config_model=MezmoConfig,
    build=_build,
    describe="The account's log store (searchable, exported, live tail); alias "
    "`log_analysis`; `host` for events without one",
    deliver=_deliver,
)
