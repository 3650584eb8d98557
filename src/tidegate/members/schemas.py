"""Request and response models of the members API (``/v1/config/members``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, EmailStr, Field

RoleName = Literal["owner", "admin", "member", "readonly"]
GroupIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=24)]], Field(max_length=100)
]


class MemberCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: Annotated[EmailStr, Field(max_length=320)]
    role: RoleName
    groups: GroupIds = Field(default_factory=list)


class MemberUpdate(BaseModel):
    """PUT body: ``role`` and ``groups``; a field left out stays as it is."""

    model_config = ConfigDict(extra="forbid")
    email: Annotated[str, Field(max_length=320)] | None = Field(
        default=None, description="Read-only: accepted and ignored"
    )
    role: RoleName | None = None
    groups: GroupIds | None = None


class Invitation(BaseModel):
    # The link to set a first password; also e-mailed when SMTP is configured.
    link: str
    emailed: bool


class Member(BaseModel):
    email: str
    role: RoleName
    groups: list[str]
    # Whether the person has set a password yet.
    pending: bool
    # Only in the answer that made a new invitation.
    invitation: Invitation | None = None
