"""The graph rules checked on every node save, the 409 on deleting a depended-on node,
the throttle feature gate and per-type ``user_config`` validation."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.pipelines.factories import (
    THROTTLE,
    add_node,
    assert_v3_error,
    enable_throttle,
    make_pipeline,
    source_with_route,
)


async def setup(client: AppClient) -> tuple[AccountCtx, str, str]:
    """An account, a pipeline and its HTTP source."""
    account = await make_account(client, await make_tenant(client.database_url))
    pipeline_id = await make_pipeline(client, account)
    _route, source_id = await source_with_route(client, account, pipeline_id)
    return account, pipeline_id, source_id


def blackhole(*inputs: str) -> dict[str, Any]:
    return {"type": "blackhole", "inputs": list(inputs)}


def pass_all(*inputs: str) -> dict[str, Any]:
    condition = {"field": ".level", "str_operator": "exists"}
    return {"type": "filter", "inputs": list(inputs), "user_config": {"condition": condition}}


async def test_dangling_input_is_400(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/destination",
        json=blackhole(source_id, "no-such-node"),
        headers=account.headers,
    )
    error = assert_v3_error(response, 400)
    assert error["errors"][0]["instance_path"] == "/inputs/1"
    assert "no-such-node" in error["message"]


async def test_input_from_another_pipeline_is_400(client: AppClient) -> None:
    account, pipeline_id, _source = await setup(client)
    other_pipeline = await make_pipeline(client, account)
    _route, other_source = await source_with_route(client, account, other_pipeline)
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/destination",
        json=blackhole(other_source),
        headers=account.headers,
    )
    assert_v3_error(response, 400)


async def test_source_with_inputs_is_400(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    _route2, second_source = await source_with_route(client, account, pipeline_id)
    response = await client.patch(
        f"/v3/pipeline/{pipeline_id}/source/{second_source}",
        json={"inputs": [source_id]},
        headers=account.headers,
    )
    error = assert_v3_error(response, 400)
    assert error["errors"][0]["instance_path"] == "/inputs"
    assert "source takes no inputs" in error["message"]


async def test_destination_is_not_an_input(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    sink = await add_node(client, account, pipeline_id, "destination", blackhole(source_id))
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/destination", json=blackhole(sink), headers=account.headers
    )
    assert_v3_error(response, 400)


async def test_cycle_is_400_and_named(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    first = await add_node(client, account, pipeline_id, "processor", pass_all(source_id))
    second = await add_node(client, account, pipeline_id, "processor", pass_all(first))
    third = await add_node(client, account, pipeline_id, "processor", pass_all(second))

    response = await client.patch(
        f"/v3/pipeline/{pipeline_id}/processor/{first}",
        json={"inputs": [source_id, third]},
        headers=account.headers,
    )
    error = assert_v3_error(response, 400)
    assert error["errors"][0]["keyword"] == "cycle"
    cycle = error["errors"][0]["params"]["cycle"]
    assert cycle[0] == cycle[-1]
    assert set(cycle) == {first, second, third}
    assert "cycle" in error["message"]

    self_loop = await client.patch(
        f"/v3/pipeline/{pipeline_id}/processor/{first}",
        json={"inputs": [first]},
        headers=account.headers,
    )
    assert_v3_error(self_loop, 400)
    # Nothing was saved.
    stored = await client.get(
        f"/v3/pipeline/{pipeline_id}/processor/{first}", headers=account.headers
    )
    assert stored.json()["data"]["inputs"] == [source_id]


async def test_dropped_output_only_of_a_throttle(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    filter_id = await add_node(client, account, pipeline_id, "processor", pass_all(source_id))
    not_throttle = await client.post(
        f"/v3/pipeline/{pipeline_id}/destination",
        json=blackhole(f"{filter_id}.dropped"),
        headers=account.headers,
    )
    error = assert_v3_error(not_throttle, 400)
    assert error["errors"][0]["instance_path"] == "/inputs/0"

    await enable_throttle(client, account)
    throttle_id = await add_node(
        client,
        account,
        pipeline_id,
        "processor",
        {"type": "throttle", "inputs": [source_id], "user_config": THROTTLE},
    )
    unknown_output = await client.post(
        f"/v3/pipeline/{pipeline_id}/destination",
        json=blackhole(f"{throttle_id}.other"),
        headers=account.headers,
    )
    assert_v3_error(unknown_output, 400)
    kept = await add_node(client, account, pipeline_id, "destination", blackhole(throttle_id))
    dropped = await add_node(
        client, account, pipeline_id, "destination", blackhole(f"{throttle_id}.dropped")
    )

    # The throttle cannot stop being a throttle while its dropped output is used.
    into_filter = await client.patch(
        f"/v3/pipeline/{pipeline_id}/processor/{throttle_id}",
        json={"type": "filter", "user_config": pass_all()["user_config"]},
        headers=account.headers,
    )
    assert_v3_error(into_filter, 400)

    # Deleting it is refused while either output is used; the 409 names both users.
    refused = await client.delete(
        f"/v3/pipeline/{pipeline_id}/processor/{throttle_id}", headers=account.headers
    )
    error = assert_v3_error(refused, 409)
    assert kept in error["message"]
    assert dropped in error["message"]
    assert sorted(error["errors"][0]["params"]["dependents"]) == sorted([kept, dropped])


async def test_deleting_a_depended_on_source_is_409(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    sink = await add_node(client, account, pipeline_id, "destination", blackhole(source_id))
    refused = await client.delete(
        f"/v3/pipeline/{pipeline_id}/source/{source_id}", headers=account.headers
    )
    error = assert_v3_error(refused, 409)
    assert sink in error["message"]
    await client.delete(f"/v3/pipeline/{pipeline_id}/destination/{sink}", headers=account.headers)
    allowed = await client.delete(
        f"/v3/pipeline/{pipeline_id}/source/{source_id}", headers=account.headers
    )
    assert allowed.status_code == 200


async def test_duplicate_input_is_400(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/destination",
        json=blackhole(source_id, source_id),
        headers=account.headers,
    )
    assert_v3_error(response, 400)


async def test_throttle_needs_the_feature(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    body = {"type": "throttle", "inputs": [source_id], "user_config": THROTTLE}
    refused = await client.post(
        f"/v3/pipeline/{pipeline_id}/processor", json=body, headers=account.headers
    )
    error = assert_v3_error(refused, 403)
    assert "throttle-processor" in error["message"]
    assert error["code"] == "EFORBIDDEN"

    # Nor can a filter be turned into a throttle.
    filter_id = await add_node(client, account, pipeline_id, "processor", pass_all(source_id))
    turned = await client.patch(
        f"/v3/pipeline/{pipeline_id}/processor/{filter_id}",
        json={"type": "throttle", "user_config": THROTTLE},
        headers=account.headers,
    )
    assert_v3_error(turned, 403)

    await enable_throttle(client, account)
    allowed = await client.post(
        f"/v3/pipeline/{pipeline_id}/processor", json=body, headers=account.headers
    )
    assert allowed.status_code == 201
    assert allowed.json()["data"]["user_config"] == THROTTLE
    turned_now = await client.patch(
        f"/v3/pipeline/{pipeline_id}/processor/{filter_id}",
        json={"type": "throttle", "user_config": THROTTLE},
        headers=account.headers,
    )
    assert turned_now.status_code == 200


async def test_feature_of_another_account_does_not_count(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    sibling = await make_account(client, account.tenant)
    await enable_throttle(client, sibling)
    refused = await client.post(
        f"/v3/pipeline/{pipeline_id}/processor",
        json={"type": "throttle", "inputs": [source_id], "user_config": THROTTLE},
        headers=account.headers,
    )
    assert_v3_error(refused, 403)


@pytest.mark.parametrize(
    ("user_config", "instance_path", "keyword"),
    [
        ({"window_ms": 1000}, "/user_config", "required"),
        ({"threshold": 0, "window_ms": 1000}, "/user_config/threshold", "minimum"),
        ({"threshold": "5", "window_ms": 1000}, "/user_config/threshold", "type"),
        ({"threshold": 5, "window_ms": 0}, "/user_config/window_ms", "minimum"),
        ({**THROTTLE, "limit": 5}, "/user_config", "additionalProperties"),
        ({**THROTTLE, "key_field": 7}, "/user_config/key_field", "type"),
        (
            {**THROTTLE, "exclude": {"field": ".host", "str_operator": "is_bigger", "value": 1}},
            "/user_config/exclude/str_operator",
            "validation",
        ),
        (
            {
                **THROTTLE,
                "exclude": {
                    "expressions": [
                        {"field": ".host", "str_operator": "equal", "value": "a"},
                        {"field": ".n", "str_operator": "greater", "value": "many"},
                    ]
                },
            },
            "/user_config/exclude/expressions/1/value",
            "validation",
        ),
    ],
)
async def test_invalid_throttle_config_names_the_field(
    client: AppClient, user_config: dict[str, Any], instance_path: str, keyword: str
) -> None:
    account, pipeline_id, source_id = await setup(client)
    await enable_throttle(client, account)
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/processor",
        json={"type": "throttle", "inputs": [source_id], "user_config": user_config},
        headers=account.headers,
    )
    error = assert_v3_error(response, 400)
    assert error["context"] == "body"
    assert error["errors"][0]["instance_path"] == instance_path
    assert error["errors"][0]["keyword"] == keyword


async def test_valid_throttle_with_key_and_exclude(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    await enable_throttle(client, account)
    config = {
        "threshold": 1,
        "window_ms": 1000,
        "key_field": ".app",
        "exclude": {"field": ".host", "str_operator": "equal", "value": "vip"},
    }
    created = await client.post(
        f"/v3/pipeline/{pipeline_id}/processor",
        json={"type": "throttle", "inputs": [source_id], "user_config": config},
        headers=account.headers,
    )
    assert created.status_code == 201
    assert created.json()["data"]["user_config"] == config


@pytest.mark.parametrize(
    ("user_config", "instance_path"),
    [
        ({}, "/user_config"),
        ({"condition": {"field": ".a"}}, "/user_config/condition"),
        (
            {"condition": {"field": ".a", "str_operator": "regex_match", "value": "("}},
            "/user_config/condition/value",
        ),
        (  # valid for Python's `re`, refused by RE2 (backreference)
            {"condition": {"field": ".a", "str_operator": "regex_match", "value": r"(a)\1"}},
            "/user_config/condition/value",
        ),
        (
            {
                "condition": {"field": ".a", "str_operator": "exists"},
                "action": "maybe",
            },
            "/user_config/action",
        ),
    ],
)
async def test_invalid_filter_config_names_the_field(
    client: AppClient, user_config: dict[str, Any], instance_path: str
) -> None:
    account, pipeline_id, source_id = await setup(client)
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/processor",
        json={"type": "filter", "inputs": [source_id], "user_config": user_config},
        headers=account.headers,
    )
    error = assert_v3_error(response, 400)
    assert error["errors"][0]["instance_path"] == instance_path


@pytest.mark.parametrize(
    ("type_", "user_config", "instance_path"),
    [
        ("http", {}, "/user_config"),
        ("http", {"uri": "ftp://example.com/x"}, "/user_config/uri"),
        ("http", {"uri": "not a url"}, "/user_config/uri"),
        ("http", {"uri": "https://x.example", "timeout_ms": 5}, "/user_config/timeout_ms"),
        (
            "http",
            {"uri": "https://x.example", "batch": {"max_events": 100_000}},
            "/user_config/batch/max_events",
        ),
        ("http", {"uri": "https://x.example", "headers": {"Host": "y"}}, "/user_config/headers/0"),
        (
            "http",
            {"uri": "https://x.example", "headers": {"X-A": "a\r\nb"}},
            "/user_config/headers/0",
        ),
        ("log_analysis", {"index": "x"}, "/user_config"),
        ("blackhole", {"rate": 1}, "/user_config"),
        ("blackhole", {"nested": {"deep": "a\x00b"}}, "/user_config/nested/deep"),
    ],
)
async def test_invalid_destination_config(
    client: AppClient, type_: str, user_config: dict[str, Any], instance_path: str
) -> None:
    account, pipeline_id, source_id = await setup(client)
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/destination",
        json={"type": type_, "inputs": [source_id], "user_config": user_config},
        headers=account.headers,
    )
    error = assert_v3_error(response, 400)
    assert error["errors"][0]["instance_path"] == instance_path


async def test_changing_type_revalidates_the_stored_config(client: AppClient) -> None:
    account, pipeline_id, source_id = await setup(client)
    sink = await add_node(
        client,
        account,
        pipeline_id,
        "destination",
        {"type": "http", "inputs": [source_id], "user_config": {"uri": "https://x.example"}},
    )
    response = await client.patch(
        f"/v3/pipeline/{pipeline_id}/destination/{sink}",
        json={"type": "blackhole"},
        headers=account.headers,
    )
    error = assert_v3_error(response, 400)
    assert error["errors"][0]["params"] == {"additionalProperty": "uri"}
