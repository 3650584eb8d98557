"""HTTP for logdna-cli: ``POST /login`` (Basic e-mail:password), ``GET /info`` and
``GET /orgs`` (any credential; the CLI signs its query)."""

from __future__ import annotations

import base64
import binascii

from fastapi import APIRouter, Depends, Request

from tidegate.api.error_models import LEGACY_ERRORS
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


@router.get("/info", summary="logdna-cli's whoami: the signed-in user and account")
async def info(principal: CurrentPrincipal, session: SessionDep) -> schemas.Info:
    return await service.info(session=session, principal=principal)


@router.get("/orgs", summary="logdna-cli's account list (for `logdna switch`)")
async def orgs(principal: CurrentPrincipal, session: SessionDep) -> list[schemas.Org]:
    return await service.orgs(session=session, principal=principal)
