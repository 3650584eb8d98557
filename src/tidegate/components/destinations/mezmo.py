"""The ``mezmo`` destination (alias ``log_analysis``): the account's own log store.

Events become lines (``runtime.log_lines``) and go through the account's exclusion
rules exactly as ingestion: excluded lines are counted, not stored; indexonly ones
still reach live tail. Every account's lines of one request go to the worker's writer
as one write (group commit): all of them are stored, or none, as the request is
answered. Stored lines go to live tail once committed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict

from tidegate.components.base import (
    BuildContext,
    Component,
    DeliveryContext,
    Event,
    NodeRef,
    Parcel,
)
from tidegate.ingest.exclusion import RuleCache, RuleSet
from tidegate.ingest.service import IngestOutcome, exclusion_rules, judge
from tidegate.logs.store import NewLine
from tidegate.runtime.log_lines import event_to_line

__all__ = ["COMPONENT", "MezmoConfig"]

log = logging.getLogger("tidegate.runtime")


class MezmoConfig(BaseModel):
    """No options yet."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _build(_config: MezmoConfig, _context: BuildContext, _node: NodeRef) -> Any:
    return None


async def _deliver(parcels: Sequence[Parcel], context: DeliveryContext) -> None:
    by_account: dict[str, list[Event]] = {}
    for parcel in parcels:
        by_account.setdefault(parcel.account_id, []).extend(parcel.events)
    rules = context.rules or RuleCache()
    outcomes: list[IngestOutcome] = []
    for account_id, events in by_account.items():
        ruleset = await exclusion_rules(db=context.db, account_id=account_id, cache=rules)
        outcomes.append(
            await context.offload(
                partial(_judged, account_id, events, context.received_ms, ruleset),
                work=len(events),
            )
        )
    await context.writer.write([outcome.batch for outcome in outcomes if outcome.batch is not None])
    if context.tail is not None:
        for outcome in outcomes:
            # never raises, never blocks
            await context.tail.publish(outcome.account_id, [*outcome.stored, *outcome.tail_only])


def _judged(
    account_id: str, events: list[Event], received_ms: int, ruleset: RuleSet
) -> IngestOutcome:
    """The events as lines, through the exclusion rules, and the rows to store (CPU
    work: may run in a thread)."""
    outcome = IngestOutcome(account_id=account_id)
    for event in events:
        judge(outcome, _line(event, received_ms), ruleset)
    outcome.to_store(received_ms)
    return outcome


_TIME_FIELDS = ("timestamp", "ts", "time")


def _line(event: Event, received_ms: int) -> NewLine:
    """The event's line. A value the conversion cannot handle must not fail the batch:
    the request would fail again on every retry (a poison batch). The event is then
    stored without its time fields (at the receive time), or, failing that, as text."""
    try:
        return event_to_line(event, received_ms=received_ms)
    except Exception as error:  # any: one event may never fail its neighbours
        log.warning("event stored with a fallback: %s: %s", type(error).__name__, error)
    try:
        rest = {key: value for key, value in event.items() if key not in _TIME_FIELDS}
        return event_to_line(rest, received_ms=received_ms)
    except Exception:  # any, as above
        return event_to_line({"line": repr(event)[:32_768]}, received_ms=received_ms)


COMPONENT: Component[MezmoConfig] = Component(
    kind="destination",
    type="mezmo",
    aliases=("log_analysis",),
    config_model=MezmoConfig,
    build=_build,
    describe="The account's log store (searchable, exported, live tail); alias "
    "`log_analysis`; no options",
    deliver=_deliver,
)
