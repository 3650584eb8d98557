"""HTTP for pipeline alerts (docs/api-pipelines.md, "Pipeline alerts"): the paths the
platform's Terraform provider calls, the alert in the ``data`` envelope.

- ``POST /v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert``
- ``GET|PUT|DELETE /v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert/{alert_id}``
- ``GET /v3/pipeline/{pipeline_id}/alert/{alert_id}`` (the provider's read)
- ``GET /v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert`` (the component's alerts)

``kind``: ``source``, ``transform`` or ``sink``, documented as one path with the kind a
path parameter; ``processor`` and ``destination`` are served too, not documented.
Included in the pipelines' router (``/v3/pipeline``), with the same permissions (reads:
READ; changes: MANAGE)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Final, Literal

from fastapi import APIRouter, Depends, Path, Request, Response

from tidegate.alerts.dependencies import DestinationPolicyDep
from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.api.raw_json import envelope_meta, enveloped
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, SealerDep
from tidegate.pipelines import alert_service
from tidegate.pipelines.alert_schemas import AlertIn, AlertOut
from tidegate.pipelines.paths import ERRORS, ID_PATTERN, NodeIdPath, PipelineIdPath

router = APIRouter(tags=["Pipeline alerts"], responses=ERRORS)

AlertIdPath = Annotated[
    str, Path(min_length=1, max_length=36, pattern=ID_PATTERN, description="The alert's id")
]
ComponentKindPath = Annotated[
    Literal["source", "transform", "sink"],
    Path(description="The component's kind: source, transform or sink"),
]
ALIASES: Final = ("processor", "destination")
ONE: Final = "/v3/pipeline/{pipeline_id}/alert/{alert_id}"
LINKS: Final = SelfLinks(detail=link("get", ONE))
META: Final = envelope_meta(type="alert", pk="id", links=LINKS)


def _one(data: AlertOut) -> Envelope[AlertOut]:
    return envelope(data, type="alert", pk="id", links=LINKS)


@router.get(
    "/{pipeline_id}/alert/{alert_id}",
    summary="Get a pipeline alert",
    name="get_pipeline_alert",
    response_model=Envelope[AlertOut],
)
async def get_pipeline_alert(
    request: Request, pipeline_id: PipelineIdPath, alert_id: AlertIdPath, account_id: AccountId
) -> Response:
    state = app_state(request)
    data = await alert_service.read_alert(
        db=state.db,
        sealer=state.sealer,
        account_id=account_id,
        pipeline_id=pipeline_id,
        alert_id=alert_id,
    )
    return enveloped(META, data)


# The kind dependencies are async so that the reads take the plain handler
# (api/plain_routes.py); they do no I/O.
async def _documented_kind(kind: ComponentKindPath) -> str:
    return kind


def _fixed_kind(alias: str) -> Callable[[], Awaitable[str]]:
    async def kind() -> str:
        return alias

    return kind


def _add_routes(prefix: str, kind_of: Callable[..., Awaitable[str]], *, documented: bool) -> None:
    """The component's alert routes under ``prefix``; ``kind_of`` is the dependency that
    gives the component's kind (the path parameter, or an alias's fixed segment)."""

    async def list_alerts(
        request: Request,
        pipeline_id: PipelineIdPath,
        component_id: NodeIdPath,
        account_id: AccountId,
    ) -> Response:
        state = app_state(request)
        data = await alert_service.read_alerts(
            db=state.db,
            sealer=state.sealer,
            account_id=account_id,
            pipeline_id=pipeline_id,
            component_id=component_id,
        )
        return enveloped(META, data)

    async def create_alert(
        pipeline_id: PipelineIdPath,
        component_id: NodeIdPath,
        body: AlertIn,
        session: SessionDep,
        account_id: AccountId,
        sealer: SealerDep,
        policy: DestinationPolicyDep,
        segment: str = Depends(kind_of),
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
        request: Request,
        pipeline_id: PipelineIdPath,
        component_id: NodeIdPath,
        alert_id: AlertIdPath,
        account_id: AccountId,
    ) -> Response:
        state = app_state(request)
        data = await alert_service.read_alert(
            db=state.db,
            sealer=state.sealer,
            account_id=account_id,
            pipeline_id=pipeline_id,
            alert_id=alert_id,
            component_id=component_id,
        )
        return enveloped(META, data)

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

    collection = f"/{{pipeline_id}}/{prefix}/{{component_id}}/alert"
    item = collection + "/{alert_id}"
    name = "component" if documented else prefix
    one, many = Envelope[AlertOut], Envelope[list[AlertOut]]
    routes: tuple[tuple[str, Any, str, str, str, int, Any], ...] = (
        (collection, list_alerts, "GET", "list", "List a component's alerts", 200, many),
        (collection, create_alert, "POST", "create", "Create an alert on a component", 201, one),
        (item, get_alert, "GET", "get", "Get an alert of a component", 200, one),
        (item, replace_alert, "PUT", "replace", "Replace an alert of a component", 200, one),
        (item, delete_alert, "DELETE", "delete", "Delete an alert of a component", 200, one),
    )
    for path, endpoint, method, verb, summary, status, model in routes:
        router.add_api_route(
            path,
            endpoint,
            response_model=model,
            methods=[method],
            name=f"{verb}_{name}_alert",
            summary=summary,
            status_code=status,
            include_in_schema=documented,
            dependencies=[Depends(kind_of)],
        )


# The aliases' fixed segments first: the documented path would take them as its kind
# parameter and refuse them.
for _alias in ALIASES:
    _add_routes(_alias, _fixed_kind(_alias), documented=False)
_add_routes("{kind}", _documented_kind, documented=True)
