"""Request and response models of gateway routes, their access keys and signing keys.

No response model has a field that could carry a signing key, and only
``AccessKeyCreated`` carries an access key (once, when it is made).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from tidegate.api.request_model import RequestModel
from tidegate.pipelines.schemas import Description, ResourceId, Title

# The spec gives `key` no length rule, so any non-empty string is a key (a long random
# one is wise: docs/api-pipelines.md). The upper bound only keeps a row's size bounded;
# HMAC accepts keys of any length.
SIGNING_KEY_MIN: int = 1
SIGNING_KEY_MAX: int = 4_096


# The platform's source types that receive pushed events (its "shared sources").
RouteType = Literal[
    "http",
    "splunk-hec",
    "kinesis-firehose",
    "fluent",
    "logstash",
    "mezmo-agent",
    "mezmo-datadog-source",
    "webhook",
    "prometheus-remote-write",
    "open-telemetry-metrics",
    "open-telemetry-logs",
    "open-telemetry-traces",
]
ConsumerId = Annotated[str, Field(max_length=250, pattern=r"^[^\x00]*$")]


class GatewayRouteCreate(RequestModel):
    """The platform's clients send ``id: ""`` and ``consumer_id: ""`` on create: an
    empty ``id`` is ignored (ids are made here); ``consumer_id`` is stored and echoed."""

    id: Literal[""] | None = Field(default=None, description="Empty or absent")
    consumer_id: ConsumerId | None = None
    title: Title
    description: Description | None = None
    type: RouteType = Field(default="http", description="The push source type it receives")


class GatewayRouteReplace(RequestModel):
    """PUT: the whole route (absent ``description``/``consumer_id`` are cleared); ``id``,
    when not empty, must be the path's."""

    id: ResourceId | Literal[""] | None = None
    consumer_id: ConsumerId | None = None
    title: Title
    description: Description | None = None
    type: RouteType = "http"


class RouteSource(BaseModel):
    """An HTTP source bound to the route."""

    pipeline_id: str
    source_id: str


class GatewayRoute(BaseModel):
    id: str
    account_id: str
    consumer_id: str
    title: str
    description: str | None
    type: str
    sources: list[RouteSource] = Field(description="The HTTP sources that receive its events")
    created_at: datetime
    updated_at: datetime


class AccessKeyCreate(RequestModel):
    """The platform's clients send ``{id: "", title, gateway_route_id, type}``: an empty
    ``id`` is ignored, ``gateway_route_id`` (when given) must be the path's."""

    id: Literal[""] | None = None
    type: Literal["generated"] = "generated"
    title: Title | None = None
    gateway_route_id: ResourceId | None = None


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
