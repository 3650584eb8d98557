"""The registry: names, aliases, kinds, outputs, validation pointers, API schemas."""

from __future__ import annotations

import pytest

from tidegate.components.base import DROPPED, Component
from tidegate.components.catalogue import REGISTRY
from tidegate.components.openapi import user_config_schemas
from tidegate.components.registry import Registry, UnknownComponent
from tidegate.components.validation import node_outputs, validate_user_config
from tidegate.errors import ValidationFailed


def test_aliases_and_kind_aliases_resolve_to_one_component() -> None:
    mezmo = REGISTRY.get("destination", "mezmo")
    assert REGISTRY.get("destination", "log_analysis") is mezmo
    assert REGISTRY.get("sink", "mezmo") is mezmo
    assert REGISTRY.get("transform", "filter") is REGISTRY.get("processor", "filter")
    # http is a source and a destination: the kind decides.
    assert REGISTRY.get("source", "http").kind == "source"
    assert REGISTRY.get("destination", "http").kind == "destination"
    assert "log_analysis" in REGISTRY.names("destination")


def test_kinds_are_not_types() -> None:
    with pytest.raises(UnknownComponent):
        REGISTRY.get("processor", "transform")
    with pytest.raises(UnknownComponent):
        REGISTRY.get("transformer", "filter")
    assert REGISTRY.find("destination", "filter") is None


def test_a_name_registered_twice_is_refused() -> None:
    filter_ = REGISTRY.get("processor", "filter")
    with pytest.raises(ValueError, match="registered twice"):
        Registry([filter_, filter_])


def test_unknown_type_points_at_type() -> None:
    with pytest.raises(ValidationFailed) as caught:
        validate_user_config(kind="processor", type_="nope", user_config={})
    item = caught.value.errors[0]
    assert item.instance_path == "/type"
    assert "filter" in item.params["allowedValues"]


def test_config_errors_point_into_user_config() -> None:
    with pytest.raises(ValidationFailed) as caught:
        validate_user_config(
            kind="processor",
            type_="filter",
            user_config={
                "conditional": {"expressions": [{"field": ".a", "str_operator": "bogus"}]},
                "action": "allow",
            },
        )
    assert caught.value.errors[0].instance_path == (
        "/user_config/conditional/expressions/0/str_operator"
    )
    with pytest.raises(ValidationFailed) as extra:
        validate_user_config(kind="destination", type_="blackhole", user_config={"x": 1})
    # As AJV says it: the object holding the unknown property, which is named.
    assert extra.value.errors[0].instance_path == "/user_config"
    assert extra.value.errors[0].params == {"additionalProperty": "x"}


def test_filter_accepts_condition_as_the_old_name() -> None:
    leaf = {"field": ".app", "str_operator": "equal", "value": "a"}
    new = validate_user_config(kind="processor", type_="filter", user_config={"conditional": leaf})
    old = validate_user_config(kind="processor", type_="filter", user_config={"condition": leaf})
    assert new == old


def test_outputs_come_from_the_component() -> None:
    throttle = {"threshold": 1, "window_ms": 1000}
    assert node_outputs(kind="processor", type_="throttle", user_config=throttle) == (DROPPED,)
    assert node_outputs(kind="processor", type_="filter", user_config={}) == ()  # invalid
    assert node_outputs(kind="destination", type_="ghost", user_config={}) == ()


def test_every_type_has_a_user_config_schema_in_the_document() -> None:
    schemas = user_config_schemas()
    for component in REGISTRY:
        assert isinstance(component, Component)
        schema = schemas[f"{component.kind}.{component.type}.user_config"]
        assert schema["description"] == component.describe
        model = schema["allOf"][0]["$ref"].removeprefix("#/components/schemas/")
        assert schemas[model]["additionalProperties"] is False
    referenced = str(schemas)
    for name in schemas:
        if name.startswith("user_config."):
            assert f"#/components/schemas/{name}" in referenced
