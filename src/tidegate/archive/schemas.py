"""The archiving configuration as the platform's clients send and read it: one flat JSON
object, ``integration`` and that integration's fields (the ``logdna/logdna`` Terraform
provider's ``logdna_archive``: ``generateArchiveConfig`` sends it, ``archiveResponse``
reads it back). Stored and answered as sent, so a client reads back no drift."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

from pydantic import BaseModel, Field

from tidegate.errors import ErrorItem, ValidationFailed

__all__ = [
    "INTEGRATIONS",
    "ArchiveDayStatus",
    "ArchiveRunRequest",
    "ArchiveStatus",
    "parse_config",
]

# The fields each integration requires (``expires``, swift's, is optional); tidegate
# writes to each (through the S3 API, Azure Blob's, GCS's or Swift's).
INTEGRATIONS: Final[dict[str, tuple[str, ...]]] = {
    "ibm": ("bucket", "endpoint", "apikey", "resourceinstanceid"),
    "s3": ("bucket",),
    "azblob": ("accountname", "accountkey"),
    "gcs": ("bucket", "projectid"),
    "dos": ("space", "endpoint", "accesskey", "secretkey"),
    "swift": ("authurl", "username", "password", "tenantname"),
}
_OPTIONAL: Final[dict[str, tuple[str, ...]]] = {"swift": ("expires",)}
MAX_FIELD_CHARS: Final = 1024
# ``expires`` (swift): days until Swift deletes an archive, a JSON integer as the
# provider sends it (``omitempty``: absent for 0, which keeps archives for ever).
MAX_EXPIRES_DAYS: Final = 36_500
# Azure's storage account names: 3 to 24 lower-case letters and digits.
_AZURE_ACCOUNT: Final = re.compile(r"[a-z0-9]{3,24}")


def _invalid(message: str, pointer: str, keyword: str, **params: Any) -> ValidationFailed:
    return ValidationFailed(
        message,
        context="body",
        errors=[
            ErrorItem(
                keyword=keyword,
                message=message,
                instance_path=pointer,
                schema_path=f"#/properties{pointer}" if pointer else "#",
                params=params,
            )
        ],
    )


def parse_config(body: Any) -> dict[str, Any]:
    """The configuration to store, exactly as sent, or ``ValidationFailed`` naming the
    field."""
    if not isinstance(body, dict):
        raise _invalid("the body must be a JSON object", "", "type", type="object")
    integration = body.get("integration")
    if integration not in INTEGRATIONS:
        valid = " ".join(INTEGRATIONS)
        raise _invalid(
            f"integration must be one of [{valid}]",
            "/integration",
            "enum",
            allowedValues=list(INTEGRATIONS),
        )
    required = INTEGRATIONS[integration]
    allowed = {"integration", *required, *_OPTIONAL.get(integration, ())}
    for name in body:
        if name not in allowed:
            raise _invalid(
                f"{name}: unknown field for integration {integration}",
                "",
                "additionalProperties",
                additionalProperty=name,
            )
    for name in required:
        value = body.get(name)
        if not isinstance(value, str) or not value.strip():
            raise _invalid(
                f"{name} is required for integration {integration}",
                "",
                "required",
                missingProperty=name,
            )
        if len(value) > MAX_FIELD_CHARS:
            raise _invalid(
                f"{name}: at most {MAX_FIELD_CHARS} characters",
                f"/{name}",
                "maxLength",
                limit=MAX_FIELD_CHARS,
            )
    if integration == "azblob":
        _check_azure(body)
    if "expires" in body:
        _check_expires(body["expires"])
    return dict(body)


def _check_expires(value: Any) -> None:
    """Whole days, 0 (never) to ``MAX_EXPIRES_DAYS``: the provider sends an integer."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_EXPIRES_DAYS:
        raise _invalid(
            f"expires: whole days from 0 to {MAX_EXPIRES_DAYS} (an integer)",
            "/expires",
            "type",
            type="integer",
            minimum=0,
            maximum=MAX_EXPIRES_DAYS,
        )


def _check_azure(body: dict[str, Any]) -> None:
    """An account name Azure could have and a key that is base64 (as Azure gives it):
    anything else could never be written to."""
    if not _AZURE_ACCOUNT.fullmatch(body["accountname"]):
        raise _invalid(
            "an Azure storage account name is 3 to 24 lower-case letters and digits",
            "/accountname",
            "pattern",
            pattern=_AZURE_ACCOUNT.pattern,
        )
    try:
        key = base64.b64decode(body["accountkey"], validate=True)
    except binascii.Error:
        key = b""
    if not key:
        raise _invalid(
            "the storage account's access key, base64 as Azure gives it",
            "/accountkey",
            "format",
            format="base64",
        )


class ArchiveRunRequest(BaseModel):
    """``POST /v1/config/archiving/run``: the UTC day to write now (default: yesterday)."""

    day: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")


class ArchiveDayStatus(BaseModel):
    day: str
    status: str
    attempts: int
    error: str | None
    object: str | None
    lines: int
    bytes: int
    completed: int | None
    next_attempt: int | None


class ArchiveStatus(BaseModel):
    integration: str | None
    days: list[ArchiveDayStatus]
