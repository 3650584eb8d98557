"""What the platform's pipeline Terraform provider (and its quickstart) send, replayed as
HTTP calls against a real ``tidegate serve``: a pipeline with a shared source and its
access key, an http source, a throttle, a filter and a route transform, a blackhole and
an http sink; create, read, update (PUT with the current generation_id), publish,
delete. Every answer must be 200-204 and carry, with the JSON types the provider's Go
structs decode, every field it reads (docs/api-pipelines.md, "The platform's clients").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.gateway.factories import new_account_on
from tests.keys.factories import with_service_key

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
EXCLUDE = {
    "logical_operation": "AND",
    "expressions": [
        {"field": ".host", "str_operator": "equal", "value": "trusted", "negate": False}
    ],
}
ERRORS_ONLY = {
    "logical_operation": "OR",
    "expressions": [
        {"field": ".level", "str_operator": "equal", "value": "error", "negate": False},
        {"field": ".status", "str_operator": "greater_or_equal", "value": 500, "negate": False},
    ],
}


KINDS = {"source": "source", "transform": "processor", "sink": "destination"}


def _resolved(ref: str, ids: dict[str, str]) -> str:
    """``"filter"`` -> the filter's id; ``"route._unmatched"`` -> ``<route id>._unmatched``."""
    name, dot, output = ref.partition(".")
    return ids.get(name, name) + (dot + output if dot else "")


@pytest.fixture(params=["sqlite", "postgres"])
def server_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'replay.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


class Provider:
    """The provider's client: ``Token`` auth, JSON bodies, success is 200-204, bodies
    read from the ``data`` envelope."""

    def __init__(self, http: httpx.AsyncClient, headers: dict[str, str]) -> None:
        self.http = http
        self.headers = headers

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        response = await self.http.request(method, path, json=body, headers=self.headers)
        assert 200 <= response.status_code <= 204, f"{method} {path}: {response.text}"
        if method == "DELETE":
            return None
        return response.json()["data"]

    async def status(self, method: str, path: str, body: Any = None) -> int:
        response = await self.http.request(method, path, json=body, headers=self.headers)
        return response.status_code


def pipeline_read(data: dict[str, Any]) -> None:
    """``client.Pipeline``: id, title, created_at and updated_at as Go times."""
    assert isinstance(data["id"], str)
    assert data["id"]
    assert isinstance(data["title"], str)
    assert RFC3339.match(data["created_at"]), data["created_at"]
    assert RFC3339.match(data["updated_at"]), data["updated_at"]


def node_read(data: dict[str, Any], sent: dict[str, Any], *, kind: str) -> None:
    """``client.Source/Processor/Destination``: what the provider stores in its state."""
    assert isinstance(data["id"], str)
    assert data["id"]
    assert data["type"] == sent["type"]
    assert data["title"] == sent.get("title")
    assert data["description"] == sent.get("description")
    assert isinstance(data["generation_id"], int)
    assert data["inputs"] == sent.get("inputs", [])
    stored = data["user_config"]
    if data["type"] == "route":
        # The provider reads each conditional's ``_output_name`` (a Go string) and finds
        # it among the node's outputs.
        outputs = {output["id"] for output in data["outputs"]}
        for entry in stored["conditionals"]:
            assert f"{data['id']}.{entry.pop('_output_name')}" in outputs
    assert stored == sent["user_config"]  # read back as written
    if kind == "source":
        assert isinstance(data["gateway_route_id"], str)
    if kind == "processor":
        assert isinstance(data["outputs"], list)
        for output in data["outputs"]:
            assert set(output) == {"id", "label"}
            assert output["id"].startswith(data["id"] + ".")


async def test_pipeline_provider_lifecycle(live_server_factory: Any, server_db: str) -> None:
    server = live_server_factory(
        env={
            "TIDEGATE_DATABASE_URL": server_db,
            "TIDEGATE_BOOTSTRAP": "0",
            "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        }
    )
    async with server.async_client() as http:
        # An account's service key (throttle-processor enabled by its enterprise).
        account = await with_service_key(http, await new_account_on(http, server_db))
        tf = Provider(http, account.headers)

        # mezmo_pipeline
        pipeline = await tf.call("POST", "/v3/pipeline", {"title": "edge", "origin": "terraform"})
        pipeline_read(pipeline)
        pid = pipeline["id"]
        pipeline_read(await tf.call("GET", f"/v3/pipeline/{pid}"))
        base = f"/v3/pipeline/{pid}"

        # mezmo_shared_source and mezmo_access_key
        shared = {
            "id": "",
            "consumer_id": "",
            "title": "shared",
            "description": "d",
            "type": "http",
        }
        route = await tf.call("POST", "/v3/pipeline/gateway-route", shared)
        route_id = route["id"]
        assert {k: route[k] for k in ("consumer_id", "title", "description", "type")} == {
            "consumer_id": "",
            "title": "shared",
            "description": "d",
            "type": "http",
        }
        assert (await tf.call("GET", f"/v3/pipeline/gateway-route/{route_id}"))["id"] == route_id
        renamed = await tf.call(
            "PUT",
            f"/v3/pipeline/gateway-route/{route_id}",
            {**shared, "id": route_id, "title": "shared 2", "type": "splunk-hec"},
        )
        assert (renamed["title"], renamed["type"]) == ("shared 2", "splunk-hec")
        key = await tf.call(
            "POST",
            f"/v3/pipeline/gateway-route/{route_id}/access-key",
            {"id": "", "title": "k", "gateway_route_id": route_id, "type": "generated"},
        )
        assert (key["title"], key["gateway_route_id"]) == ("k", route_id)
        assert isinstance(key["key"], str)
        assert key["key"]

        # Nodes: created with generation_id 0, read, updated with PUT.
        sent: dict[str, dict[str, Any]] = {
            "source": {
                "type": "http",
                "title": "in",
                "description": "events",
                "user_config": {"decoding": "json"},
                "generation_id": 0,
                "gateway_route_id": route_id,
            },
        }
        source = await tf.call("POST", f"{base}/source", sent["source"])
        node_read(source, sent["source"], kind="source")
        assert source["gateway_route_id"] == route_id
        ids = {"source": source["id"]}
        # (name, path segment, body); inputs name earlier nodes.
        steps: list[tuple[str, str, dict[str, Any]]] = [
            (
                "throttle",
                "transform",
                {
                    "type": "throttle",
                    "title": "limit",
                    "inputs": ["source"],
                    "user_config": {
                        "threshold": 10,
                        "window_ms": 1000,
                        "key_field": ".app",
                        "exclude": EXCLUDE,
                    },
                },
            ),
            (
                "filter",
                "transform",
                {
                    "type": "filter",
                    "title": "errors",
                    "description": "only errors",
                    "inputs": ["throttle"],
                    "user_config": {"action": "allow", "conditional": ERRORS_ONLY},
                },
            ),
            (
                "route",
                "transform",
                {
                    "type": "route",
                    "inputs": ["filter"],
                    "user_config": {
                        "conditionals": [{"conditional": ERRORS_ONLY, "label": "Errors"}]
                    },
                },
            ),
            (
                "blackhole",
                "sink",
                {
                    "type": "blackhole",
                    "title": "void",
                    "inputs": ["route._unmatched"],
                    "user_config": {"ack_enabled": True},
                },
            ),
            (
                "http",
                "sink",
                {
                    "type": "http",
                    "title": "out",
                    "inputs": ["filter"],
                    "user_config": {
                        "uri": "https://collector.example.com/in",
                        "encoding": "json",
                        "compression": "gzip",
                        "ack_enabled": False,
                        "auth": {"strategy": "none"},
                        "headers": [{"header_name": "x-team", "header_value": "edge"}],
                        "max_bytes": 1_000_000,
                        "timeout_secs": 30,
                        "method": "post",
                    },
                },
            ),
        ]
        paths = {"source": "source"}
        for name, segment, body in steps:
            body["inputs"] = [_resolved(ref, ids) for ref in body["inputs"]]
            body["generation_id"] = 0
            created = await tf.call("POST", f"{base}/{segment}", body)
            node_read(created, body, kind=KINDS[segment])
            ids[name], sent[name], paths[name] = created["id"], body, segment

        for name, segment in paths.items():
            read = await tf.call("GET", f"{base}/{segment}/{ids[name]}")
            node_read(read, sent[name], kind=KINDS[segment])
            assert read["generation_id"] == 0

        # terraform apply after a change: PUT with the generation_id in state.
        for name, segment in paths.items():
            body = {**sent[name], "id": ids[name], "title": f"{name} v2"}
            if name == "source":
                body.pop("gateway_route_id")  # the provider sends it on create only
            updated = await tf.call("PUT", f"{base}/{segment}/{ids[name]}", body)
            assert updated["generation_id"] == 1
            assert updated["title"] == f"{name} v2"
            if name == "source":
                assert updated["gateway_route_id"] == route_id
            stale = await tf.status("PUT", f"{base}/{segment}/{ids[name]}", body)
            assert stale == 409, f"{name}: a stale generation_id must be refused"

        updated_pipeline = await tf.call(
            "PUT", f"/v3/pipeline/{pid}", {"id": pid, "title": "edge 2", "origin": "terraform"}
        )
        pipeline_read(updated_pipeline)
        assert updated_pipeline["title"] == "edge 2"

        # mezmo_publish_pipeline
        published = await tf.call(
            "POST", f"/v3/pipeline/{pid}/publish?allow_unconnected_edges=true", {}
        )
        assert published["id"] == pid

        # terraform destroy: children first; a 404 afterwards drops them from state.
        for name in ("blackhole", "http", "route", "filter", "throttle", "source"):
            await tf.call("DELETE", f"{base}/{paths[name]}/{ids[name]}")
            assert await tf.status("GET", f"{base}/{paths[name]}/{ids[name]}") == 404
        await tf.call("DELETE", f"/v3/pipeline/{pid}")
        assert await tf.status("GET", f"/v3/pipeline/{pid}") == 404
        await tf.call("DELETE", f"/v3/pipeline/gateway-route/{route_id}/access-key/{key['id']}")
        await tf.call("DELETE", f"/v3/pipeline/gateway-route/{route_id}")
        assert await tf.status("GET", f"/v3/pipeline/gateway-route/{route_id}") == 404


async def test_quickstart_reads_a_generated_route(live_server_factory: Any, tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'quickstart.sqlite3'}"
    server = live_server_factory(
        env={"TIDEGATE_DATABASE_URL": database_url, "TIDEGATE_BOOTSTRAP": "0"}
    )
    async with server.async_client() as http:
        account = await new_account_on(http, database_url, throttle=False)
        client = Provider(http, (await with_service_key(http, account)).headers)
        pipeline = await client.call(
            "POST",
            "/v3/pipeline",
            {"title": "quick", "deploy_type": "saas", "deployment_groups": []},
        )
        pipeline_read(pipeline)
        assert (pipeline["deploy_type"], pipeline["deployment_groups"]) == ("saas", [])
        source = await client.call(
            "POST",
            f"/v3/pipeline/{pipeline['id']}/source",
            {"type": "http", "user_config": {"capture_metadata": True, "decoding": "json"}},
        )
        route_id = source["gateway_route_id"]
        assert isinstance(route_id, str)
        assert route_id
        route = await client.call("GET", f"/v3/pipeline/gateway-route/{route_id}")
        assert route["type"] == "http"
