"""The platform's Terraform provider against a real ``tidegate serve`` (and a second
server on the same SQLite database, as a second host would be): its exact calls for ``logdna_key`` and ``logdna_ingestion_exclusion``
(create, read, update, import-style read, delete), and the documented suspension calls,
each answer checked for the fields and types the provider reads.

The provider (terraform-provider-logdna, logdna/request.go) sends ``Authorization:
Token <key>`` for keys matching ``^st[a-z]_[0-9a-f]{40}$`` (else a ``servicekey``
header), JSON bodies with ``Content-Type: application/json`` only when there is a body,
and treats every status but 200 as a failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.live import live_client, live_get, live_post, live_request

PLATFORM_TOKEN = re.compile(r"^st[a-z]_[0-9a-f]{40}$")


class Provider:
    """The provider's request function (``MakeRequest``), as a test client."""

    def __init__(self, base_url: str, service_key: str, *, start_peer: Any = None) -> None:
        self.base_url = base_url
        self.service_key = service_key
        self.start_peer = start_peer  # another server on the same database

    def request(self, method: str, uri: str, body: Any = None) -> Any:
        headers = {}
        if PLATFORM_TOKEN.match(self.service_key):
            headers["Authorization"] = f"Token {self.service_key}"
        else:
            headers["servicekey"] = self.service_key
        content = b""
        if body is not None:
            content = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        response = live_request(method, self.base_url + uri, content=content, headers=headers)
        assert response.status_code == 200, (method, uri, response.status_code, response.text)
        return response.json()


def _ingest(base_url: str, key: str, text: str) -> int:
    with live_client() as fresh:
        return fresh.post(
            f"{base_url}/logs/ingest",
            params={"hostname": "tf-host"},
            json={"lines": [{"line": text, "app": "tf"}]},
            headers={"apikey": key},
        ).status_code


@pytest.fixture
def provider(live_server_factory: Any, tmp_path: Path) -> Provider:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'tf.sqlite3'}"
    env = {
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
    }
    server = live_server_factory(env=env)
    created = subprocess.run(
        [sys.executable, "-m", "tidegate", "enterprise", "create", "--name", "tf"],
        env={**os.environ, **env, "TIDEGATE_DATA_DIR": str(tmp_path / "cli")},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    enterprise = {"Authorization": f"Token {json.loads(created.stdout)['token']}"}
    account = live_post(
        f"{server.base_url}/v3/enterprise/account",
        json={"company": "Acme", "owneremail": f"o-{uuid.uuid4().hex[:6]}@example.com"},
        headers=enterprise,
        timeout=30,
    ).json()["data"]
    delegated = {**enterprise, "x-delegate-account-id": account["account_id"]}
    service_key = live_post(
        f"{server.base_url}/v1/config/keys",
        params={"type": "service"},
        headers=delegated,
        timeout=30,
    ).json()["key"]
    return Provider(server.base_url, service_key, start_peer=lambda: live_server_factory(env=env))


def _assert_key_read(read: dict[str, Any], *, key_id: str, type_: str, name: str) -> None:
    """resourceKeyRead: d.Set of type, name, id, key, created (keyResponse)."""
    assert read["id"] == key_id
    assert read["type"] == type_
    assert read["name"] == name
    assert isinstance(read["key"], str)
    assert read["key"]
    assert isinstance(read["created"], int)
    assert read["created"] > 10**12  # epoch milliseconds


def test_logdna_key_lifecycle(provider: Provider) -> None:
    base = provider.base_url
    # Create: POST ?type=..., the provider keeps only the id, then reads.
    created = provider.request("POST", "/v1/config/keys?type=ingestion", {"name": "tf-ingest"})
    key_id = created["id"]
    read = provider.request("GET", f"/v1/config/keys/{key_id}")
    _assert_key_read(read, key_id=key_id, type_="ingestion", name="tf-ingest")
    assert read["key"] == created["key"]
    # What the state holds is a working ingestion key.
    assert _ingest(base, read["key"], "from terraform state") == 200

    # An unnamed service key: keyRequest{Name: ""} marshals to {} (omitempty).
    service = provider.request("POST", "/v1/config/keys?type=service", {})
    service_read = provider.request("GET", f"/v1/config/keys/{service['id']}")
    assert PLATFORM_TOKEN.match(service_read["key"])
    assert service_read["name"] is None  # Go decodes null into ""
    assert Provider(base, service_read["key"]).request("GET", "/v1/config/keys")

    # Update: PUT {name}, then read.
    provider.request("PUT", f"/v1/config/keys/{key_id}", {"name": "renamed"})
    after = provider.request("GET", f"/v1/config/keys/{key_id}")
    _assert_key_read(after, key_id=key_id, type_="ingestion", name="renamed")
    assert after["key"] == read["key"]
    assert after["created"] == read["created"]
    provider.request("PUT", f"/v1/config/keys/{key_id}", {})  # name "" omitted
    assert provider.request("GET", f"/v1/config/keys/{key_id}")["name"] == "renamed"

    # Import: terraform import logdna_key.x <id> reads by id alone.
    imported = Provider(base, provider.service_key).request("GET", f"/v1/config/keys/{key_id}")
    assert imported == after

    # Delete, then the read fails (the provider drops the resource) and the key is dead.
    provider.request("DELETE", f"/v1/config/keys/{key_id}")
    gone = live_get(
        f"{base}/v1/config/keys/{key_id}",
        headers={"Authorization": f"Token {provider.service_key}"},
        timeout=30,
    )
    assert gone.status_code == 404
    assert _ingest(base, read["key"], "after delete") == 403


def test_logdna_ingestion_exclusion_lifecycle(provider: Provider) -> None:
    # ingestionExclusionRule: id omitted (omitempty), every other field always sent.
    body = {
        "title": "drop health checks",
        "active": True,
        "apps": ["tf"],
        "hosts": [],
        "query": "healthcheck",
        "indexonly": False,
    }
    created = provider.request("POST", "/v1/config/ingestion/exclusions", body)
    for field in ("id", "title", "active", "apps", "hosts", "query"):
        assert field in created
    rule_id = created["id"]
    assert created["apps"] == ["tf"]
    assert created["hosts"] == []

    # Read: the spec's one-element array (the provider decodes one object: spec wins).
    (read,) = provider.request("GET", f"/v1/config/ingestion/exclusions/{rule_id}")
    assert {k: read[k] for k in body} == body
    assert read["id"] == rule_id

    changed = {**body, "title": "renamed", "active": False, "hosts": ["tf-host"], "query": ""}
    provider.request("PATCH", f"/v1/config/ingestion/exclusions/{rule_id}", changed)
    (after,) = provider.request("GET", f"/v1/config/ingestion/exclusions/{rule_id}")
    assert {k: after[k] for k in changed} == changed

    provider.request("DELETE", f"/v1/config/ingestion/exclusions/{rule_id}")
    gone = live_get(
        f"{provider.base_url}/v1/config/ingestion/exclusions/{rule_id}",
        headers={"Authorization": f"Token {provider.service_key}"},
        timeout=30,
    )
    assert gone.status_code == 404


def test_suspension_calls_and_their_effect_on_every_server(provider: Provider) -> None:
    base = provider.base_url
    peer = provider.start_peer().base_url
    key = provider.request("POST", "/v1/config/keys?type=ingestion", {"name": "agent"})["key"]
    assert provider.request("GET", "/v1/config/ingestion/status")["status"] == "active"
    assert _ingest(base, key, "before") == 200

    token = provider.request("POST", "/v1/config/ingestion/suspend")["token"]
    assert isinstance(token, str)
    confirmed = provider.request("POST", "/v1/config/ingestion/suspend/confirm", {"token": token})
    assert confirmed["status"] == "suspended"
    assert provider.request("GET", "/v1/config/ingestion/status")["status"] == "suspended"
    # At once, on this server and on the other one (no cache to expire).
    assert {_ingest(server, key, "suspended") for server in (base, peer, base, peer)} == {403}

    resumed = provider.request("POST", "/v1/config/ingestion/resume")
    assert resumed["status"] == "active"
    assert [_ingest(server, key, f"resumed {i}") for i, server in enumerate((peer, base))] == [
        200,
        200,
    ]

    lines = live_get(
        f"{base}/v1/export",
        params={"q": "", "servicekey": provider.service_key, "json": "true", "prefer": "head"},
        timeout=30,
    )
    assert lines.status_code == 200, lines.text
    texts = [row["_line"] for row in lines.json()]
    assert texts == ["before", "resumed 0", "resumed 1"]
