"""The ``mezmo`` destination (alias ``log_analysis``): the account's own log store.

Events become lines (``runtime.log_lines``) and go through the one writer of lines
(``logs.intake.LineIntake``) exactly as ingestion: the account's exclusion rules,
every account's lines of one request in one write (group commit: all stored, or none,
as the request is answered), usage, then live tail.
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
from tidegate.logs.exclusion import RuleSet
from tidegate.logs.intake import JudgedLines, judge_lines
from tidegate.logs.store import NewLine
from tidegate.runtime.log_lines import EVENT_TIME_FIELDS, event_to_line

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
    judged: list[JudgedLines] = []
    for account_id, events in by_account.items():
        ruleset = await context.intake.rules_for(account_id)
        judged.append(
            await context.offload(
                partial(_judged, account_id, events, context.received_ms, ruleset),
                work=len(events),
            )
        )
    await context.intake.store(judged)


def _judged(
    account_id: str, events: list[Event], received_ms: int, ruleset: RuleSet
) -> JudgedLines:
    """The events as lines, through the exclusion rules, and the rows to store (CPU
    work: may run in a thread)."""
    return judge_lines(
        account_id=account_id,
        lines=(_line(event, received_ms) for event in events),
        rules=ruleset,
        received_ms=received_ms,
    )


def _line(event: Event, received_ms: int) -> NewLine:
    """The event's line. A value the conversion cannot handle must not fail the batch:
    the request would fail again on every retry (a poison batch). The event is then
    stored without its time fields (at the receive time), or, failing that, as text."""
    try:
        return event_to_line(event, received_ms=received_ms)
    except Exception as error:  # any: one event may never fail its neighbours
        log.warning("event stored with a fallback: %s: %s", type(error).__name__, error)
    try:
        rest = {key: value for key, value in event.items() if key not in EVENT_TIME_FIELDS}
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
