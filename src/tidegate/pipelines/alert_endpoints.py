"""HTTP for pipeline alerts (docs/api-pipelines.md, "Pipeline alerts"): the paths the
platform's Terraform provider calls, the alert in the ``data`` envelope.

- ``POST /v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert``
- ``GET|PUT|DELETE /v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert/{alert_id}``
- ``GET /v3/pipeline/{pipeline_id}/alert/{alert_id}`` (the provider's read)
- ``GET /v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert`` (the component's alerts)

``kind``: ``source``, ``transform``, ``sink`` (documented), ``processor`` and
``destination`` (served, not documented twice). Included in the pipelines' router
(``/v3/pipeline``), with the same permissions (reads: READ; changes: MANAGE)."""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Path

from tidegate.alerts.dependencies import DestinationPolicyDep
from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.auth.dependencies import AccountId, SealerDep
from tidegate.db.session import SessionDep
from tidegate.pipelines import alert_service
from tidegate.pipelines.alert_schemas import AlertIn, AlertOut
from tidegate.pipelines.paths import ERRORS, ID_PATTERN, NodeIdPath, PipelineIdPath

router = APIRouter(tags=["Pipeline alerts"], responses=ERRORS)

AlertIdPath = Annotated[
    str, Path(min_length=1, max_length=36, pattern=ID_PATTERN, description="The alert's id")
]
DOCUMENTED: Final = ("source", "transform", "sink")
ALIASES: Final = ("processor", "destination")
ONE: Final = "/v3/pipeline/{pipeline_id}/alert/{alert_id}"
LINKS: Final = SelfLinks(detail=link("get", ONE))


def _one(data: AlertOut) -> Envelope[AlertOut]:
    return envelope(data, type="alert", pk="id", links=LINKS)


@router.get(
    "/{pipeline_id}/alert/{alert_id}", summary="Get a pipeline alert", name="get_pipeline_alert"
)
async def get_pipeline_alert(
    pipeline_id: PipelineIdPath,
    alert_id: AlertIdPath,
    session: SessionDep,
    account_id: AccountId,
    sealer: SealerDep,
) -> Envelope[AlertOut]:
    data = await alert_service.get_alert(
        session=session,
        sealer=sealer,
        account_id=account_id,
        pipeline_id=pipeline_id,
        alert_id=alert_id,
    )
    return _one(data)


def _add_routes(segment: str, *, documented: bool) -> None:
    async def list_alerts(
        pipeline_id: PipelineIdPath,
        component_id: NodeIdPath,
        session: SessionDep,
        account_id: AccountId,
        sealer: SealerDep,
    ) -> Envelope[list[AlertOut]]:
        data = await alert_service.list_alerts(
            session=session,
            sealer=sealer,
            account_id=account_id,
            pipeline_id=pipeline_id,
            component_id=component_id,
        )
        return envelope(data, type="alert", pk="id", links=LINKS)

    async def create_alert(
        pipeline_id: PipelineIdPath,
        component_id: NodeIdPath,
        body: AlertIn,
        session: SessionDep,
        account_id: AccountId,
        sealer: SealerDep,
        policy: DestinationPolicyDep,
    ) -> Envelope[AlertOut]:
        data = await alert_service.create_alert(
            session=session,
            sealer=sealer,
            account_id=account_id,
            pipeline_id=pipeline_id,
            segment=segment,
            component_id=component_id,
            body=body,
            policy=policy,
        )
        return _one(data)

    async def get_alert(
        pipeline_id: PipelineIdPath,
        component_id: NodeIdPath,
        alert_id: AlertIdPath,
        session: SessionDep,
        account_id: AccountId,
        sealer: SealerDep,
    ) -> Envelope[AlertOut]:
        data = await alert_service.get_alert(
            session=session,
            sealer=sealer,
            account_id=account_id,
            pipeline_id=pipeline_id,
            alert_id=alert_id,
            component_id=component_id,
        )
        return _one(data)

    async def replace_alert(
        pipeline_id: PipelineIdPath,
        component_id: NodeIdPath,
        alert_id: AlertIdPath,
        body: AlertIn,
        session: SessionDep,
        account_id: AccountId,
        sealer: SealerDep,
        policy: DestinationPolicyDep,
    ) -> Envelope[AlertOut]:
        data = await alert_service.replace_alert(
            session=session,
            sealer=sealer,
            account_id=account_id,
            pipeline_id=pipeline_id,
            component_id=component_id,
            alert_id=alert_id,
            body=body,
            policy=policy,
        )
        return _one(data)

    async def delete_alert(
        pipeline_id: PipelineIdPath,
        component_id: NodeIdPath,
        alert_id: AlertIdPath,
        session: SessionDep,
        account_id: AccountId,
        sealer: SealerDep,
    ) -> Envelope[AlertOut]:
        data = await alert_service.delete_alert(
            session=session,
            sealer=sealer,
            account_id=account_id,
            pipeline_id=pipeline_id,
            component_id=component_id,
            alert_id=alert_id,
        )
        return _one(data)

    collection = f"/{{pipeline_id}}/{segment}/{{component_id}}/alert"
    item = collection + "/{alert_id}"
    routes: tuple[tuple[str, Any, str, str, str, int], ...] = (
        (collection, list_alerts, "GET", "list", f"List a {segment}'s alerts", 200),
        (collection, create_alert, "POST", "create", f"Create an alert on a {segment}", 201),
        (item, get_alert, "GET", "get", f"Get an alert of a {segment}", 200),
        (item, replace_alert, "PUT", "replace", f"Replace an alert of a {segment}", 200),
        (item, delete_alert, "DELETE", "delete", f"Delete an alert of a {segment}", 200),
    )
    for path, endpoint, method, verb, summary, status in routes:
        router.add_api_route(
            path,
            endpoint,
            methods=[method],
            name=f"{verb}_{segment}_alert",
            summary=summary,
            status_code=status,
            include_in_schema=documented,
        )


for _segment in DOCUMENTED:
    _add_routes(_segment, documented=True)
for _segment in ALIASES:
    _add_routes(_segment, documented=False)
