"""Evaluating pipeline alerts (threshold, absence, change) on a component's usage.

A component's events are the ``ingress_events`` (and ``ingress_bytes``) the runtime
records per node and minute in ``pipeline_usage``; an alert whose inputs name a route's
arm (``<route id>.<output>``) counts what that output sent (``pipeline_output_usage``).
Each alert keeps, in its row, the window it is in and a running-total sample: at the
end of a window the events
counted since the sample are the window's, and make one aggregate event
``{"event_count": N, "byte_count": B}`` that the alert's conditional is judged on.

- threshold: fires when the conditional holds for the window's aggregate;
- absence: fires when the window saw no event;
- change: fires when the conditional (``value_change_*``/``percent_change_*``) holds
  between the previous window's aggregate and this one's.

A tumbling window is judged at its end; a sliding one every minute, over the minutes of
its length that end then (the last ``window_duration_minutes`` one-minute steps, kept in
the row), once it spans them all.

Runs in the alert runner's round when it holds the evaluator's lease (once per
cluster), and writes its firings into the same outbox as view alerts, in the
transaction that moves the alert's window (so each window fires at most once).
"""

from __future__ import annotations

import base64
import functools
import json
import math
from typing import Any, Final
from urllib.parse import quote

import orjson
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.alerts.channels import Channel, ChannelIn, canonical_channel
from tidegate.alerts.integrations.log_analysis import log_analysis_channel
from tidegate.alerts.notification import Notification, app_link
from tidegate.alerts.outbox import pending_delivery
from tidegate.auth.secrets import Sealer
from tidegate.config import Settings
from tidegate.db.engine import Database, decode_json, decode_json_shared
from tidegate.models import PipelineAlert, PipelineOutputUsage, PipelineUsage
from tidegate.models.pipeline_usage import BUCKET_MS
from tidegate.processing.conditions import OPERATORS, Condition, ConditionError, compile_condition

SOURCE: Final = "pipeline"
_NUMERIC: Final = {
    "greater": lambda a, b: a > b,
    "greater_or_equal": lambda a, b: a >= b,
    "less": lambda a, b: a < b,
    "less_or_equal": lambda a, b: a <= b,
}


def service_channel(service: dict[str, Any]) -> ChannelIn | None:
    """The view-alert channel body a provider ``service`` delivers through; None for
    ``log_analysis``, which no view can name (``channel_of`` makes its channel)."""
    name = service.get("name")
    if name == "webhook":
        headers = {
            item["header_name"]: item["header_value"] for item in service.get("headers") or []
        }
        auth = service.get("auth") or {}
        if auth.get("strategy") == "bearer" and auth.get("token"):
            headers["Authorization"] = f"Bearer {auth['token']}"
        elif auth.get("strategy") == "basic":
            pair = f"{auth.get('user') or ''}:{auth.get('password') or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        return ChannelIn(
            integration="webhook",
            triggerlimit=1,
            url=service.get("uri"),
            method=service.get("method"),
            headers=headers or None,
            bodyTemplate=message_body(service.get("message_text")),
        )
    if name == "slack":
        return ChannelIn(integration="slack", triggerlimit=1, url=service.get("uri"))
    if name == "pager_duty":
        return ChannelIn(integration="pagerduty", triggerlimit=1, key=service.get("routing_key"))
    return None


def message_body(text: str | None) -> dict[str, Any] | None:
    """A webhook's ``message_text``: sent as JSON when it is a JSON object, else as
    ``{"message": text}``; placeholders as in view alerts' body templates."""
    if not text:
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"message": text}


# What each service sets of its message, kept in its channel's ``body_template`` (a
# webhook's ``message_text`` is its body template itself).
_MESSAGE_PARTS: Final = {
    "slack": ("message_text",),
    "pager_duty": ("summary", "severity", "source", "event_action"),
}


def channel_of(service: dict[str, Any]) -> Channel | None:
    if service.get("name") == "log_analysis":
        return log_analysis_channel(service)
    body = service_channel(service)
    if body is None:
        return None
    channel = canonical_channel(body, where="alert_payload.service")
    parts = {
        name: service[name]
        for name in _MESSAGE_PARTS.get(str(service.get("name")), ())
        if service.get(name)
    }
    if parts:
        channel.body_template = parts
    return channel


def _field(event: dict[str, Any], path: str) -> Any:
    value: Any = event
    for part in path.lstrip(".").split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _leaf(item: dict[str, Any], current: dict[str, Any], previous: dict[str, Any] | None) -> bool:
    operator = str(item.get("str_operator", ""))
    value = _field(current, str(item.get("field", "")))
    wanted = item.get("value")
    result = False
    if operator in _NUMERIC:
        a, b = _number(value), _number(wanted)
        result = a is not None and b is not None and bool(_NUMERIC[operator](a, b))
    elif operator == "equal":
        result = value == wanted or (
            _number(value) is not None and _number(value) == _number(wanted)
        )
    elif operator == "exists":
        result = value is not None
    elif operator == "is_number":
        result = _number(value) is not None
    elif operator == "is_null":
        result = value is None
    elif operator in OPERATORS and operator not in _OWN_TESTS:
        # The filter and route processors' own tests (contains, starts_with, regex_match
        # in linear time, is_ip_in_cidr_range, is_string, ...), on the aggregate's field.
        leaf = _condition_leaf(item)
        return leaf is not None and leaf(current)
    elif operator.startswith(("value_change_", "percent_change_")) and previous is not None:
        before, now, limit = (
            _number(_field(previous, str(item.get("field", "")))),
            _number(value),
            _number(wanted),
        )
        if before is not None and now is not None and limit is not None:
            change = abs(now - before)
            if operator.startswith("percent_change_"):
                change = change * 100 / abs(before) if before else (math.inf if change else 0.0)
            comparison = operator.removeprefix("value_change_").removeprefix("percent_change_")
            result = bool(_NUMERIC[comparison](change, limit))
    return result != bool(item.get("negate") is True)


_OWN_TESTS: Final = frozenset({*_NUMERIC, "equal", "exists", "is_number", "is_null"})


@functools.lru_cache(maxsize=1024)
def _compiled_leaf(spec: str) -> Condition | None:
    try:
        return compile_condition(json.loads(spec))
    except ConditionError:  # a value the operator cannot take: the leaf never holds
        return None


def _condition_leaf(item: dict[str, Any]) -> Condition | None:
    """``item`` as the processors' condition (``negate`` included), compiled once."""
    spec = {
        key: item[key]
        for key in ("field", "str_operator", "value", "negate", "case_sensitive")
        if key in item and not (key == "negate" and not isinstance(item[key], bool))
    }
    return _compiled_leaf(json.dumps(spec, sort_keys=True))


def holds(
    conditional: dict[str, Any], current: dict[str, Any], previous: dict[str, Any] | None = None
) -> bool:
    """Whether ``conditional`` (the provider's nested ``expressions``) holds."""
    results = [
        holds(item, current, previous) if "expressions" in item else _leaf(item, current, previous)
        for item in conditional.get("expressions") or []
    ]
    if not results:
        return False
    return any(results) if conditional.get("logical_operation") == "OR" else all(results)


def window_ms(evaluation: dict[str, Any], scale: float) -> int:
    return max(1, int(int(evaluation.get("window_duration_minutes", 5)) * 60_000 * scale))


def step_ms(evaluation: dict[str, Any], scale: float) -> int:
    """How often the window is judged: at its end for a tumbling window, every minute
    for a sliding one (over the minutes of its length that end then)."""
    if evaluation.get("window_type") == "sliding":
        return max(1, int(60_000 * scale))
    return window_ms(evaluation, scale)


def sliding_steps(evaluation: dict[str, Any]) -> int | None:
    """How many one-minute steps a sliding window sums; None for a tumbling one."""
    if evaluation.get("window_type") != "sliding":
        return None
    return int(evaluation.get("window_duration_minutes", 5))


def judged_window(
    evaluation: dict[str, Any], state: dict[str, Any], step: dict[str, int]
) -> tuple[dict[str, int] | None, list[list[int]] | None]:
    """The aggregate to judge now, given the step that just closed, and the steps to
    keep. A tumbling window is its one step. A sliding window sums its last
    ``window_duration_minutes`` steps, and is judged only once it spans them all (a
    younger one would find an absence, or a ``less`` condition, in a part-window)."""
    steps_wanted = sliding_steps(evaluation)
    if steps_wanted is None:
        return step, None
    kept = [*(state.get("steps") or []), [step["event_count"], step["byte_count"]]]
    kept = kept[-steps_wanted:]
    if len(kept) < steps_wanted:
        return None, kept
    return {
        "event_count": sum(item[0] for item in kept),
        "byte_count": sum(item[1] for item in kept),
    }, kept


USAGE_FIELDS: Final = frozenset({"event_count", "byte_count"})


def _fields(conditional: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for item in conditional.get("expressions") or []:
        if "expressions" in item:
            found |= _fields(item)
        else:
            found.add(str(item.get("field", "")).lstrip("."))
    return found


def judged_on_events(evaluation: dict[str, Any]) -> bool:
    """Whether an alert is judged on its component's events, folded by its operation
    (``runtime.alert_events``): its conditional names a field other than the usage
    counts every window has (``event_count``, ``byte_count``). An absence alert, and
    one on the counts only, is judged on the usage the runtime records (this module:
    every worker's events, once per cluster)."""
    if evaluation.get("alert_type") == "absence":
        return False
    return not _fields(evaluation.get("conditional") or {}) <= USAGE_FIELDS


def fires(
    evaluation: dict[str, Any], current: dict[str, Any], previous: dict[str, Any] | None
) -> bool:
    kind = evaluation.get("alert_type")
    if kind == "absence":
        return int(current["event_count"]) == 0
    conditional = evaluation.get("conditional") or {}
    if kind == "change":
        return previous is not None and holds(conditional, current, previous)
    return holds(conditional, current)


def watched_outputs(alert: PipelineAlert | Any) -> list[str]:
    """The named outputs (a route's arms) an alert's ``inputs`` name as
    ``<component id>.<output>``; empty when it watches the component itself."""
    prefix = f"{alert.component_id}."
    return sorted(
        {entry.removeprefix(prefix) for entry in alert.inputs or [] if entry.startswith(prefix)}
    )


async def _totals(session: Any, alert: PipelineAlert, since_bucket: int) -> tuple[int, int]:
    """The events and bytes counted from ``since_bucket`` on: into the component, or
    out of the outputs its inputs name (a route's arms)."""
    outputs = watched_outputs(alert)
    if outputs:
        query = select(
            func.coalesce(func.sum(PipelineOutputUsage.events), 0),
            func.coalesce(func.sum(PipelineOutputUsage.bytes), 0),
        ).where(
            PipelineOutputUsage.pipeline_id == alert.pipeline_id,
            PipelineOutputUsage.component_id == alert.component_id,
            PipelineOutputUsage.output.in_(outputs),
            PipelineOutputUsage.bucket_ms >= since_bucket,
        )
    else:
        query = select(
            func.coalesce(func.sum(PipelineUsage.ingress_events), 0),
            func.coalesce(func.sum(PipelineUsage.ingress_bytes), 0),
        ).where(
            PipelineUsage.pipeline_id == alert.pipeline_id,
            PipelineUsage.component_id == alert.component_id,
            PipelineUsage.bucket_ms >= since_bucket,
        )
    row = (await session.execute(query)).one()
    return int(row[0]), int(row[1])


def _base_bucket(now_ms: int) -> int:
    """The first usage bucket a window's sample counts from: the minute before the
    current one. The runtime flushes a minute's counts into that minute's bucket a flush
    interval later (longer on a loaded worker), so a flush can land in the bucket before
    the one a window closed in; counted from there, it goes to the next window instead
    of to none."""
    return now_ms - now_ms % BUCKET_MS - BUCKET_MS


async def first_window(session: Any, alert: PipelineAlert, *, now_ms: int) -> dict[str, Any]:
    """The state of an alert's first window, opened at ``now_ms`` (its creation or its
    change): the component's running totals sampled now, so that the events counted
    from now on are its window's, whenever the evaluator first sees the alert."""
    bucket = _base_bucket(now_ms)
    events, data = await _totals(session, alert, bucket)
    return {
        "window_start": now_ms,
        "base_bucket": bucket,
        "base_events": events,
        "base_bytes": data,
    }


async def evaluate_pipeline_alerts(
    db: Database, sealer: Sealer, settings: Settings, *, now_ms: int
) -> int:
    """One pass over the active alerts whose window ended; how many fired."""
    fired = 0
    settle = int(settings.alert_settle_s * 1000)
    async with db.read_sessions() as session:
        rows = list(
            (
                await session.execute(select(PipelineAlert).where(PipelineAlert.active.is_(True)))
            ).scalars()
        )
    for row in rows:
        if judged_on_events(row.evaluation):
            continue  # the runtime judges it on the events it runs (runtime.alert_events)
        state = row.state or {}
        length = step_ms(row.evaluation, settings.alert_window_scale)
        if state and now_ms < int(state["window_start"]) + length + settle:
            continue  # the window is still open: no write transaction
        async with db.write_sessions() as session:
            # Locked and read again: a pass that already moved this window wins.
            alert = await session.get(
                PipelineAlert, row.id, with_for_update=True, populate_existing=True
            )
            if alert is None or not alert.active or (alert.state or {}) != state:
                continue
            bucket = _base_bucket(now_ms)
            new_state: dict[str, Any] = dict(state)
            if state:
                events, data = await _totals(session, alert, int(state["base_bucket"]))
                current, steps = judged_window(
                    alert.evaluation,
                    state,
                    {
                        "event_count": events - int(state["base_events"]),
                        "byte_count": data - int(state["base_bytes"]),
                    },
                )
                previous = state.get("previous")
                if steps is not None:
                    new_state["steps"] = steps
                if current is not None and fires(alert.evaluation, current, previous):
                    payload = open_payload(sealer, alert.payload_sealed) or {}
                    count = int(current["event_count"])
                    fired += _throttled_delivery(
                        session, alert, payload, new_state, current, count, now_ms, sealer,
                        settings,
                    )  # fmt: skip
                end = int(state["window_start"]) + length
                new_state["window_start"] = end if now_ms < end + length else now_ms
                if current is not None:
                    new_state["previous"] = current
            else:  # a row from before alerts were given their first window when made
                new_state["window_start"] = now_ms
            events, data = await _totals(session, alert, bucket)
            new_state.update(base_bucket=bucket, base_events=events, base_bytes=data)
            alert.state = new_state
            await session.commit()
    return fired


MAX_AGGREGATE_BYTES: Final = 64 * 1024
"""An aggregate kept with its notification (``{{.field}}``) at most this long as JSON;
a longer one (a script that gathers whole events) is kept as its count alone."""


async def write_event_firings(
    session: AsyncSession,
    sealer: Sealer,
    settings: Settings,
    *,
    alert_id: str,
    firings: list[tuple[dict[str, Any], int]],
    now_ms: int,
) -> int:
    """The windows of an alert judged on events that held in one round
    (``runtime.alert_events``; ``(aggregate, events folded)`` each): their notifications
    into the outbox, in the caller's transaction (which commits them with the judge's
    windows), subject to the alert's throttling (in its row, locked); how many were
    written."""
    if not firings:
        return 0
    alert = await session.get(PipelineAlert, alert_id, with_for_update=True, populate_existing=True)
    if alert is None or not alert.active:
        return 0
    state: dict[str, Any] = dict(alert.state or {})
    payload = open_payload(sealer, alert.payload_sealed) or {}
    fired = 0
    for aggregate, count in firings:
        kept = aggregate
        if len(orjson.dumps(aggregate, default=str)) > MAX_AGGREGATE_BYTES:
            kept = {"event_count": count}
        fired += _throttled_delivery(
            session, alert, payload, state, kept, count, now_ms, sealer, settings
        )
    alert.state = state
    return fired


def _throttled_delivery(
    session: Any,
    alert: PipelineAlert,
    payload: dict[str, Any],
    state: dict[str, Any],
    aggregate: dict[str, Any],
    count: int,
    now_ms: int,
    sealer: Sealer,
    settings: Settings,
) -> int:
    """A firing's outbox row, unless ``throttling`` (at most ``threshold`` a
    ``window_secs``) holds it back: then it is counted in ``state["throttled"]``. The
    times sent are kept in ``state["sent"]``; 1 when a row was added. ``payload``: the
    alert's opened ``alert_payload`` (opened once for all of a round's firings)."""
    throttling = payload.get("throttling") or {}
    since = now_ms - int(throttling.get("window_secs", 60)) * 1000
    sent = [at for at in state.get("sent", []) if at > since]
    fired = 0
    if len(sent) < int(throttling.get("threshold", 1)):
        fired = _deliver(session, alert, payload, aggregate, count, now_ms, sealer, settings)
        sent.append(now_ms)
    else:
        state["throttled"] = int(state.get("throttled", 0)) + 1
    state["sent"] = sent
    return fired


def _deliver(
    session: Any,
    alert: PipelineAlert,
    payload: dict[str, Any],
    aggregate: dict[str, Any],
    count: int,
    now_ms: int,
    sealer: Sealer,
    settings: Settings,
) -> int:
    channel = channel_of(payload["service"]) if "service" in payload else None
    if channel is None:
        return 0
    kind = alert.evaluation.get("alert_type", "threshold")
    notification = Notification(
        event="trigger",
        source=SOURCE,
        account_id=alert.account_id,
        name=str(alert.general.get("name", "")),
        fired_ms=now_ms,
        alert_id=alert.id,
        aggregate=dict(aggregate),
        count=count,
        operator=str(kind),
        detail=(
            f"{kind} alert on {alert.component_kind} {alert.component_id} of pipeline "
            f"{alert.pipeline_id}: {count} events in the window"
        ),
        # The pipeline's page, where its components and their alerts are drawn.
        url=app_link(
            settings.public_url,
            f"/pipelines/{quote(alert.pipeline_id, safe='')}",
            account_id=alert.account_id,
        ),
    )
    session.add(
        pending_delivery(notification, channel, channel_key=alert.id, now_ms=now_ms, sealer=sealer)
    )
    return 1


def seal_payload(sealer: Sealer, payload: dict[str, Any]) -> str:
    return sealer.seal(json.dumps(payload))


def open_payload(sealer: Sealer, sealed: str, *, stored: bool = False) -> dict[str, Any] | None:
    """The ``alert_payload``; None when the server secret changed. ``stored``: the
    stored text, opened through the sealer's cache (``Sealer.open_stored``), and its
    value shared with other reads of it (``decode_json_shared``: the caller only encodes
    it into an answer)."""
    if stored:
        text = sealer.open_stored(sealed)
        value = None if text is None else decode_json_shared(text)
    else:
        text = sealer.open(sealed)
        value = None if text is None else decode_json(text)  # json.loads's, by orjson
    return value if isinstance(value, dict) else None
