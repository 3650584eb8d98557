"""Request and response models of browser sessions (sign-in for the web app)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from tidegate.api.request_model import RequestModel
from tidegate.auth.passwords import MAX_LENGTH

AccountIdField = Annotated[str, Field(min_length=1, max_length=24)]


class SignIn(RequestModel):
    """Either ``email`` and ``password``, or ``key`` (a service or enterprise key) with,
    for an enterprise key, the ``account_id`` to act as."""

    email: Annotated[str, Field(min_length=1, max_length=320)] | None = None
    password: Annotated[str, Field(min_length=1, max_length=MAX_LENGTH)] | None = None
    key: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    account_id: AccountIdField | None = None

    @model_validator(mode="after")
    def _one_form(self) -> SignIn:
        by_password = self.email is not None or self.password is not None
        if by_password == (self.key is not None):
            raise ValueError("send either email and password, or key")
        if by_password and (self.email is None or self.password is None):
            raise ValueError("send both email and password")
        return self


class SwitchAccount(RequestModel):
    account_id: AccountIdField


class SessionAccount(BaseModel):
    id: str
    name: str
    role: str


class SessionInfo(BaseModel):
    # user: signed in with e-mail and password; service or enterprise: with a key.
    kind: Literal["user", "service", "enterprise"]
    email: str | None = None
    account_id: str | None
    role: str | None
    accounts: list[SessionAccount]
    # Send it back as X-CSRF-Token on every unsafe request (it is also the
    # tidegate_csrf cookie); only in the answer to sign-in.
    csrf_token: str | None = None


class SignedOut(BaseModel):
    ok: bool = True
