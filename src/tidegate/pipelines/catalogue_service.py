"""The component catalogue for clients (the web app's editor builds its node forms from
it): every type of ``components.catalogue.REGISTRY`` with the JSON Schema of its
configuration model, and whether this account may use it. No HTTP here."""

from __future__ import annotations

from functools import cache
from typing import Any

from tidegate.components.base import Component
from tidegate.components.catalogue import REGISTRY
from tidegate.db.engine import Database
from tidegate.enterprise.service import enabled_features
from tidegate.pipelines.schemas import NodeKind


@cache
def _schema(component: Component[Any]) -> dict[str, Any]:
    """The model's schema as it validates (``$defs`` inside, refs ``#/$defs/...``);
    built once per type and process."""
    schema: dict[str, Any] = component.config_model.model_json_schema(mode="validation")
    return schema


@cache
def _documents() -> tuple[tuple[NodeKind, str | None, dict[str, Any], dict[str, Any]], ...]:
    """Each type of the registry, in its order: ``(kind, feature, its document when
    enabled, when not)``, as ``ComponentType`` writes it (``_schema``'s dict shared, not
    copied); built once per process."""
    found = []
    for component in REGISTRY:
        feature = component.needs.feature
        head = {
            "kind": component.kind,
            "type": component.type,
            "aliases": list(component.aliases),
            "description": component.describe,
            "feature": feature,
        }
        tail = {
            "gateway_route": component.needs.gateway_route,
            "user_config_schema": _schema(component),
        }
        found.append(
            (
                component.kind,
                feature,
                {**head, "enabled": True, **tail},
                {**head, "enabled": False, **tail},
            )
        )
    return tuple(found)


async def read_component_types(
    *, db: Database, account_id: str, kind: NodeKind | None
) -> list[dict[str, Any]]:
    """Every type (of ``kind``, or all), in the registry's order, as plain data
    (``ComponentType``'s documents), whether the account may use it from one raw read of
    its features."""
    features = await enabled_features(db=db, account_id=account_id)
    return [
        enabled if feature is None or feature in features else disabled
        for of_kind, feature, enabled, disabled in _documents()
        if kind is None or of_kind == kind
    ]
