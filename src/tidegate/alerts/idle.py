"""Whether an alert round has anything to do, asked in one read (docs/alerts.md, "An
idle round"). A round is idle when no view alerts, no index-rate alert is enabled, no
pipeline alert is active, no line was stored past the evaluator's cursor (nor is any
id in its watched gaps) and no delivery is due: then a full round would only renew
the evaluator's lease and stamp the cursor's ``evaluated_ms``, in about fourteen
statements. Anything else, or no cursor yet, runs the full round, as before.

The answer is a snapshot: a view saved or a line stored a moment later is seen by the
next round (one tick), as it would have been by a full round that had begun."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import exists, func, select

from tidegate.alerts.cursor import CURSOR
from tidegate.db.engine import Database, decode_json
from tidegate.models import (
    AlertCursor,
    AlertDelivery,
    IndexRateAlert,
    LogLine,
    PipelineAlert,
    View,
)


@dataclass(frozen=True, slots=True)
class Work:
    """What a round has to do: evaluate (lines, index rates, pipeline alerts), deliver."""

    evaluate: bool
    deliver: bool


def _statement(now_ms: int):  # type: ignore[no-untyped-def]
    cursor = AlertCursor.name == CURSOR
    return select(
        select(AlertCursor.last_line_id).where(cursor).scalar_subquery(),
        select(AlertCursor.gaps).where(cursor).scalar_subquery(),
        select(func.max(LogLine.id)).scalar_subquery(),
        exists().where(View.alerting.is_(True)),
        exists().where(IndexRateAlert.enabled.is_(True)),
        exists().where(PipelineAlert.active.is_(True)),
        # The outbox's own test of a due delivery (outbox.Outbox._claim).
        exists().where(
            AlertDelivery.status == "pending",
            AlertDelivery.next_attempt_ms <= now_ms,
            AlertDelivery.claimed_until_ms < now_ms,
        ),
    )


async def work(db: Database, *, now_ms: int) -> Work:
    async with db.read_sessions() as session:
        row = (await session.execute(_statement(now_ms))).one()
    last, gaps, top, views, index_rates, pipeline_alerts, due = row
    if isinstance(gaps, str | bytes):
        gaps = decode_json(gaps)
    evaluate = (
        last is None  # no cursor yet: the full round makes it
        or bool(gaps)
        or (top or 0) > last
        or bool(views)
        or bool(index_rates)
        or bool(pipeline_alerts)
    )
    return Work(evaluate=evaluate, deliver=bool(due))
