"""The base of every request body: unknown fields are refused and nothing is coerced
(``0`` is not ``false``, ``"5"`` is not ``5``), as the JSON Schema in the OpenAPI
document promises."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, BeforeValidator, ConfigDict


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _integral(value: Any) -> Any:
    # JSON Schema counts 34.0 as an integer; strict pydantic would not.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Use as Annotated[int, Field(...), integral], Field first: with the validator before the
# Field (or nested in an alias), pydantic emits raw "ge"/"le" keys instead of minimum/maximum.
integral = BeforeValidator(_integral)
