"""The platform's Terraform provider's calls for views, preset alerts, categories and
the index-rate alert, replayed against a real server: create, read, update,
import-style read (a fresh read by id only), delete. Bodies are what the provider
marshals (Go structs with ``omitempty``; flags as strings, ``bodyTemplate`` as an
object); every answer is checked to decode into the provider's response structs
(a JSON type mismatch fails the provider's ``json.Unmarshal``) and to carry the
fields it reads. Any status but 200 is a failure to the provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.ingest.test_live_servers import _account, _env
from tests.live import live_client, live_post

# The provider's response structs: field -> JSON type its Go field accepts.
STRING, BOOL, INT, ANY = "string", "bool", "int", "any"
CHANNEL = {
    "alertid": STRING,
    "bodyTemplate": STRING,
    "emails": ANY,
    "headers": {"*": STRING},
    "immediate": BOOL,
    "integration": STRING,
    "key": STRING,
    "method": STRING,
    "operator": STRING,
    "terminal": BOOL,
    "triggerinterval": ANY,
    "triggerlimit": INT,
    "timezone": STRING,
    "url": STRING,
    "autoresolve": BOOL,
    "autoresolveinterval": STRING,
    "autoresolvelimit": INT,
}
VIEW = {
    "apps": [STRING],
    "category": [STRING],
    "channels": [CHANNEL],
    "error": STRING,
    "hosts": [STRING],
    "levels": [STRING],
    "name": STRING,
    "query": STRING,
    "tags": [STRING],
    "presetids": [STRING],
    "viewID": STRING,
}
ALERT = {"name": STRING, "channels": [CHANNEL], "presetid": STRING}
CATEGORY = {"name": STRING, "type": STRING, "id": STRING}
INDEX_RATE = {
    "max_lines": INT,
    "max_z_score": INT,
    "threshold_alert": STRING,
    "frequency": STRING,
    "channels": {
        "email": [STRING],
        "pagerduty": [STRING],
        "slack": [STRING],
        "webhook": [
            {"url": STRING, "method": STRING, "headers": {"*": STRING}, "bodyTemplate": STRING}
        ],
    },
    "enabled": BOOL,
}


def decodes(value: Any, shape: Any, where: str = "$") -> None:
    """Fails where Go's json.Unmarshal into the provider's struct would fail."""
    if value is None or shape == ANY:
        return
    if shape == STRING:
        assert isinstance(value, str), f"{where}: {value!r} is not a string"
    elif shape == BOOL:
        assert isinstance(value, bool), f"{where}: {value!r} is not a bool"
    elif shape == INT:
        assert isinstance(value, int), f"{where}: not an int"
        assert not isinstance(value, bool), f"{where}: not an int"
    elif isinstance(shape, list):
        assert isinstance(value, list), f"{where}: not an array"
        for n, item in enumerate(value):
            decodes(item, shape[0], f"{where}[{n}]")
    elif isinstance(shape, dict) and "*" in shape:
        assert isinstance(value, dict), f"{where}: not an object"
        for key, item in value.items():
            decodes(item, shape["*"], f"{where}.{key}")
    else:
        assert isinstance(value, dict), f"{where}: not an object"
        for key, item in value.items():
            if key in shape:
                decodes(item, shape[key], f"{where}.{key}")


@pytest.fixture(params=["sqlite", "postgres"])
def server_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'replay.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


class Provider:
    """The provider's request layer: JSON bodies, Token auth for ``st?_`` keys, and
    any status but 200 is an error."""

    def __init__(self, base_url: str, service_key: str) -> None:
        self.http = live_client(base_url)
        self.headers = {"Authorization": f"Token {service_key}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: Any = None) -> Any:
        content = json.dumps(body).encode() if body is not None else None
        response = self.http.request(method, path, content=content, headers=self.headers)
        assert response.status_code == 200, (
            f"{method} {path}: {response.status_code} {response.text}"
        )
        return response.json()


@pytest.fixture
def clients() -> Iterator[list[httpx.Client]]:
    """The providers' HTTP clients, closed when the test ends."""
    made: list[httpx.Client] = []
    yield made
    for http in made:
        http.close()


def _provider(base_url: str, database_url: str, tmp_path: Path) -> Provider:
    who = _account(base_url, database_url, tmp_path)
    headers = {key: value for key, value in who.items() if key not in ("account_id", "key")}
    created = live_post(f"{base_url}/v1/config/keys", params={"type": "service"}, headers=headers)
    assert created.status_code == 200, created.text
    key = created.json()["key"]
    assert key.startswith("sta_")
    return Provider(base_url, key)


def _view_request(name: str, *, webhook_url: str, presetid: str = "") -> dict[str, Any]:
    """viewRequest as marshalled: omitempty drops empty strings and lists."""
    body: dict[str, Any] = {
        "apps": ["checkout"],
        "category": ["Production"],
        "hosts": ["web-1", "web-2"],
        "levels": ["error", "fatal"],
        "name": name,
        "query": "payment failed -test",
        "tags": ["blue"],
    }
    if presetid:
        body["presetid"] = presetid
        return body
    body["channels"] = [
        {
            "emails": ["oncall@example.com"],
            "immediate": "false",
            "integration": "email",
            "operator": "absence",
            "terminal": "true",
            "triggerinterval": "15m",
            "triggerlimit": 15,
            "timezone": "Pacific/Samoa",
        },
        {
            "immediate": "false",
            "integration": "pagerduty",
            "key": "Your PagerDuty API key goes here",
            "operator": "presence",
            "terminal": "true",
            "triggerinterval": "15m",
            "triggerlimit": 15,
            "autoresolve": True,
            "autoresolveinterval": "15m",
            "autoresolvelimit": 10,
        },
        {
            "immediate": "false",
            "integration": "slack",
            "operator": "absence",
            "terminal": "true",
            "triggerinterval": "15m",
            "triggerlimit": 15,
            "url": "https://hooks.slack.com/services/identifier/secret",
        },
        {
            "bodyTemplate": {"hello": "test1", "message": "Alert for {{name}}", "test": "test2"},
            "headers": {"Authentication": "auth_header_value", "HeaderTwo": "ValueTwo"},
            "immediate": "false",
            "integration": "webhook",
            "method": "post",
            "operator": "presence",
            "terminal": "true",
            "triggerinterval": "15m",
            "triggerlimit": 15,
            "url": webhook_url,
        },
    ]
    return body


def _check_view(view: dict[str, Any], sent: dict[str, Any]) -> None:
    decodes(view, VIEW)
    for field in ("name", "query", "apps", "hosts", "levels", "tags", "category"):
        assert view[field] == sent[field], field
    if sent.get("presetid"):
        assert "".join(view["presetids"]) == sent["presetid"]
        return
    assert view["presetids"] == []
    by_kind = {channel["integration"]: channel for channel in view["channels"]}
    assert set(by_kind) == {"email", "pagerduty", "slack", "webhook"}
    assert by_kind["email"]["emails"] == ["oncall@example.com"]
    assert by_kind["email"]["timezone"] == "Pacific/Samoa"
    assert by_kind["pagerduty"]["key"] == "Your PagerDuty API key goes here"
    assert by_kind["pagerduty"]["autoresolve"] is True
    assert by_kind["pagerduty"]["autoresolveinterval"] == "15m"
    assert by_kind["pagerduty"]["autoresolvelimit"] == 10
    assert by_kind["slack"]["url"] == "https://hooks.slack.com/services/identifier/secret"
    hook = by_kind["webhook"]
    assert json.loads(hook["bodyTemplate"]) == sent["channels"][3]["bodyTemplate"]
    assert hook["headers"] == sent["channels"][3]["headers"]
    assert hook["method"] == "post"  # as sent: no diff on the next plan
    for channel in view["channels"]:
        # The provider's schema holds the flags as "true"/"false" strings.
        assert str(channel["terminal"]).lower() == "true"
        assert str(channel["immediate"]).lower() == "false"
        assert channel["triggerinterval"] == "15m"
        assert channel["triggerlimit"] == 15


def test_views_preset_alerts_categories_and_index_rate(
    live_server_factory: Any, server_db: str, tmp_path: Path, clients: list[httpx.Client]
) -> None:
    env = {**_env(server_db), "TIDEGATE_DESTINATION_ALLOW": "127.0.0.1"}
    server = live_server_factory(env=env)
    provider = _provider(server.base_url, server_db, tmp_path)
    clients.append(provider.http)
    hook = "https://8.8.8.8/alerts"

    # logdna_category (type views, the provider's default)
    category = provider.call("POST", "/v1/config/categories/views", {"name": "Production"})
    decodes(category, CATEGORY)
    category_id = f"{category['type']}:{category['id']}"  # the provider's resource id
    kind, ident = category_id.split(":", 1)
    read = provider.call("GET", f"/v1/config/categories/{kind}/{ident}")
    assert (read["type"], read["name"], read["id"]) == ("views", "Production", ident)
    provider.call("PUT", f"/v1/config/categories/{kind}/{ident}", {"name": "Prod"})
    assert provider.call("GET", f"/v1/config/categories/{kind}/{ident}")["name"] == "Prod"

    # logdna_alert (preset alert)
    alert_body = {
        "name": "Email PagerDuty and Webhook Preset Alert",
        "channels": _view_request("x", webhook_url=hook)["channels"],
    }
    created_alert = provider.call("POST", "/v1/config/presetalert", alert_body)
    decodes(created_alert, ALERT)
    preset_id = created_alert["presetid"]
    alert = provider.call("GET", f"/v1/config/presetalert/{preset_id}")
    decodes(alert, ALERT)
    assert alert["name"] == alert_body["name"]
    assert len(alert["channels"]) == 4
    alert_body["name"] = "Renamed preset"
    provider.call("PUT", f"/v1/config/presetalert/{preset_id}", alert_body)
    assert provider.call("GET", f"/v1/config/presetalert/{preset_id}")["name"] == "Renamed preset"

    # logdna_view with its own channels
    sent = _view_request("Checkout errors", webhook_url=hook)
    created = provider.call("POST", "/v1/config/view", sent)
    decodes(created, VIEW)
    view_id = created["viewID"]
    _check_view(provider.call("GET", f"/v1/config/view/{view_id}"), sent)
    sent["name"] = "Checkout errors (renamed)"
    sent["levels"] = ["error"]
    provider.call("PUT", f"/v1/config/view/{view_id}", sent)
    _check_view(provider.call("GET", f"/v1/config/view/{view_id}"), sent)

    # logdna_view attached to the preset alert
    with_preset = _view_request("With preset", webhook_url=hook, presetid=preset_id)
    preset_view = provider.call("POST", "/v1/config/view", with_preset)["viewID"]
    _check_view(provider.call("GET", f"/v1/config/view/{preset_view}"), with_preset)

    # logdna_index_rate_alert (PUT creates and updates; GET reads)
    rate = {
        "max_lines": 3,
        "max_z_score": 3,
        "threshold_alert": "separate",
        "frequency": "hourly",
        "channels": {
            "email": ["ops@example.com"],
            "pagerduty": ["pd-service-key"],
            "slack": ["https://hooks.slack.com/services/T/B/X"],
            "webhook": [
                {
                    "url": hook,
                    "method": "POST",
                    "headers": {"key": "value"},
                    "bodyTemplate": {"message": "Index rate: {{summary}}"},
                }
            ],
        },
        "enabled": True,
    }
    decodes(provider.call("PUT", "/v1/config/index-rate", rate), INDEX_RATE)
    got = provider.call("GET", "/v1/config/index-rate")
    decodes(got, INDEX_RATE)
    assert got["max_lines"] == 3
    assert got["max_z_score"] == 3
    assert got["channels"]["webhook"][0]["headers"] == {"key": "value"}
    assert json.loads(got["channels"]["webhook"][0]["bodyTemplate"]) == {
        "message": "Index rate: {{summary}}"
    }
    rate["frequency"] = "daily"
    provider.call("PUT", "/v1/config/index-rate", rate)
    assert provider.call("GET", "/v1/config/index-rate")["frequency"] == "daily"

    # Import: a fresh provider process reads each resource by its id alone.
    fresh = Provider(server.base_url, provider.headers["Authorization"].split(" ", 1)[1])
    clients.append(fresh.http)
    _check_view(fresh.call("GET", f"/v1/config/view/{view_id}"), sent)
    decodes(fresh.call("GET", f"/v1/config/presetalert/{preset_id}"), ALERT)
    assert fresh.call("GET", f"/v1/config/categories/{kind}/{ident}")["name"] == "Prod"
    decodes(fresh.call("GET", "/v1/config/index-rate"), INDEX_RATE)

    # Destroy: DELETE for all but the index-rate alert, which is PUT with enabled false.
    for path in (
        f"/v1/config/view/{view_id}",
        f"/v1/config/view/{preset_view}",
        f"/v1/config/presetalert/{preset_id}",
        f"/v1/config/categories/{kind}/{ident}",
    ):
        provider.call("DELETE", path)
        gone = provider.http.get(path, headers=provider.headers)
        assert gone.status_code == 404
        assert gone.json()["status"] == "error"
    provider.call("PUT", "/v1/config/index-rate", {**rate, "enabled": False})
    assert provider.call("GET", "/v1/config/index-rate")["enabled"] is False
