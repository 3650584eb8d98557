"""Request and response models of gateway routes, their access keys and signing keys.

No response model has a field that could carry a signing key, and only
``AccessKeyCreated`` carries an access key (once, when it is made).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from tidegate.api.request_model import RequestModel
from tidegate.pipelines.schemas import Title

# The spec gives `key` no length rule, so any non-empty string is a key (a long random
# one is wise: docs/api-pipelines.md). The upper bound only keeps a row's size bounded;
# HMAC accepts keys of any length.
SIGNING_KEY_MIN: int = 1
SIGNING_KEY_MAX: int = 4_096


class GatewayRouteCreate(RequestModel):
    title: Title


class GatewayRouteReplace(RequestModel):
    title: Title


class RouteSource(BaseModel):
    """An HTTP source bound to the route."""

    pipeline_id: str
    source_id: str


class GatewayRoute(BaseModel):
    id: str
    account_id: str
    title: str
    sources: list[RouteSource] = Field(description="The HTTP sources that receive its events")
    created_at: datetime
    updated_at: datetime


class AccessKeyCreate(RequestModel):
    type: Literal["generated"] = "generated"
    title: Title | None = None


class AccessKey(BaseModel):
    id: str
    account_id: str
    title: str | None
    gateway_route_id: str
    hint: str = Field(description="The last four characters of the key, to recognise it")
    created_at: datetime


class AccessKeyCreated(BaseModel):
    """The only answer that shows the key; store it now."""

    key: str
    id: str
    account_id: str
    title: str | None
    gateway_route_id: str
    created_at: datetime


class SigningKeyAdd(RequestModel):
    """The spec's request body: the signing key value to add to the route."""

    key: Annotated[
        str,
        Field(
            min_length=SIGNING_KEY_MIN,
            max_length=SIGNING_KEY_MAX,
            description=f"The HMAC secret (its UTF-8 bytes), any string of {SIGNING_KEY_MIN} to "
            f"{SIGNING_KEY_MAX} characters; a long random one is wise. Never shown again.",
        ),
    ]


class SigningKey(BaseModel):
    id: str
    account_id: str
    gateway_route_id: str
    fingerprint: str = Field(
        description="A short keyed fingerprint to tell keys apart; it reveals nothing of the key"
    )
    created_at: datetime
