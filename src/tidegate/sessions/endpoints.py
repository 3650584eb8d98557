"""HTTP for browser sessions: ``/v1/auth/session`` (sign in, who am I, switch account,
sign out). The cookies are set here; the rules are in the service."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response

from tidegate.api.envelope import Envelope, SelfLinks, link
from tidegate.api.error_models import LEGACY_ERRORS, V3_ERRORS
from tidegate.api.path_params import id_path
from tidegate.api.raw_json import envelope_meta, enveloped, json_response
from tidegate.api.session import SessionDep
from tidegate.app_state import app_state
from tidegate.auth import repository as auth_repository
from tidegate.auth.client_address import client_address
from tidegate.auth.dependencies import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    CurrentPrincipal,
    authenticate,
    current_session,
    key_principal,
    user_principal,
)
from tidegate.auth.permissions import requires
from tidegate.auth.principal import Principal
from tidegate.auth.roles import Permission
from tidegate.enterprise import schemas as enterprise_schemas
from tidegate.errors import NotFound, Unauthorized
from tidegate.sessions import schemas, service

router = APIRouter(prefix="/v1/auth/session", tags=["Sessions"], responses=LEGACY_ERRORS)

CurrentSession = Annotated[auth_repository.SessionRecord, Depends(current_session)]


def _set_cookies(request: Request, response: Response, new: service.NewSession) -> None:
    settings = app_state(request).settings
    secure = settings.public_url.lower().startswith("https://")
    max_age = int(settings.session_max_age_s)
    response.set_cookie(
        SESSION_COOKIE,
        new.token,
        max_age=max_age,
        path="/",
        secure=secure,
        httponly=True,
        samesite="lax",
    )
    # Readable by the page's script, which echoes it in X-CSRF-Token.
    response.set_cookie(
        CSRF_COOKIE,
        new.info.csrf_token or "",
        max_age=max_age,
        path="/",
        secure=secure,
        httponly=False,
        samesite="lax",
    )


@router.post("", summary="Sign in with e-mail and password, or with a key; sets the cookies")
async def sign_in(
    body: schemas.SignIn, request: Request, response: Response, session: SessionDep
) -> schemas.SessionInfo:
    state = app_state(request)
    if body.key is not None:
        new = await service.sign_in_with_key(
            session=session,
            state=state,
            key=body.key,
            account_id=body.account_id,
            address=client_address(request),
        )
    else:
        assert body.email is not None
        assert body.password is not None
        new = await service.sign_in_with_password(
            session=session,
            state=state,
            email=body.email,
            password=body.password,
            address=client_address(request),
        )
    _set_cookies(request, response, new)
    return new.info


@router.get(
    "",
    summary="Who am I: the credential's kind, e-mail, account, role, accounts",
    dependencies=[Depends(authenticate), requires(Permission.SIGNED_IN)],
    response_model=schemas.SessionInfo,
)
async def whoami(request: Request, principal: CurrentPrincipal) -> Response:
    db = app_state(request).db
    return json_response(await service.read_whoami(db=db, principal=principal))


@router.put("/account", summary="Act as another of the session's accounts")
async def switch_account(
    body: schemas.SwitchAccount,
    request: Request,
    record: CurrentSession,
    session: SessionDep,
) -> schemas.SessionInfo:
    db = app_state(request).db
    key = None
    if record.key_id is not None:
        key = await auth_repository.key_by_id(db=db, key_id=record.key_id)
        if key is None:
            raise Unauthorized("The key this session signed in with was deleted")
    await service.switch_account(
        session=session, session_record=record, key=key, account_id=body.account_id
    )
    if key is not None:
        principal = await key_principal(
            request, key=key, account_id=body.account_id, delegated=False, session_id=record.id
        )
    else:
        assert record.user_id is not None
        principal = await user_principal(
            request, user_id=record.user_id, account_id=body.account_id, session_id=record.id
        )
    return await service.whoami(session=session, principal=principal)


@router.delete("", summary="Sign out: the session ends and the cookies are cleared")
async def sign_out(
    request: Request, response: Response, record: CurrentSession, session: SessionDep
) -> schemas.SignedOut:
    await service.sign_out(session=session, session_id=record.id)
    response.delete_cookie(SESSION_COOKIE, path="/")
    response.delete_cookie(CSRF_COOKIE, path="/")
    return schemas.SignedOut()


# mzm reads the accounts the credential may act in, and which one it acts as (header).
account_router = APIRouter(
    prefix="/v3/auth/account",
    tags=["Sessions"],
    dependencies=[Depends(authenticate), requires(Permission.SIGNED_IN)],
    responses=V3_ERRORS,
)
ACTIVE_ACCOUNT_HEADER = "x-auth-account-short-id"
ACCOUNT_LINKS = SelfLinks(
    list=link("get", "/v3/auth/account"), detail=link("get", "/v3/auth/account/{account}")
)


ACCOUNT_META = envelope_meta(type="account", pk="account", links=ACCOUNT_LINKS)


def _marked(response: Response, principal: Principal, accounts: list[dict[str, Any]]) -> Response:
    """``response`` with the header naming the account the credential acts as, when it
    is among ``accounts``."""
    active = next((a for a in accounts if a["account_id"] == principal.account_id), None)
    if active is not None:
        response.headers[ACTIVE_ACCOUNT_HEADER] = active["account"]
    return response


@account_router.get(
    "",
    summary="The accounts these credentials may act in",
    response_model=Envelope[list[enterprise_schemas.Account]],
)
async def list_accounts(request: Request, principal: CurrentPrincipal) -> Response:
    db = app_state(request).db
    accounts = await service.read_accounts_in_detail(db=db, principal=principal)
    return _marked(enveloped(ACCOUNT_META, accounts), principal, accounts)


@account_router.get(
    "/{account}",
    summary="One of the accounts these credentials may act in",
    response_model=Envelope[enterprise_schemas.Account],
)
async def get_account(
    request: Request,
    account: Annotated[str, id_path(alias="account", description="Short or long account id")],
    principal: CurrentPrincipal,
) -> Response:
    db = app_state(request).db
    accounts = await service.read_accounts_in_detail(db=db, principal=principal)
    found = next((a for a in accounts if account in (a["account"], a["account_id"])), None)
    if found is None:
        raise NotFound()
    return _marked(enveloped(ACCOUNT_META, found), principal, [found])
