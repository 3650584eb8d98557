"""The component catalogue for clients (the web app's editor builds its node forms from
it): every type of ``components.catalogue.REGISTRY`` with the JSON Schema of its
configuration model, and whether this account may use it. No HTTP here."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.components.base import Component
from tidegate.components.catalogue import REGISTRY
from tidegate.enterprise.service import has_feature
from tidegate.pipelines.catalogue_schemas import ComponentType
from tidegate.pipelines.schemas import NodeKind


@cache
def _schema(component: Component[Any]) -> dict[str, Any]:
    """The model's schema as it validates (``$defs`` inside, refs ``#/$defs/...``);
    built once per type and process."""
    schema: dict[str, Any] = component.config_model.model_json_schema(mode="validation")
    return schema


async def component_types(
    *, session: AsyncSession, account_id: str, kind: NodeKind | None
) -> list[ComponentType]:
    """Every type (of ``kind``, or all), in the registry's order."""
    features: dict[str, bool] = {}
    answer = []
    for component in REGISTRY:
        if kind is not None and component.kind != kind:
            continue
        feature = component.needs.feature
        if feature is not None and feature not in features:
            features[feature] = await has_feature(
                session=session, account_id=account_id, name=feature
            )
        answer.append(
            ComponentType(
                kind=component.kind,
                type=component.type,
                aliases=list(component.aliases),
                description=component.describe,
                feature=feature,
                enabled=feature is None or features[feature],
                gateway_route=component.needs.gateway_route,
                user_config_schema=_schema(component),
            )
        )
    return answer
