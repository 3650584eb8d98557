"""HTTP for logdna-cli: ``POST /login`` (Basic e-mail:password), ``GET /info`` and
``GET /orgs`` (any credential; the CLI signs its query)."""

from __future__ import annotations

import base64
import binascii

from fastapi import APIRouter, Depends, Request, Response

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth.client_address import client_address
from tidegate.auth.dependencies import CurrentPrincipal, authenticate
from tidegate.auth.permissions import requires
from tidegate.auth.roles import Permission
from tidegate.cli_auth import schemas, service
from tidegate.errors import Unauthorized

login_router = APIRouter(tags=["logdna-cli"], responses=LEGACY_ERRORS)
router = APIRouter(
    tags=["logdna-cli"],
    responses=LEGACY_ERRORS,
    dependencies=[Depends(authenticate), requires(Permission.SIGNED_IN)],
)


def _basic(request: Request) -> tuple[str, str]:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic" or not value.strip():
        raise Unauthorized("Send the e-mail and password as HTTP Basic credentials")
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise Unauthorized("Malformed Basic credentials") from None
    email, sep, password = decoded.partition(":")
    if not sep or not email or not password:
        raise Unauthorized("Send the e-mail and password as HTTP Basic credentials")
    return email, password


@login_router.post("/login", summary="logdna-cli's sign-in: the user's CLI token and accounts")
async def login(request: Request, session: SessionDep) -> schemas.Login:
    email, password = _basic(request)
    return await service.login(
        session=session,
        state=app_state(request),
        email=email,
        password=password,
        address=client_address(request),
    )


@router.get(
    "/info",
    summary="logdna-cli's whoami: the signed-in user and account",
    response_model=schemas.Info,
)
async def info(request: Request, principal: CurrentPrincipal) -> Response:
    db = app_state(request).db
    return json_response(await service.read_info(db=db, principal=principal))


@router.get(
    "/orgs",
    summary="logdna-cli's account list (for `logdna switch`)",
    response_model=list[schemas.Org],
)
async def orgs(request: Request, principal: CurrentPrincipal) -> Response:
    db = app_state(request).db
    return json_response(await service.read_orgs(db=db, principal=principal))
