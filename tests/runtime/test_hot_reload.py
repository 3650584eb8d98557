"""Edits change the draft; a publish applies them to the next event without a restart,
and keeps the windows of throttles whose configuration did not change: in memory, and
in Redis (``TIDEGATE_REDIS_URL``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import REDIS_URL, AppClient, make_settings, open_client
from tests.gateway.factories import Wired, count_lines, events, new_account, wire
from tests.pipelines.factories import publish

LONG = 3_600_000


@pytest.fixture(params=["memory", "redis"])
async def client(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path
) -> AsyncIterator[AppClient]:
    """The app with its throttle windows in process, then in a real Redis."""
    redis_url = REDIS_URL if request.param == "redis" else None
    http, lifespan = await open_client(make_settings(database_url, tmp_path, redis_url=redis_url))
    try:
        yield http
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


async def post(client: AppClient, wired: Wired, batch: list[dict[str, Any]]) -> None:
    response = await client.post(wired.url, json=batch, headers=wired.auth)
    assert response.status_code == 200, response.text


async def patch_node(
    client: AppClient, wired: Wired, kind: str, name: str, body: dict[str, Any]
) -> None:
    response = await client.patch(
        f"/v3/pipeline/{wired.pipeline_id}/{kind}/{wired.nodes[name]}",
        json=body,
        headers=wired.account.headers,
    )
    assert response.status_code == 200, response.text


async def test_edits_run_only_once_published(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, [("hole", "destination", "blackhole", {}, ["source"])])
    await post(client, wired, events(2))
    assert await count_lines(client.database_url, account.account_id) == 0
    added = await client.post(
        f"/v3/pipeline/{wired.pipeline_id}/sink",
        json={"type": "log_analysis", "inputs": [wired.source_id], "generation_id": 0},
        headers=account.headers,
    )
    assert added.status_code == 201, added.text
    # A draft edit: what runs is unchanged.
    await post(client, wired, events(2))
    assert await count_lines(client.database_url, account.account_id) == 0
    detail = (await client.get(f"/v3/pipeline/{wired.pipeline_id}", headers=account.headers)).json()
    assert detail["data"]["has_unpublished_changes"] is True
    published = await publish(client, account, wired.pipeline_id)
    assert published["has_unpublished_changes"] is False
    assert published["published_revision"] == published["revision"]
    await post(client, wired, events(2))
    assert await count_lines(client.database_url, account.account_id) == 2
    # Deleting from the draft keeps the running copy until the next publish.
    gone = await client.delete(
        f"/v3/pipeline/{wired.pipeline_id}/sink/{added.json()['data']['id']}",
        headers=account.headers,
    )
    assert gone.status_code == 200
    await post(client, wired, events(1))
    assert await count_lines(client.database_url, account.account_id) == 3
    await publish(client, account, wired.pipeline_id)
    await post(client, wired, events(1))
    assert await count_lines(client.database_url, account.account_id) == 3


async def test_unrelated_change_keeps_the_throttle_window(client: AppClient) -> None:
    account = await new_account(client)
    wired = await wire(
        client,
        account,
        [
            ("t", "processor", "throttle", {"threshold": 2, "window_ms": LONG}, ["source"]),
            ("store", "destination", "log_analysis", {}, ["t"]),
            (
                "f",
                "processor",
                "filter",
                {"condition": {"field": ".x", "str_operator": "exists"}},
                ["source"],
            ),
            ("hole", "destination", "blackhole", {}, ["f"]),
        ],
    )
    await post(client, wired, events(3))
    assert await count_lines(client.database_url, account.account_id) == 2
    # Edits elsewhere in the pipeline (a new revision) and a new title on the throttle
    # itself: its configuration is unchanged, so its window is too.
    await patch_node(
        client,
        wired,
        "processor",
        "f",
        {"user_config": {"condition": {"field": ".y", "str_operator": "exists"}}},
    )
    await patch_node(client, wired, "processor", "t", {"title": "renamed"})
    await patch_node(
        client, wired, "processor", "t", {"user_config": {"window_ms": LONG, "threshold": 2}}
    )  # same configuration in another key order
    await publish(client, wired.account, wired.pipeline_id)
    await post(client, wired, events(2))
    assert await count_lines(client.database_url, account.account_id) == 2


async def test_changed_throttle_starts_afresh_and_only_it(client: AppClient) -> None:
    account = await new_account(client)
    wired = await wire(
        client,
        account,
        [
            (
                "t1",
                "processor",
                "throttle",
                {"threshold": 1, "window_ms": LONG, "key_field": ".k"},
                ["source"],
            ),
            (
                "t2",
                "processor",
                "throttle",
                {"threshold": 1, "window_ms": LONG, "key_field": ".k"},
                ["source"],
            ),
            (
                "f1",
                "processor",
                "filter",
                {"condition": {"field": ".k", "str_operator": "equal", "value": "one"}},
                ["t1"],
            ),
            (
                "f2",
                "processor",
                "filter",
                {"condition": {"field": ".k", "str_operator": "equal", "value": "two"}},
                ["t2"],
            ),
            ("store", "destination", "log_analysis", {}, ["f1", "f2"]),
        ],
    )
    # Both throttles see both keys; f1 keeps key "one" of t1, f2 key "two" of t2.
    await post(client, wired, [{"line": "a", "k": "one"}, {"line": "b", "k": "two"}])
    assert await count_lines(client.database_url, account.account_id) == 2
    await post(client, wired, [{"line": "c", "k": "one"}, {"line": "d", "k": "two"}])
    assert await count_lines(client.database_url, account.account_id) == 2  # both full
    await patch_node(
        client,
        wired,
        "processor",
        "t2",
        {"user_config": {"threshold": 2, "window_ms": LONG, "key_field": ".k"}},
    )
    await post(client, wired, [{"line": "x", "k": "two"}])
    assert await count_lines(client.database_url, account.account_id) == 2  # not published
    await publish(client, account, wired.pipeline_id)
    # t2 starts with an empty window (so two more of "two" pass), t1 stays full.
    await post(
        client,
        wired,
        [{"line": "e", "k": "one"}, {"line": "f", "k": "two"}, {"line": "g", "k": "two"}],
    )
    assert await count_lines(client.database_url, account.account_id) == 4


async def test_disabling_the_feature_makes_the_throttle_pass_everything(client: AppClient) -> None:
    account = await new_account(client)
    wired = await wire(
        client,
        account,
        [
            ("t", "processor", "throttle", {"threshold": 1, "window_ms": LONG}, ["source"]),
            ("store", "destination", "log_analysis", {}, ["t"]),
        ],
    )
    await post(client, wired, events(3))
    assert await count_lines(client.database_url, account.account_id) == 1
    response = await client.delete(
        f"/v3/enterprise/account/{account.account_id}/features/throttle-processor",
        headers=account.tenant.headers,
    )
    assert response.status_code == 200, response.text
    await post(client, wired, events(3))
    assert await count_lines(client.database_url, account.account_id) == 4


async def test_second_pipeline_on_the_same_route_gets_every_event(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, [("store", "destination", "log_analysis", {}, ["source"])])
    second = await client.post("/v3/pipeline", json={"title": "p2"}, headers=account.headers)
    second_id = second.json()["data"]["id"]
    source = await client.post(
        f"/v3/pipeline/{second_id}/source",
        json={"type": "http", "gateway_route_id": wired.route_id},
        headers=account.headers,
    )
    await client.post(
        f"/v3/pipeline/{second_id}/destination",
        json={"type": "log_analysis", "inputs": [source.json()["data"]["id"]]},
        headers=account.headers,
    )
    await publish(client, account, second_id)
    response = await client.post(wired.url, json=events(2), headers=wired.auth)
    assert response.json() == {"status": "ok", "events": 2, "pipelines": 2}
    assert await count_lines(client.database_url, account.account_id) == 4
