"""What logdna-cli reads from ``POST /login``, ``GET /info`` and ``GET /orgs``."""

from __future__ import annotations

from pydantic import BaseModel


class Login(BaseModel):
    email: str
    # The token the CLI signs its queries with (HMAC-SHA256, tidegate.auth.signed_query).
    token: str
    # Account ids; the CLI signs as the first (``id`` in its queries).
    accounts: list[str]
    # Ingestion keys and service keys: tidegate gives none to a person's CLI, whose
    # signature already carries their role (a service key would act as owner).
    keys: list[str]
    servicekeys: list[str]


class Info(BaseModel):
    email: str | None
    account_id: str | None
    account: str | None
    role: str | None
    accounts: list[str]


class Org(BaseModel):
    id: str
    name: str
    role: str
    servicekeys: list[str]
