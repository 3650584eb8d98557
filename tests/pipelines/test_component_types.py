"""The component catalogue (``GET /v3/pipeline/component-type``: every type with the JSON
Schema of its configuration, which the web app's editor builds its forms from), and
publish errors naming their node; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from tests.conftest import AppClient
from tests.gateway.factories import new_account
from tests.pipelines.factories import (
    add_node,
    assert_envelope,
    assert_v3_error,
    enable_throttle,
    make_pipeline,
    source_with_route,
)
from tests.pipelines.test_sealed_configs import SEALER

from tidegate.components.catalogue import REGISTRY

TYPES = "/v3/pipeline/component-type"


async def component_types(client: AppClient, headers: dict[str, str], **params: str) -> Any:
    response = await client.get(TYPES, params=params, headers=headers)
    assert response.status_code == 200, response.text
    return assert_envelope(response.json(), type_="component type", pk="type")


def valid(schema: dict[str, Any], config: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(config)


async def test_every_type_is_listed_with_its_config_schema(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    every = await component_types(client, account.headers)
    assert [(item["kind"], item["type"]) for item in every] == [
        (component.kind, component.type) for component in REGISTRY
    ]
    by_name = {(item["kind"], item["type"]): item for item in every}
    for item in every:
        # Each schema stands alone: a valid JSON Schema whose refs resolve inside it.
        jsonschema.Draft202012Validator.check_schema(item["user_config_schema"])
        assert set(item) == {
            "kind", "type", "aliases", "description", "feature", "enabled", "gateway_route",
            "user_config_schema",
        }  # fmt: skip

    http = by_name[("destination", "http")]
    assert "uri" in http["user_config_schema"]["required"]
    assert valid(http["user_config_schema"], {"uri": "https://example.com/in"})
    assert not valid(http["user_config_schema"], {})
    assert not valid(http["user_config_schema"], {"uri": "https://x.example", "nope": 1})
    # Nested models come with it ($defs): the auth object is checked too.
    auth = {"uri": "https://x.example", "auth": {"strategy": "bearer", "token": "t"}}
    assert valid(http["user_config_schema"], auth)
    assert not valid(http["user_config_schema"], {**auth, "auth": {"strategy": "magic"}})

    mezmo = by_name[("destination", "mezmo")]
    assert "log_analysis" in mezmo["aliases"]
    assert by_name[("source", "http")]["gateway_route"] is True
    assert by_name[("source", "demo-logs")]["gateway_route"] is False
    keep_errors = {
        "conditional": {"expressions": [{"field": ".level", "str_operator": "equal", "value": "e"}]}
    }
    assert valid(by_name[("processor", "filter")]["user_config_schema"], keep_errors)
    assert not valid(by_name[("processor", "filter")]["user_config_schema"], {})

    # Throttle is a beta feature: listed, not enabled until the account has it.
    throttle = by_name[("processor", "throttle")]
    assert (throttle["feature"], throttle["enabled"]) == ("throttle-processor", False)
    assert by_name[("processor", "filter")]["enabled"] is True
    await enable_throttle(client, account)
    processors = await component_types(client, account.headers, kind="processor")
    assert {item["kind"] for item in processors} == {"processor"}
    assert [item["type"] for item in processors if item["type"] == "throttle"] == ["throttle"]
    assert next(item for item in processors if item["type"] == "throttle")["enabled"] is True


async def test_the_catalogue_needs_an_account(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    assert_v3_error(await client.get(TYPES), 401)
    assert_v3_error(await client.get(TYPES, headers=account.tenant.headers), 403)
    assert_v3_error(
        await client.get(TYPES, params={"kind": "transform"}, headers=account.headers), 400
    )


async def test_a_publish_error_names_the_node_it_is_about(client: AppClient) -> None:
    """A draft node whose stored configuration no longer validates (here: written by
    hand; in life, a rule that became stricter) refuses the publish, each error item
    carrying the node's id in ``params.node_id``."""
    account = await new_account(client, throttle=False)
    pipeline_id = await make_pipeline(client, account)
    _route, source_id = await source_with_route(client, account, pipeline_id)
    sink_id = await add_node(
        client,
        account,
        pipeline_id,
        "destination",
        {"type": "http", "inputs": [source_id], "user_config": {"uri": "https://x.example"}},
    )
    engine = create_async_engine(client.database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                text("UPDATE pipeline_nodes SET user_config_sealed = :sealed WHERE id = :id"),
                {"sealed": SEALER.seal(json.dumps({})), "id": sink_id},
            )
    finally:
        await engine.dispose()
    refused = await client.post(
        f"/v3/pipeline/{pipeline_id}/publish", json={}, headers=account.headers
    )
    error = assert_v3_error(refused, 400)
    assert sink_id in error["message"]
    assert [item["params"] for item in error["errors"]] == [
        {"missingProperty": "uri", "node_id": sink_id}
    ]
    assert error["errors"][0]["instance_path"] == "/user_config"
