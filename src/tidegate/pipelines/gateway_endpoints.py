"""HTTP for gateway routes, their access keys and signing keys.

Registered before the pipeline router: ``/v3/pipeline/gateway-route`` must not be taken
for ``/v3/pipeline/{pipeline_id}``.
"""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Path, Request, Response

from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.api.raw_json import envelope_meta, enveloped
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId
from tidegate.pipelines import gateway_schemas as schemas
from tidegate.pipelines import gateway_service as service
from tidegate.pipelines.paths import ERRORS, ID_PATTERN

router = APIRouter(prefix="/v3/pipeline/gateway-route", tags=["Gateway routes"], responses=ERRORS)

RouteIdPath = Annotated[
    str,
    Path(min_length=1, max_length=36, pattern=ID_PATTERN, description="The gateway route's id"),
]
KeyIdPath = Annotated[
    str, Path(min_length=1, max_length=36, pattern=ID_PATTERN, description="The key's id")
]

ROUTES = "/v3/pipeline/gateway-route"
ROUTE = ROUTES + "/{gateway_route_id}"
ROUTE_LINKS: Final = SelfLinks(
    list=link("get", ROUTES),
    detail=link("get", ROUTE),
    update=None,
    replace=link("put", ROUTE),
    create=link("post", ROUTES),
)
ROUTE_RELATED: Final = {
    "access_keys": ROUTE + "/access-key",
    "signing_keys": ROUTE + "/signing-key",
    "ingest": "/gateway/{gateway_route_id}",
}
ACCESS_KEY_LINKS: Final = SelfLinks(
    list=link("get", ROUTE + "/access-key"),
    detail=None,
    update=None,
    replace=None,
    create=link("post", ROUTE + "/access-key"),
)
SIGNING_KEY_LINKS: Final = SelfLinks(
    list=link("get", ROUTE + "/signing-key"),
    detail=None,
    update=None,
    replace=None,
    create=link("put", ROUTE + "/signing-key"),
)
KEY_RELATED: Final = {"gateway_route": ROUTE}


ROUTES_META: Final = envelope_meta(type="gateway route", pk="id", links=ROUTE_LINKS)
ROUTE_META: Final = envelope_meta(
    type="gateway route", pk="id", links=ROUTE_LINKS, related=ROUTE_RELATED
)

ACCESS_KEYS_META: Final = envelope_meta(
    type="access key", pk="id", links=ACCESS_KEY_LINKS, related=KEY_RELATED
)
SIGNING_KEYS_META: Final = envelope_meta(
    type="signing key", pk="id", links=SIGNING_KEY_LINKS, related=KEY_RELATED
)


def _route(data: schemas.GatewayRoute) -> Envelope[schemas.GatewayRoute]:
    return envelope(data, type="gateway route", pk="id", links=ROUTE_LINKS, related=ROUTE_RELATED)


# Routes


@router.get(
    "",
    summary="List the account's gateway routes",
    response_model=Envelope[list[schemas.GatewayRoute]],
)
async def list_routes(request: Request, account_id: AccountId) -> Response:
    data = await service.list_routes(db=app_state(request).db, account_id=account_id)
    return enveloped(ROUTES_META, data)


@router.post("", status_code=201, summary="Create a gateway route")
async def create_route(
    body: schemas.GatewayRouteCreate, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.GatewayRoute]:
    return _route(await service.create_route(session=session, account_id=account_id, body=body))


@router.get(
    "/{gateway_route_id}",
    summary="Get a gateway route and the sources bound to it",
    response_model=Envelope[schemas.GatewayRoute],
)
async def get_route(
    gateway_route_id: RouteIdPath, request: Request, account_id: AccountId
) -> Response:
    db = app_state(request).db
    data = await service.read_route(db=db, account_id=account_id, gateway_route_id=gateway_route_id)
    return enveloped(ROUTE_META, data)


@router.put("/{gateway_route_id}", summary="Replace a gateway route's title")
async def replace_route(
    gateway_route_id: RouteIdPath,
    body: schemas.GatewayRouteReplace,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.GatewayRoute]:
    return _route(
        await service.replace_route(
            session=session, account_id=account_id, gateway_route_id=gateway_route_id, body=body
        )
    )


@router.delete(
    "/{gateway_route_id}",
    summary="Delete a gateway route with its keys (refused while sources use it)",
)
async def delete_route(
    gateway_route_id: RouteIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.GatewayRoute]:
    return _route(
        await service.delete_route(
            session=session, account_id=account_id, gateway_route_id=gateway_route_id
        )
    )


# Access keys


@router.get(
    "/{gateway_route_id}/access-key",
    summary="List a route's access keys (no secrets)",
    response_model=Envelope[list[schemas.AccessKey]],
)
async def list_access_keys(
    gateway_route_id: RouteIdPath, request: Request, account_id: AccountId
) -> Response:
    data = await service.list_access_keys(
        db=app_state(request).db, account_id=account_id, gateway_route_id=gateway_route_id
    )
    return enveloped(ACCESS_KEYS_META, data)


@router.post(
    "/{gateway_route_id}/access-key",
    status_code=201,
    summary="Generate an access key; the answer is the only time the key is shown",
)
async def create_access_key(
    gateway_route_id: RouteIdPath,
    body: schemas.AccessKeyCreate,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.AccessKeyCreated]:
    data = await service.create_access_key(
        session=session, account_id=account_id, gateway_route_id=gateway_route_id, body=body
    )
    return envelope(data, type="access key", pk="id", links=ACCESS_KEY_LINKS, related=KEY_RELATED)


@router.delete("/{gateway_route_id}/access-key/{key_id}", summary="Delete an access key")
async def delete_access_key(
    gateway_route_id: RouteIdPath, key_id: KeyIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[schemas.AccessKey]:
    data = await service.delete_access_key(
        session=session, account_id=account_id, gateway_route_id=gateway_route_id, key_id=key_id
    )
    return envelope(data, type="access key", pk="id", links=ACCESS_KEY_LINKS, related=KEY_RELATED)


# Signing keys


@router.put(
    "/{gateway_route_id}/signing-key",
    status_code=201,
    summary="Add a signing key to a gateway route",
    description="Adds an HMAC signing key (a route may hold several, for rotation). "
    "201 when added; 200 when the route already holds this key. The key is never "
    "shown again.",
    responses={200: {"model": Envelope[schemas.SigningKey], "description": "Already held"}},
)
async def add_signing_key(
    gateway_route_id: RouteIdPath,
    body: schemas.SigningKeyAdd,
    request: Request,
    response: Response,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.SigningKey]:
    data, created = await service.add_signing_key(
        session=session,
        sealer=app_state(request).sealer,
        account_id=account_id,
        gateway_route_id=gateway_route_id,
        body=body,
    )
    if not created:
        response.status_code = 200
    return envelope(data, type="signing key", pk="id", links=SIGNING_KEY_LINKS, related=KEY_RELATED)


@router.get(
    "/{gateway_route_id}/signing-key",
    summary="List a route's signing keys (no secrets)",
    response_model=Envelope[list[schemas.SigningKey]],
)
async def list_signing_keys(
    gateway_route_id: RouteIdPath, request: Request, account_id: AccountId
) -> Response:
    data = await service.list_signing_keys(
        db=app_state(request).db, account_id=account_id, gateway_route_id=gateway_route_id
    )
    return enveloped(SIGNING_KEYS_META, data)


@router.delete("/{gateway_route_id}/signing-key/{signing_key_id}", summary="Remove a signing key")
async def delete_signing_key(
    gateway_route_id: RouteIdPath,
    signing_key_id: KeyIdPath,
    session: SessionDep,
    account_id: AccountId,
) -> Envelope[schemas.SigningKey]:
    data = await service.delete_signing_key(
        session=session,
        account_id=account_id,
        gateway_route_id=gateway_route_id,
        signing_key_id=signing_key_id,
    )
    return envelope(data, type="signing key", pk="id", links=SIGNING_KEY_LINKS, related=KEY_RELATED)
