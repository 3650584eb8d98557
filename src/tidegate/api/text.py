"""Text that every database backend can store and every response can serialise.

PostgreSQL refuses NUL characters in text columns, and a lone surrogate (which JSON's
``\\ud800`` escapes can produce) cannot be encoded as UTF-8 on the way to the database
or back out in a response. A field with this pattern rejects both as a 400 (pydantic
refuses to match a pattern against a string that is not valid Unicode), and the rule
is visible in the OpenAPI document.

Models use it (services and the CLI import them): no HTTP framework here; the path
parameter for ids is api.path_params.id_path.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

STORABLE_TEXT = r"^[^\x00]*$"


# Read-only identifiers that clients echo back in bodies (read-modify-write): accepted
# and ignored, never an error and never a way to choose or change an id.
ReadOnlyId = Annotated[
    str | None,
    Field(json_schema_extra={"readOnly": True}, description="Read-only: accepted and ignored"),
]
