"""Pipeline alerts: create, read, replace and delete an alert on a pipeline component,
in the shape the platform's Terraform provider sends and reads (alert_schemas).

The path's component kind segment (``source``, ``transform``, ``sink`` and the aliases
``processor``, ``destination``) is kept as sent and answered as ``component_kind``, so
the provider reads back what it wrote. The component must be one of the pipeline's
nodes of that kind. Another account's pipeline or alert answers as a missing one."""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.alerts.integrations import checked_channels
from tidegate.alerts.pipeline_alerts import (
    first_window,
    open_payload,
    seal_payload,
    service_channel,
)
from tidegate.auth.secrets import Sealer
from tidegate.clock import epoch_ms_of
from tidegate.errors import BadRequest, Conflict, NotFound
from tidegate.kit.destination_guard import DestinationPolicy
from tidegate.models import PipelineAlert, PipelineNode
from tidegate.models.base import new_uuid, utcnow
from tidegate.pipelines.alert_schemas import AlertIn, AlertOut
from tidegate.pipelines.service import own_pipeline

KIND_SEGMENTS: Final = {
    "source": "source",
    "transform": "processor",
    "processor": "processor",
    "sink": "destination",
    "destination": "destination",
}
MAX_ALERTS_PER_PIPELINE: Final = 100


def _out(alert: PipelineAlert, payload: dict[str, Any]) -> AlertOut:
    return AlertOut(
        id=alert.id,
        pipeline_id=alert.pipeline_id,
        component_kind=alert.component_kind,
        component_id=alert.component_id,
        inputs=list(alert.inputs),
        alert_config={
            "general": alert.general,
            "evaluation": alert.evaluation,
            "alert_payload": payload,
        },
        active=alert.active,
    )


async def _component(
    session: AsyncSession, *, account_id: str, pipeline_id: str, segment: str, component_id: str
) -> None:
    kind = KIND_SEGMENTS[segment]
    node = await session.get(PipelineNode, component_id)
    if node is None or node.account_id != account_id or node.pipeline_id != pipeline_id:
        raise NotFound(f"No {segment} {component_id} in pipeline {pipeline_id}")
    if node.kind != kind:
        raise NotFound(f"No {segment} {component_id} in pipeline {pipeline_id}")


async def _checked(
    body: AlertIn, *, component_id: str, policy: DestinationPolicy
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[str]]:
    """The stored general, evaluation and alert_payload; 400 when the service cannot
    be delivered to (a webhook to a non-public address, a missing URL or key)."""
    config = body.alert_config
    service = config.alert_payload.service.model_dump(exclude_none=True)
    try:
        channel = service_channel(service)
    except ValueError as error:
        raise BadRequest(f"alert_config.alert_payload.service: {error}") from None
    if channel is not None:
        await checked_channels([channel], policy=policy, where="alert_config.alert_payload")
    elif not service.get("ingestion_key"):
        raise BadRequest("alert_config.alert_payload.service.ingestion_key: required")
    payload = {"service": service, "throttling": config.alert_payload.throttling.model_dump()}
    general = config.general.model_dump(exclude_none=True)
    evaluation = config.evaluation.model_dump(exclude_none=True)
    inputs = body.inputs or [component_id]
    return general, evaluation, payload, inputs


async def create_alert(
    *,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    pipeline_id: str,
    segment: str,
    component_id: str,
    body: AlertIn,
    policy: DestinationPolicy,
) -> AlertOut:
    pipeline = await own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id, for_update=True
    )
    await _component(
        session,
        account_id=account_id,
        pipeline_id=pipeline.id,
        segment=segment,
        component_id=component_id,
    )
    general, evaluation, payload, inputs = await _checked(
        body, component_id=component_id, policy=policy
    )
    count = len(
        (
            await session.execute(
                select(PipelineAlert.id).where(PipelineAlert.pipeline_id == pipeline.id)
            )
        ).all()
    )
    if count >= MAX_ALERTS_PER_PIPELINE:
        raise Conflict(f"A pipeline holds at most {MAX_ALERTS_PER_PIPELINE} alerts")
    now = utcnow()
    alert = PipelineAlert(
        id=new_uuid(),
        account_id=account_id,
        pipeline_id=pipeline.id,
        component_kind=segment,
        component_id=component_id,
        inputs=inputs,
        active=body.active,
        general=general,
        evaluation=evaluation,
        payload_sealed=seal_payload(sealer, payload),
        state=None,
        created_at=now,
        updated_at=now,
    )
    # Its first window opens now: events counted before the evaluator first sees the
    # alert are in it.
    alert.state = await first_window(session, alert, now_ms=epoch_ms_of(now))
    session.add(alert)
    await session.commit()
    return _out(alert, payload)


async def _own_alert(
    session: AsyncSession,
    *,
    account_id: str,
    pipeline_id: str,
    alert_id: str,
    component_id: str | None = None,
    for_update: bool = False,
) -> PipelineAlert:
    alert = await session.get(PipelineAlert, alert_id, with_for_update=for_update)
    if (
        alert is None
        or alert.account_id != account_id
        or alert.pipeline_id != pipeline_id
        or (component_id is not None and alert.component_id != component_id)
    ):
        raise NotFound(f"No alert {alert_id} in pipeline {pipeline_id}")
    return alert


async def get_alert(
    *,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    pipeline_id: str,
    alert_id: str,
    component_id: str | None = None,
) -> AlertOut:
    alert = await _own_alert(
        session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        alert_id=alert_id,
        component_id=component_id,
    )
    return _out(alert, open_payload(sealer, alert.payload_sealed) or {})


async def list_alerts(
    *,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    pipeline_id: str,
    component_id: str,
) -> list[AlertOut]:
    pipeline = await own_pipeline(session=session, account_id=account_id, pipeline_id=pipeline_id)
    rows = (
        await session.execute(
            select(PipelineAlert)
            .where(
                PipelineAlert.pipeline_id == pipeline.id,
                PipelineAlert.component_id == component_id,
            )
            .order_by(PipelineAlert.created_at, PipelineAlert.id)
        )
    ).scalars()
    return [_out(row, open_payload(sealer, row.payload_sealed) or {}) for row in rows]


async def replace_alert(
    *,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    pipeline_id: str,
    component_id: str,
    alert_id: str,
    body: AlertIn,
    policy: DestinationPolicy,
) -> AlertOut:
    alert = await _own_alert(
        session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        alert_id=alert_id,
        component_id=component_id,
        for_update=True,
    )
    general, evaluation, payload, inputs = await _checked(
        body, component_id=component_id, policy=policy
    )
    alert.general = general
    alert.evaluation = evaluation
    alert.payload_sealed = seal_payload(sealer, payload)
    alert.inputs = inputs
    alert.active = body.active
    alert.updated_at = utcnow()
    # A changed alert starts a new window, now.
    alert.state = await first_window(session, alert, now_ms=epoch_ms_of(alert.updated_at))
    await session.commit()
    return _out(alert, payload)


async def delete_alert(
    *,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    pipeline_id: str,
    component_id: str,
    alert_id: str,
) -> AlertOut:
    alert = await _own_alert(
        session,
        account_id=account_id,
        pipeline_id=pipeline_id,
        alert_id=alert_id,
        component_id=component_id,
        for_update=True,
    )
    found = _out(alert, open_payload(sealer, alert.payload_sealed) or {})
    await session.delete(alert)
    await session.commit()
    return found
