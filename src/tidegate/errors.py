"""The one error hierarchy. Endpoints and services raise these; one handler renders them.

Each class knows its HTTP status and its code in both body shapes: the spec's v3 shape
(``status, context, code, message, errors``) and the legacy v1 shape
(``error, code, status: "error"``). Which shape renders is decided by the API family of
the request path (``/v3/...`` or everything else), so that a NotFound raised by shared
code answers correctly under either family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

Context = Literal["body", "querystring", "params", "headers"]


@dataclass(slots=True)
class ErrorItem:
    """One failed rule, as in the spec's ``errors[]`` (AJV vocabulary for ``keyword``)."""

    keyword: str
    message: str
    instance_path: str | None = None
    schema_path: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    property_name: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "keyword": self.keyword[:30],
            "instance_path": _capped(self.instance_path, 200),
            "schema_path": _capped(self.schema_path, 200),
            "params": self.params,
            "property_name": _capped(self.property_name, 100),
            "message": self.message[:200],
        }


def _capped(text: str | None, limit: int) -> str | None:
    return None if text is None else text[:limit]


class ApiError(Exception):
    status: ClassVar[int] = 500
    code: ClassVar[str] = "EINTERNAL"
    legacy_code: ClassVar[str] = "ServerError"
    default_message: ClassVar[str] = "Internal server error"

    def __init__(
        self,
        message: str | None = None,
        *,
        context: Context | None = None,
        errors: list[ErrorItem] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.context = context
        self.errors = errors or []
        self.headers = headers or {}
        super().__init__(self.message)

    def v3_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "status": self.status,
            "code": self.code,
            "message": self.message[:200],
            "errors": [item.as_json() for item in self.errors[:200]],
        }
        if self.context is not None:
            body["context"] = self.context
        return body

    def legacy_body(self) -> dict[str, Any]:
        text = self.message
        if self.errors:
            text = "; ".join(_describe(item) for item in self.errors[:20])
        return {"error": text, "code": self.legacy_code, "status": "error"}


def _describe(item: ErrorItem) -> str:
    where = (item.instance_path or "").lstrip("/").replace("/", ".")
    if item.keyword == "required" and "missingProperty" in item.params:
        return item.message
    if item.keyword == "additionalProperties" and "additionalProperty" in item.params:
        name = item.params["additionalProperty"]
        return f"{where + '.' if where else ''}{name}: unknown field"
    return f"{where}: {item.message}" if where else item.message


class BadRequest(ApiError):
    status = 400
    code = "EBADREQUEST"
    legacy_code = "BadRequest"
    default_message = "Bad or missing parameters."


class ValidationFailed(BadRequest):
    code = "EVALIDATION"
    default_message = "Request failed validation"


class MalformedJson(BadRequest):
    code = "EJSONPARSE"
    default_message = "Request body is not valid JSON"


class Unauthorized(ApiError):
    status = 401
    code = "EUNAUTHORIZED"
    legacy_code = "Unauthorized"
    default_message = "Missing or invalid credentials"


class Forbidden(ApiError):
    status = 403
    code = "EFORBIDDEN"
    legacy_code = "Forbidden"
    default_message = "These credentials may not perform this operation"


class NotFound(ApiError):
    status = 404
    code = "ENOTFOUND"
    legacy_code = "NotFound"
    default_message = "Resource Not Found"


class MethodNotAllowed(ApiError):
    status = 405
    code = "EMETHOD"
    legacy_code = "MethodNotAllowed"
    default_message = "Method not allowed"


class Conflict(ApiError):
    status = 409
    code = "ECONFLICT"
    legacy_code = "Conflict"
    default_message = "Conflict"


class PayloadTooLarge(ApiError):
    status = 413
    code = "ETOOLARGE"
    legacy_code = "PayloadTooLarge"
    default_message = "Request body is too large"


class RequestTimeout(ApiError):
    status = 408
    code = "ETIMEOUT"
    legacy_code = "RequestTimeout"
    default_message = "The request body did not arrive in time"


class HeadersTooLarge(ApiError):
    status = 431
    code = "EHEADERSTOOLARGE"
    legacy_code = "RequestHeaderFieldsTooLarge"
    default_message = "Request line and headers are too large"


class UnsupportedMediaType(ApiError):
    status = 415
    code = "EMEDIATYPE"
    legacy_code = "UnsupportedMediaType"
    default_message = "Content-Type must be application/json"


class RateLimited(ApiError):
    status = 429
    code = "ETOOMANY"
    legacy_code = "TooManyRequests"
    default_message = "Rate limit exceeded"


class ServiceUnavailable(ApiError):
    status = 503
    code = "EUNAVAILABLE"
    legacy_code = "ServiceUnavailable"
    default_message = "Service temporarily unavailable"


_BY_STATUS: dict[int, type[ApiError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        Conflict,
        PayloadTooLarge,
        UnsupportedMediaType,
        RateLimited,
        ServiceUnavailable,
    )
}


def error_for_status(status: int, message: str | None = None) -> ApiError:
    """The hierarchy's error for a bare HTTP status raised by the framework."""
    cls = _BY_STATUS.get(status)
    if cls is not None:
        return cls(message)
    error = ApiError(message or "HTTP error")
    error.status = status  # type: ignore[misc]
    error.code = "EBADREQUEST" if status < 500 else "EINTERNAL"  # type: ignore[misc]
    error.legacy_code = "BadRequest" if status < 500 else "ServerError"  # type: ignore[misc]
    return error


class ReadBudgetExceeded(ApiError):
    """A read of stored lines did more work than one read may (docs/fair-reads.md)."""

    status = 422
    code = "EBUDGET"
    legacy_code = "QueryTooExpensive"
    default_message = (
        "This query needed more work than one request may do; narrow the query "
        "(fewer or more specific terms) or the time range and try again"
    )
