"""Request and response models of the enterprise API, with the spec's field rules."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, EmailStr, Field

from tidegate.api.request_model import RequestModel, integral
from tidegate.api.text import STORABLE_TEXT
from tidegate.types import AccountStatus

Email = Annotated[str, Field(max_length=320, json_schema_extra={"format": "email"})]
Retention = Annotated[int, Field(ge=0, le=90, json_schema_extra={"format": "int32"}), integral]
DateTime35 = Annotated[datetime, Field(json_schema_extra={"maxLength": 35})]
PlanType = Annotated[str, Field(min_length=4, max_length=50)]
PlanTypeIn = Annotated[str, Field(min_length=4, max_length=50, pattern=STORABLE_TEXT)]
Company = Annotated[str, Field(min_length=1, max_length=250, pattern=STORABLE_TEXT)]
ExternalId = Annotated[str, Field(max_length=255, pattern=STORABLE_TEXT)]


class Plan(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: PlanType


class Quota(BaseModel):
    model_config = ConfigDict(extra="allow")
    retention: Retention


class AccountOwner(BaseModel):
    user_id: Annotated[str, Field(max_length=24)]
    firstname: Annotated[str, Field(max_length=50)]
    lastname: Annotated[str, Field(max_length=50)]
    email: Email
    name: Annotated[str, Field(max_length=125)]
    accounts: Annotated[list[Annotated[str, Field(max_length=20)]], Field(max_length=200)]
    enterprise_ids: Annotated[list[Annotated[str, Field(max_length=20)]], Field(max_length=50)]
    verified: bool


class Account(BaseModel):
    account_id: Annotated[str, Field(max_length=24)]
    enterprise_id: Annotated[str, Field(max_length=24)]
    account: Annotated[str, Field(max_length=20)]
    company: Annotated[str, Field(max_length=250)]
    deactivated: DateTime35 | None
    owneremail: Email
    external_id: Annotated[str, Field(max_length=255)] | None = None
    plan: Plan
    quota: Quota
    retention: Retention
    status: AccountStatus
    created: DateTime35
    meta: dict[str, Any]
    owner: AccountOwner


class Enterprise(BaseModel):
    enterprise_id: str
    name: str
    status: Literal["active", "deactivated"]
    parent_enterprise_id: str | None
    partner: str | None
    accounts: list[Account]


class PlanIn(RequestModel):
    type: PlanTypeIn


class AccountCreate(RequestModel):
    company: Company
    owneremail: Annotated[EmailStr, Field(max_length=320)]
    external_id: ExternalId | None = None
    plan: PlanIn | None = None
    retention: Retention = 30
    enable_syslog: bool = False


class AccountUpdate(RequestModel):
    """PATCH body: only the fields present change; ``external_id`` may be set to null."""

    company: Company | None = None
    external_id: ExternalId | None = None
    plan: PlanIn | None = None
    retention: Retention | None = None
    status: AccountStatus | None = None
    # Syslog ingestion for the account (docs/syslog.md); set at creation, changed here.
    enable_syslog: bool | None = None


class Feature(BaseModel):
    feature: str
    enabled: bool
    account_id: str
    created: datetime | None
