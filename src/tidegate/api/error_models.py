"""The two error body shapes, as models for the OpenAPI document."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi.encoders import jsonable_encoder
from fastapi.openapi.constants import REF_TEMPLATE
from fastapi.openapi.models import Schema
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema


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


ERROR_MODELS: tuple[type[BaseModel], ...] = (V3Error, LegacyError)


def error_response(model: type[BaseModel], description: str) -> dict[str, Any]:
    """A documented error response whose body is ``model`` (one of ERROR_MODELS).

    The body's schema is a reference, and the models go into the document's components
    once (error_schemas, from tidegate.app). FastAPI's ``{"model": ...}`` would document
    the same, but it builds a TypeAdapter for every route and status, when the route is
    declared and again when the app first routes a request: some 1,300 of them, about a
    second of start-up, for the document alone (errors are answered by the handlers).
    """
    assert model in ERROR_MODELS, model
    schema = {"$ref": REF_TEMPLATE.format(model=model.__name__)}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def error_schemas() -> dict[str, Any]:
    """``{name: JSON schema}`` of the error models, to merge into ``components.schemas``,
    written as FastAPI writes a response model's: serialization mode, references to
    components, then through its document model (no nulls, numbers as its types say)."""
    _, top = models_json_schema(
        [(model, "serialization") for model in ERROR_MODELS], ref_template=REF_TEMPLATE
    )
    return {
        name: jsonable_encoder(Schema.model_validate(schema), by_alias=True, exclude_none=True)
        for name, schema in top.get("$defs", {}).items()
    }


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
    return {status: error_response(model, descriptions[status]) for status in statuses}


_COMMON = (400, 401, 403, 404, 405, 413, 415, 429, 500)
V3_ERRORS = _responses(V3Error, _COMMON)
LEGACY_ERRORS = _responses(LegacyError, _COMMON)
# Resources with a unique name or a state a request can contradict (categories, members).
LEGACY_ERRORS_WITH_CONFLICT = _responses(LegacyError, (*_COMMON, 409))
