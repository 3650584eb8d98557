"""The v3 ``{meta, data}`` envelope of the spec, as models (for the OpenAPI document)
and as a builder."""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

Method = Literal[
    "acl", "bind", "checkout", "connect", "copy", "delete", "get", "head", "link", "lock",
    "m-search", "merge", "mkactivity", "mkcalendar", "mkcol", "move", "notify", "options",
    "patch", "post", "propfind", "proppatch", "purge", "put", "rebind", "report", "search",
    "source", "subscribe", "trace", "unbind", "unlink", "unlock", "unsubscribe",
]  # fmt: skip

UriTemplate = Annotated[str, Field(max_length=250, json_schema_extra={"format": "uri-template"})]


class Link(BaseModel):
    model_config = ConfigDict(extra="forbid")
    method: Method
    uri: UriTemplate


class SelfLinks(BaseModel):
    model_config = ConfigDict(extra="allow")
    list: Link | None = None
    detail: Link | None = None
    update: Link | None = None
    replace: Link | None = None
    create: Link | None = None


class Links(BaseModel):
    model_config = ConfigDict(extra="allow")
    self: SelfLinks
    related: dict[str, Any] | None = None


class Page(BaseModel):
    next: Annotated[str, Field(max_length=256)] | None = None
    previous: Annotated[str, Field(max_length=256)] | None = None


class Meta(BaseModel):
    type: Annotated[str, Field(min_length=1, max_length=50)]
    page: Page
    pk: Annotated[str, Field(max_length=50)] | None
    links: Links


DataT = TypeVar("DataT")


class Envelope(BaseModel, Generic[DataT]):
    meta: Meta
    data: DataT


def link(method: Method, uri: str) -> Link:
    return Link(method=method, uri=uri)


def envelope(
    data: DataT,
    *,
    type: str,
    pk: str | None,
    links: SelfLinks,
    related: dict[str, Any] | None = None,
) -> Envelope[DataT]:
    return Envelope[DataT](
        meta=Meta(type=type, page=Page(), pk=pk, links=Links(self=links, related=related)),
        data=data,
    )
