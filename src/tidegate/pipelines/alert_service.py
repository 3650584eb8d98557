"""Pipeline alerts: create, read, replace and delete an alert on a pipeline component,
in the shape the platform's Terraform provider sends and reads (alert_schemas).

The path's component kind segment (``source``, ``transform``, ``sink`` and the aliases
``processor``, ``destination``) is kept as sent and answered as ``component_kind``, so
the provider reads back what it wrote. The component must be one of the pipeline's
nodes of that kind. Another account's pipeline or alert answers as a missing one."""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import bindparam, select
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
from tidegate.db.engine import Database, RawQuery
from tidegate.errors import BadRequest, Conflict, NotFound
from tidegate.kit.destination_guard import DestinationPolicy
from tidegate.models import Pipeline, PipelineAlert, PipelineNode
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


def alert_data(alert: PipelineAlert | Any, payload: dict[str, Any]) -> dict[str, Any]:
    """The alert's document as plain data (api/raw_json.py), from the ORM object or a
    raw record of ``_ALERT_COLUMNS``, with its opened ``alert_payload``."""
    return {
        "id": alert.id,
        "pipeline_id": alert.pipeline_id,
        "component_kind": alert.component_kind,
        "component_id": alert.component_id,
        "inputs": list(alert.inputs),
        "alert_config": {
            "general": alert.general,
            "evaluation": alert.evaluation,
            "alert_payload": payload,
        },
        "active": alert.active,
    }


def _out(alert: PipelineAlert, payload: dict[str, Any]) -> AlertOut:
    return AlertOut(**alert_data(alert, payload))


# What alert_data builds a document from (and the sealed payload).
_ALERT_COLUMNS = (
    PipelineAlert.id,
    PipelineAlert.pipeline_id,
    PipelineAlert.component_kind,
    PipelineAlert.component_id,
    PipelineAlert.inputs,
    PipelineAlert.active,
    PipelineAlert.general,
    PipelineAlert.evaluation,
    PipelineAlert.payload_sealed,
)
# The account's alert in the pipeline (``_own_alert``'s conditions), and of a component.
_OWN_ALERT = (
    PipelineAlert.id == bindparam("alert_id"),
    PipelineAlert.account_id == bindparam("account_id"),
    PipelineAlert.pipeline_id == bindparam("pipeline_id"),
)
# Their JSON values are shared between reads (RawQuery's shared_json): _stored_data
# only encodes them into the answer.
_ALERT_OF = RawQuery(select(*_ALERT_COLUMNS).where(*_OWN_ALERT), shared_json=True)
_COMPONENT_ALERT_OF = RawQuery(
    select(*_ALERT_COLUMNS).where(
        *_OWN_ALERT, PipelineAlert.component_id == bindparam("component_id")
    ),
    shared_json=True,
)
# The account's pipeline joined (outer) to the component's alerts, in ``list_alerts``'s
# order: no row when the pipeline is not the account's, one of nulls when it has none.
_ALERTS_OF = RawQuery(
    select(*_ALERT_COLUMNS)
    .select_from(Pipeline)
    .outerjoin(
        PipelineAlert,
        (PipelineAlert.pipeline_id == Pipeline.id)
        & (PipelineAlert.component_id == bindparam("component_id")),
    )
    .where(Pipeline.id == bindparam("pipeline_id"), Pipeline.account_id == bindparam("account_id"))
    .order_by(PipelineAlert.created_at, PipelineAlert.id),
    shared_json=True,
)


def _stored_data(sealer: Sealer, alert: Any) -> dict[str, Any]:
    """A read alert's document: its payload opened through the sealer's cache."""
    return alert_data(alert, open_payload(sealer, alert.payload_sealed, stored=True) or {})


async def read_alert(
    *,
    db: Database,
    sealer: Sealer,
    account_id: str,
    pipeline_id: str,
    alert_id: str,
    component_id: str | None = None,
) -> dict[str, Any]:
    """``get_alert`` as plain data, from one raw read."""
    params = {"alert_id": alert_id, "account_id": account_id, "pipeline_id": pipeline_id}
    if component_id is None:
        rows = await db.fetch_records(_ALERT_OF, params)
    else:
        rows = await db.fetch_records(_COMPONENT_ALERT_OF, {**params, "component_id": component_id})
    if not rows:
        raise NotFound(f"No alert {alert_id} in pipeline {pipeline_id}")
    return _stored_data(sealer, rows[0])


async def read_alerts(
    *, db: Database, sealer: Sealer, account_id: str, pipeline_id: str, component_id: str
) -> list[dict[str, Any]]:
    """``list_alerts`` as plain data, from one raw read."""
    params = {"account_id": account_id, "pipeline_id": pipeline_id, "component_id": component_id}
    rows = await db.fetch_records(_ALERTS_OF, params)
    if not rows:
        raise NotFound(f"No pipeline {pipeline_id}")
    return [_stored_data(sealer, row) for row in rows if row.id is not None]


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
