"""POST /v3/pipeline/{id}/simulate and /v3/pipeline/simulate-processor."""

from __future__ import annotations

from tests.conftest import AppClient
from tests.gateway.factories import count_lines, events, new_account, wire
from tests.pipelines.factories import assert_envelope, assert_v3_error

LONG = 3_600_000
THROTTLE = {"threshold": 2, "window_ms": LONG}
STEPS = [
    ("t", "processor", "throttle", THROTTLE, ["source"]),
    ("store", "destination", "log_analysis", {}, ["t"]),
    (
        "f",
        "processor",
        "filter",
        {"condition": {"field": ".n", "str_operator": "greater", "value": 2}},
        ["t.dropped"],
    ),
    ("hole", "destination", "blackhole", {}, ["f"]),
]


def sample(count: int) -> list[dict[str, int]]:
    return [{"n": index} for index in range(count)]


async def test_simulate_pipeline_shows_every_node(client: AppClient) -> None:
    account = await new_account(client)
    wired = await wire(client, account, STEPS)
    response = await client.post(
        f"/v3/pipeline/{wired.pipeline_id}/simulate",
        json={"events": sample(5)},
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    data = assert_envelope(response.json(), type_="pipeline_simulation", pk="pipeline_id")
    assert data["pipeline_id"] == wired.pipeline_id
    assert data["throttle_enabled"] is True
    nodes = {node["id"]: node for node in data["nodes"]}
    assert data["nodes"][0]["id"] == wired.source_id
    assert nodes[wired.source_id]["output"] == sample(5)
    throttle = nodes[wired.nodes["t"]]
    assert (throttle["received"], throttle["output"], throttle["dropped"]) == (
        5,
        sample(2),
        sample(5)[2:],
    )
    assert nodes[wired.nodes["store"]]["output"] == sample(2)
    assert nodes[wired.nodes["f"]]["output"] == [{"n": 3}, {"n": 4}]
    assert nodes[wired.nodes["f"]]["dropped"] is None
    assert nodes[wired.nodes["hole"]]["output"] == [{"n": 3}, {"n": 4}]


async def test_simulation_stores_nothing_and_leaves_live_windows_alone(client: AppClient) -> None:
    account = await new_account(client)
    wired = await wire(client, account, STEPS)
    response = await client.post(wired.url, json=events(1), headers=wired.auth)
    assert response.status_code == 200
    for _ in range(3):
        simulated = await client.post(
            f"/v3/pipeline/{wired.pipeline_id}/simulate",
            json={"events": events(5)},
            headers=account.headers,
        )
        nodes = {node["id"]: node for node in simulated.json()["data"]["nodes"]}
        assert len(nodes[wired.nodes["t"]]["output"]) == 2  # fresh window every time
    assert await count_lines(client.database_url, account.account_id) == 1
    # The live throttle still has one slot left.
    response = await client.post(wired.url, json=events(3), headers=wired.auth)
    assert response.status_code == 200
    assert await count_lines(client.database_url, account.account_id) == 2


async def test_simulate_another_accounts_pipeline_is_404(client: AppClient) -> None:
    owner = await new_account(client)
    stranger = await new_account(client)
    wired = await wire(client, owner, STEPS)
    for headers in (stranger.headers, stranger.tenant.as_account(stranger.account_id)):
        response = await client.post(
            f"/v3/pipeline/{wired.pipeline_id}/simulate",
            json={"events": sample(1)},
            headers=headers,
        )
        assert_v3_error(response, 404)
    response = await client.post(
        "/v3/pipeline/no-such-pipeline/simulate", json={"events": []}, headers=owner.headers
    )
    assert_v3_error(response, 404)


async def test_simulation_needs_credentials_and_valid_bodies(client: AppClient) -> None:
    account = await new_account(client)
    wired = await wire(client, account, STEPS)
    url = f"/v3/pipeline/{wired.pipeline_id}/simulate"
    assert_v3_error(await client.post(url, json={"events": []}), 401)
    assert_v3_error(await client.post(url, json={"events": [1]}, headers=account.headers), 400)
    assert_v3_error(await client.post(url, json={}, headers=account.headers), 400)
    assert_v3_error(
        await client.post(url, json={"events": [], "x": 1}, headers=account.headers), 400
    )
    bare_enterprise = account.tenant.headers
    assert_v3_error(await client.post(url, json={"events": []}, headers=bare_enterprise), 403)


async def test_simulation_of_a_throttle_without_the_feature_passes_everything(
    client: AppClient,
) -> None:
    account = await new_account(client)
    wired = await wire(client, account, STEPS)
    await client.delete(
        f"/v3/enterprise/account/{account.account_id}/features/throttle-processor",
        headers=account.tenant.headers,
    )
    response = await client.post(
        f"/v3/pipeline/{wired.pipeline_id}/simulate",
        json={"events": sample(4)},
        headers=account.headers,
    )
    data = response.json()["data"]
    assert data["throttle_enabled"] is False
    nodes = {node["id"]: node for node in data["nodes"]}
    assert nodes[wired.nodes["store"]]["output"] == sample(4)


async def test_simulate_processor_throttle(client: AppClient) -> None:
    account = await new_account(client)
    batch = [{"app": "a"}, {"app": "a"}, {"app": "b"}, {"app": "a", "host": "x"}]
    response = await client.post(
        "/v3/pipeline/simulate-processor",
        json={
            "processor": {
                "type": "throttle",
                "user_config": {
                    "threshold": 1,
                    "window_ms": 1000,
                    "key_field": ".app",
                    "exclude": {"field": ".host", "str_operator": "equal", "value": "x"},
                },
            },
            "events": batch,
        },
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    data = assert_envelope(response.json(), type_="processor_simulation", pk=None)
    assert data == {
        "type": "throttle",
        "received": 4,
        "output": [batch[0], batch[2], batch[3]],
        "dropped": [batch[1]],
        "outputs": {},
    }


async def test_simulate_processor_filter(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    response = await client.post(
        "/v3/pipeline/simulate-processor",
        json={
            "processor": {
                "type": "filter",
                "user_config": {
                    "condition": {"field": ".level", "str_operator": "equal", "value": "debug"},
                    "action": "drop",
                },
            },
            "events": [{"level": "DEBUG"}, {"level": "info"}],
        },
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["output"] == [{"level": "info"}]
    assert data["dropped"] == [{"level": "DEBUG"}]


async def test_simulate_processor_refusals(client: AppClient) -> None:
    without = await new_account(client, throttle=False)
    body = {"processor": {"type": "throttle", "user_config": THROTTLE}, "events": []}
    forbidden = assert_v3_error(
        await client.post("/v3/pipeline/simulate-processor", json=body, headers=without.headers),
        403,
    )
    assert "throttle-processor" in forbidden["message"]
    account = await new_account(client)
    bad = {"processor": {"type": "throttle", "user_config": {"threshold": 0, "window_ms": 1}}}
    error = assert_v3_error(
        await client.post(
            "/v3/pipeline/simulate-processor", json={**bad, "events": []}, headers=account.headers
        ),
        400,
    )
    assert error["errors"][0]["instance_path"] == "/processor/user_config/threshold"
    condition = {"condition": {"field": ".a", "str_operator": "regex_match", "value": "("}}
    error = assert_v3_error(
        await client.post(
            "/v3/pipeline/simulate-processor",
            json={"processor": {"type": "filter", "user_config": condition}, "events": []},
            headers=account.headers,
        ),
        400,
    )
    assert error["errors"][0]["instance_path"] == "/processor/user_config/condition/value"
    lookahead = {"condition": {"field": ".a", "str_operator": "regex_match", "value": "a(?=b)"}}
    error = assert_v3_error(
        await client.post(
            "/v3/pipeline/simulate-processor",
            json={"processor": {"type": "filter", "user_config": lookahead}, "events": []},
            headers=account.headers,
        ),
        400,
    )
    assert error["errors"][0]["instance_path"] == "/processor/user_config/condition/value"
    assert "RE2 syntax" in str(error)
    unknown = {"processor": {"type": "sample", "user_config": {}}, "events": []}
    assert_v3_error(
        await client.post("/v3/pipeline/simulate-processor", json=unknown, headers=account.headers),
        400,
    )
    assert_v3_error(await client.post("/v3/pipeline/simulate-processor", json=body), 401)


async def test_simulate_processor_is_not_taken_for_a_pipeline_id(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    response = await client.get("/v3/pipeline/simulate-processor", headers=account.headers)
    assert response.status_code in (404, 405)
    listed = await client.get("/v3/pipeline", headers=account.headers)
    assert listed.status_code == 200
