"""HTTP for the enterprise API: parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Path, Request
from fastapi.responses import Response

from tidegate import mail
from tidegate.api.envelope import Envelope, SelfLinks, envelope, link
from tidegate.api.error_models import V3_ERRORS
from tidegate.api.raw_json import envelope_meta, enveloped
from tidegate.api.session import SessionDep
from tidegate.api.text import STORABLE_TEXT
from tidegate.app_state import app_state
from tidegate.auth.dependencies import EnterpriseId
from tidegate.enterprise import schemas, service

router = APIRouter(prefix="/v3/enterprise", tags=["Enterprise"], responses=V3_ERRORS)

AccountIdPath = Annotated[
    str,
    Path(
        min_length=1, max_length=24, pattern=STORABLE_TEXT, description="The account's identifier"
    ),
]
FeaturePath = Annotated[
    str,
    Path(min_length=1, max_length=64, pattern=STORABLE_TEXT, description="A beta feature's name"),
]

ACCOUNT = "/v3/enterprise/account/{account_id}"
ACCOUNT_LINKS = SelfLinks(
    list=link("get", "/v3/enterprise/account"),
    detail=link("get", ACCOUNT),
    update=link("patch", ACCOUNT),
    replace=None,
    create=link("post", "/v3/enterprise/account"),
)
ENTERPRISE_LINKS = SelfLinks(detail=link("get", "/v3/enterprise"))
FEATURE_LINKS = SelfLinks(
    list=link("get", ACCOUNT + "/features"),
    detail=None,
    update=None,
    replace=link("put", ACCOUNT + "/features/{feature}"),
    create=None,
)


ACCOUNT_RELATED = {"enterprise": "/v3/enterprise", "features": ACCOUNT + "/features"}
# The envelope's meta of one account and of the list, serialised once for the reads.
ACCOUNT_META = envelope_meta(
    type="account", pk="account_id", links=ACCOUNT_LINKS, related=ACCOUNT_RELATED
)
ACCOUNTS_META = envelope_meta(type="account", pk="account_id", links=ACCOUNT_LINKS)
FEATURES_META = envelope_meta(type="feature", pk="feature", links=FEATURE_LINKS)


def _account(data: schemas.Account) -> Envelope[schemas.Account]:
    return envelope(
        data, type="account", pk="account_id", links=ACCOUNT_LINKS, related=ACCOUNT_RELATED
    )


@router.get("", summary="Get an Enterprise and its child Accounts")
async def get_enterprise(
    request: Request, enterprise_id: EnterpriseId
) -> Envelope[schemas.Enterprise]:
    data = await service.read_enterprise(db=app_state(request).db, enterprise_id=enterprise_id)
    return envelope(
        data,
        type="enterprise",
        pk="enterprise_id",
        links=ENTERPRISE_LINKS,
        related={"accounts": "/v3/enterprise/account", "account": ACCOUNT},
    )


# Raw rows to JSON bytes, as the account read (tests/api/test_raw_reads.py compares the
# document with the response model's rendering).
@router.get(
    "/account",
    summary="List the enterprise's child accounts",
    response_model=Envelope[list[schemas.Account]],
)
async def list_accounts(request: Request, enterprise_id: EnterpriseId) -> Response:
    data = await service.read_account_list(db=app_state(request).db, enterprise_id=enterprise_id)
    return enveloped(ACCOUNTS_META, data)


@router.post("/account", status_code=201, summary="Create a child account")
async def create_account(
    body: schemas.AccountCreate,
    request: Request,
    session: SessionDep,
    enterprise_id: EnterpriseId,
    background: BackgroundTasks,
) -> Envelope[schemas.Account]:
    settings = app_state(request).settings
    outbox: mail.Outbox = []
    account = await service.create_account(
        session=session, enterprise_id=enterprise_id, body=body, settings=settings, outbox=outbox
    )
    # The owner's invitation goes out after the commit.
    background.add_task(mail.send_all, settings, outbox)
    return _account(account)


# The hottest read: raw rows serialised straight to JSON bytes (the document is the one
# the response model describes; tests compare it with the list's rendering).
@router.get(
    "/account/{account_id}",
    summary="Get a child account",
    response_model=Envelope[schemas.Account],
)
async def get_account(
    account_id: AccountIdPath, request: Request, enterprise_id: EnterpriseId
) -> Response:
    data = await service.read_account(
        db=app_state(request).db, enterprise_id=enterprise_id, account_id=account_id
    )
    return enveloped(ACCOUNT_META, data)


@router.patch("/account/{account_id}", summary="Update, deactivate or reactivate a child account")
async def update_account(
    account_id: AccountIdPath,
    body: schemas.AccountUpdate,
    session: SessionDep,
    enterprise_id: EnterpriseId,
) -> Envelope[schemas.Account]:
    return _account(
        await service.update_account(
            session=session, enterprise_id=enterprise_id, account_id=account_id, body=body
        )
    )


@router.get(
    "/account/{account_id}/features",
    summary="Beta features of an account",
    response_model=Envelope[list[schemas.Feature]],
)
async def list_features(
    account_id: AccountIdPath, request: Request, enterprise_id: EnterpriseId
) -> Response:
    data = await service.read_features(
        db=app_state(request).db, enterprise_id=enterprise_id, account_id=account_id
    )
    return enveloped(FEATURES_META, data)


@router.put("/account/{account_id}/features/{feature}", summary="Enable a beta feature")
async def enable_feature(
    account_id: AccountIdPath,
    feature: FeaturePath,
    session: SessionDep,
    enterprise_id: EnterpriseId,
) -> Envelope[schemas.Feature]:
    data = await service.enable_feature(
        session=session, enterprise_id=enterprise_id, account_id=account_id, name=feature
    )
    return envelope(data, type="feature", pk="feature", links=FEATURE_LINKS)


@router.delete("/account/{account_id}/features/{feature}", summary="Disable a beta feature")
async def disable_feature(
    account_id: AccountIdPath,
    feature: FeaturePath,
    session: SessionDep,
    enterprise_id: EnterpriseId,
) -> Envelope[schemas.Feature]:
    data = await service.disable_feature(
        session=session, enterprise_id=enterprise_id, account_id=account_id, name=feature
    )
    return envelope(data, type="feature", pk="feature", links=FEATURE_LINKS)
