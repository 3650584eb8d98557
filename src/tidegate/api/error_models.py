"""The two error body shapes, as models for the OpenAPI document."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class V3ErrorItem(BaseModel):
    model_config = ConfigDict(extra="allow")
    keyword: Annotated[str, Field(max_length=30)]
    instance_path: Annotated[str, Field(max_length=200)] | None = None
    schema_path: Annotated[str, Field(max_length=200)] | None = None
    params: dict[str, Any]
    property_name: Annotated[str, Field(max_length=100)] | None = None
    message: Annotated[str, Field(max_length=200)]


class V3Error(BaseModel):
    status: Annotated[int, Field(ge=300, le=599, json_schema_extra={"format": "int32"})]
    context: Literal["body", "querystring", "params", "headers"] | None = None
    code: Annotated[str, Field(max_length=35)]
    message: Annotated[str, Field(max_length=200)]
    errors: Annotated[list[V3ErrorItem], Field(max_length=200)] = []


class LegacyError(BaseModel):
    error: str
    code: str
    status: Literal["error"]


def _responses(
    model: type[BaseModel], statuses: tuple[int, ...]
) -> dict[int | str, dict[str, Any]]:
    descriptions = {
        400: "Bad request or failed validation",
        401: "Missing or invalid credentials",
        403: "Credentials of the wrong kind",
        404: "Not found",
        405: "Method not allowed",
        409: "Conflict",
        413: "Request body too large",
        415: "Unsupported media type",
        429: "Rate limited",
        500: "Internal error",
    }
    return {status: {"model": model, "description": descriptions[status]} for status in statuses}


_COMMON = (400, 401, 403, 404, 405, 413, 415, 429, 500)
V3_ERRORS = _responses(V3Error, _COMMON)
LEGACY_ERRORS = _responses(LegacyError, _COMMON)
# Resources with a unique name or a state a request can contradict (categories, members).
LEGACY_ERRORS_WITH_CONFLICT = _responses(LegacyError, (*_COMMON, 409))
