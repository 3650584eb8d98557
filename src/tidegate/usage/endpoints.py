"""HTTP for usage in the platform's shapes: ``/v1/usage/{kind}[/{name}]`` (shares of
lines) and ``/v2/usage[/{kind}[/{name}]]`` (bytes), and ``GET /v1/usage`` (the counters per UTC
day that ingestion keeps)."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from tidegate.api.error_models import LEGACY_ERRORS
from tidegate.api.raw_json import json_response
from tidegate.api.session import SessionDep
from tidegate.api.text import STORABLE_TEXT
from tidegate.app_state import app_state
from tidegate.auth.dependencies import AccountId, CurrentPrincipal
from tidegate.clock import now_ms
from tidegate.errors import ValidationFailed
from tidegate.ingest.service import utc_today
from tidegate.usage import schemas, service

v1_router = APIRouter(prefix="/v1/usage", tags=["Usage"], responses=LEGACY_ERRORS)
v2_router = APIRouter(prefix="/v2/usage", tags=["Usage"], responses=LEGACY_ERRORS)

Text = str | None
KindPath = Annotated[schemas.Kind, Path(description="apps, hosts or tags")]
NamePath = Annotated[
    str,
    Path(min_length=1, max_length=512, pattern=STORABLE_TEXT, description="An app, host or tag"),
]
V1From = Annotated[
    Text, Query(alias="from", description="Start, epoch s or ms (default: to - 30 days)")
]
V1To = Annotated[Text, Query(description="End, epoch s or ms (default: now)")]
V2From = Annotated[
    Text,
    Query(alias="from", description="First day: ISO 8601 date-time or date (default: to - 29 d)"),
]
V2To = Annotated[Text, Query(description="Last day: ISO 8601 date-time or date (default: today)")]
Limit = Annotated[
    Text,
    Query(description=f"Most rows, 1 to {schemas.MAX_LIMIT} (default {schemas.DEFAULT_LIMIT})"),
]


def _scope(
    request: Request, session: SessionDep, account_id: AccountId, principal: CurrentPrincipal
) -> service.UsageScope:
    # A person in groups counts only their scope's lines (docs/isolation.md).
    return service.UsageScope(app_state(request).db, session, account_id, principal.scope)


Scope = Annotated[service.UsageScope, Depends(_scope)]


@v1_router.get("/{kind}", summary="Each app, host or tag's share of the lines (most first)")
async def shares(
    kind: KindPath, scope: Scope, from_: V1From = None, to: V1To = None, limit: Limit = None
) -> list[schemas.ShareOfLines]:
    period = schemas.v1_period(from_, to, now_ms=now_ms())
    return await service.shares(scope=scope, kind=kind, period=period, limit=schemas.limit(limit))


@v1_router.get("/{kind}/{name}", summary="One app, host or tag's share of the lines")
async def share_of(
    kind: KindPath, name: NamePath, scope: Scope, from_: V1From = None, to: V1To = None
) -> schemas.ShareOfLines:
    period = schemas.v1_period(from_, to, now_ms=now_ms())
    return await service.share_of(scope=scope, kind=kind, period=period, name=name)


@v2_router.get("", summary="Bytes stored by the account over whole UTC days")
async def account_bytes(
    scope: Scope, from_: V2From = None, to: V2To = None
) -> schemas.AccountUsageV2:
    period = schemas.v2_period(from_, to, today=utc_today())
    return await service.account_bytes(scope=scope, period=period)


@v2_router.get("/{kind}", summary="Bytes stored per app, host or tag (most first)")
async def kind_bytes(
    kind: KindPath, scope: Scope, from_: V2From = None, to: V2To = None, limit: Limit = None
) -> schemas.KindUsageV2:
    period = schemas.v2_period(from_, to, today=utc_today())
    return await service.kind_bytes(
        scope=scope, kind=kind, period=period, limit=schemas.limit(limit)
    )


@v2_router.get("/{kind}/{name}", summary="Bytes stored by one app, host or tag")
async def name_bytes(
    kind: KindPath, name: NamePath, scope: Scope, from_: V2From = None, to: V2To = None
) -> schemas.NameUsageV2:
    period = schemas.v2_period(from_, to, today=utc_today())
    return await service.name_bytes(scope=scope, kind=kind, period=period, name=name)


def _day_query(description: str, alias: str | None = None) -> Any:
    # A string with a pattern, not ``date``: pydantic's lax date also takes numbers
    # (``to=0`` would be 1970-01-01), and the API takes calendar days only.
    return Query(
        alias=alias,
        description=description,
        pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
        json_schema_extra={"format": "date"},
    )


def _day(value: str | None, name: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError as error:
        raise ValidationFailed(f"{name}: not a calendar day", context="querystring") from error


@v1_router.get(
    "",
    summary="The account's usage per UTC day",
    response_model=schemas.Usage,
    response_model_by_alias=True,
)
async def usage(
    request: Request,
    account_id: AccountId,
    from_: Annotated[
        str | None, _day_query("First day (UTC), default: to - 29 days", alias="from")
    ] = None,
    to: Annotated[str | None, _day_query("Last day (UTC), default: today")] = None,
) -> Response:
    data = await service.read_usage_report(
        db=app_state(request).db,
        account_id=account_id,
        first=_day(from_, "from"),
        last=_day(to, "to"),
        today=utc_today(),
    )
    return json_response(data)
