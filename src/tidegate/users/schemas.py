"""Request and response models of invitations and password resets."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, EmailStr, Field

from tidegate.api.request_model import RequestModel
from tidegate.auth.passwords import MAX_LENGTH, MIN_LENGTH

Password = Annotated[str, Field(min_length=MIN_LENGTH, max_length=MAX_LENGTH)]
Token = Annotated[str, Field(min_length=1, max_length=200)]


class TokenAndPassword(RequestModel):
    token: Token
    password: Password


class PasswordResetRequest(RequestModel):
    email: Annotated[EmailStr, Field(max_length=320)]


class Done(BaseModel):
    ok: bool = True
    email: str | None = None
