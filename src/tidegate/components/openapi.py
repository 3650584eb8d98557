"""The ``user_config`` schema of every component type, for the API document.

Each type's model becomes ``#/components/schemas/<kind>.<type>.user_config`` (aliases
share their type's schema), referring to its model, which goes beside it with the
models it uses as ``user_config.<Model>``.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema

from tidegate.components.base import Component
from tidegate.components.catalogue import REGISTRY
from tidegate.components.registry import Registry

__all__ = ["schema_name", "user_config_schemas"]


def schema_name(kind: str, type_: str) -> str:
    return f"{kind}.{type_}.user_config"


def schema_name_of(component: Component[Any]) -> str:
    return schema_name(component.kind, component.type)


def user_config_schemas(registry: Registry = REGISTRY) -> dict[str, Any]:
    """``{name: JSON schema}`` to merge into ``components.schemas``."""
    components = list(registry)
    keyed, top = models_json_schema(
        [(component.config_model, "validation") for component in components],
        ref_template="#/components/schemas/user_config.{model}",
    )
    schemas: dict[str, Any] = {
        f"user_config.{name}": schema for name, schema in top.get("$defs", {}).items()
    }
    for component in components:
        ref = keyed[(component.config_model, "validation")]
        schemas[schema_name_of(component)] = {
            "allOf": [{"$ref": ref["$ref"]}],
            "description": component.describe,
        }
    return schemas
