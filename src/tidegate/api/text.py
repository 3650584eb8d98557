"""Text that every database backend can store and every response can serialise.

PostgreSQL refuses NUL characters in text columns, and a lone surrogate (which JSON's
``\\ud800`` escapes can produce) cannot be encoded as UTF-8 on the way to the database
or back out in a response. A field with this pattern rejects both as a 400 (pydantic
refuses to match a pattern against a string that is not valid Unicode), and the rule
is visible in the OpenAPI document.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path
from pydantic import Field

STORABLE_TEXT = r"^[^\x00]*$"


def id_path(*, alias: str, description: str) -> Any:
    """A resource id in a v1 path (the platform's ids are 24 hex chars). Any other
    storable text up to that length finds nothing (404), exactly as a foreign id does."""
    return Path(
        alias=alias, min_length=1, max_length=24, pattern=STORABLE_TEXT, description=description
    )


# Read-only identifiers that clients echo back in bodies (read-modify-write): accepted
# and ignored, never an error and never a way to choose or change an id.
ReadOnlyId = Annotated[
    str | None,
    Field(json_schema_extra={"readOnly": True}, description="Read-only: accepted and ignored"),
]
