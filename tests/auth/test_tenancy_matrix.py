"""No key of one enterprise can read or change anything of another, on every endpoint.

The matrix is built from the OpenAPI document itself, so an endpoint added later is
covered (and the coverage assertion fails until the matrix knows how to fill its path).
Tenant A makes one of every resource; tenant B attacks every operation with A's ids,
with valid bodies (so a 400 cannot hide a missing tenancy check), as its enterprise
key, as its own account, through its own service key, and by trying to delegate into
A's account. Nothing may succeed, no answer may carry A's ids, and A's state must be
unchanged afterwards.
"""

from __future__ import annotations

import re
from typing import Any

from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.keys.factories import create_key, with_service_key
from tests.views.test_endpoints import provider_channel, view_body

FILTER = {
    "condition": {"expressions": [{"field": ".level", "str_operator": "equal", "value": "debug"}]}
}

# A pipeline alert as the Terraform provider sends it (no URL to vet).
PIPELINE_ALERT = {
    "inputs": ["x"],
    "active": True,
    "alert_config": {
        "general": {"name": "pwned"},
        "evaluation": {"alert_type": "absence", "event_type": "metric"},
        "alert_payload": {"service": {"name": "log_analysis", "ingestion_key": "k"}},
    },
}

BODIES: dict[tuple[str, str], Any] = {
    # A person's own settings: a key has none (403), a person changes only their own.
    ("PATCH", "/v1/auth/preferences"): {"utc": True},
    ("POST", "/v1/auth/preferences/query-history"): {"query": "pwned"},
    ("POST", "/v1/auth/preferences/query-history/forget"): {"query": "pwned"},
    ("PATCH", "/v3/enterprise/account/{account_id}"): {"company": "pwned"},
    ("PUT", "/v1/config/keys/{id}"): {"name": "pwned"},
    ("PATCH", "/v1/config/ingestion/exclusions/{id}"): {"title": "pwned"},
    ("PATCH", "/v1/config/parsing/templates/{id}"): {"name": "pwned", "state": "active"},
    # Runs on the caller's own latest lines: none of the victim's may come back.
    ("POST", "/v1/config/parsing/templates/preview"): {"pattern": "(?P<all>.+)"},
    ("PUT", "/v1/config/parsing/templates/order"): {"ids": []},
    ("PATCH", "/v1/config/board/{boardid}"): {"title": "pwned"},
    ("PUT", "/v3/pipeline/gateway-route/{gateway_route_id}"): {"title": "pwned"},
    ("POST", "/v3/pipeline/gateway-route/{gateway_route_id}/access-key"): {
        "type": "generated",
        "title": "x",
    },
    ("PUT", "/v3/pipeline/gateway-route/{gateway_route_id}/signing-key"): {"key": "k" * 32},
    ("PATCH", "/v3/pipeline/{pipeline_id}"): {"title": "pwned"},
    ("POST", "/v3/pipeline/{pipeline_id}/simulate"): {"events": [{"app": "a", "line": "x"}]},
    ("POST", "/v3/pipeline/{pipeline_id}/source"): {
        "type": "http",
        "gateway_route_id": "{gateway_route_id}",
    },
    ("POST", "/v3/pipeline/{pipeline_id}/processor"): {"type": "filter", "user_config": FILTER},
    ("POST", "/v3/pipeline/{pipeline_id}/destination"): {"type": "blackhole"},
    ("PATCH", "/v3/pipeline/{pipeline_id}/source/{node_id}"): {"title": "pwned"},
    ("PATCH", "/v3/pipeline/{pipeline_id}/processor/{node_id}"): {"title": "pwned"},
    ("PATCH", "/v3/pipeline/{pipeline_id}/destination/{node_id}"): {"title": "pwned"},
    ("PUT", "/v3/pipeline/{pipeline_id}"): {"title": "pwned"},
    ("POST", "/v3/pipeline/{pipeline_id}/publish"): {},
    ("POST", "/v3/pipeline/{pipeline_id}/transform"): {"type": "filter", "user_config": FILTER},
    ("POST", "/v3/pipeline/{pipeline_id}/sink"): {"type": "blackhole"},
    ("PUT", "/v3/pipeline/{pipeline_id}/source/{node_id}"): {"type": "http"},
    ("PUT", "/v3/pipeline/{pipeline_id}/transform/{node_id}"): {
        "type": "filter",
        "user_config": FILTER,
    },
    ("PUT", "/v3/pipeline/{pipeline_id}/sink/{node_id}"): {"type": "blackhole"},
    ("PATCH", "/v3/pipeline/{pipeline_id}/transform/{node_id}"): {"title": "pwned"},
    ("PATCH", "/v3/pipeline/{pipeline_id}/sink/{node_id}"): {"title": "pwned"},
    ("POST", "/v3/pipeline/{pipeline_id}/tap/{component_id}"): {"limit": 1, "timeout": 1},
    ("POST", "/v3/pipeline/{pipeline_id}/tap/{component_id}/stream"): {"rate": 1},
    ("POST", "/v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert"): PIPELINE_ALERT,
    ("PUT", "/v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert/{alert_id}"): PIPELINE_ALERT,
    ("PUT", "/v1/config/members/{email}"): {"role": "readonly", "groups": []},
    ("PATCH", "/v1/config/groups/{groupId}"): {"name": "pwned", "apps": ["x"]},
    ("PUT", "/v1/config/view/{viewID}"): view_body(name="pwned"),
    ("POST", "/v1/config/view/{viewID}/alerts"): provider_channel(emails=["x@example.com"]),
    ("PUT", "/v1/config/presetalert/{presetid}"): {
        "name": "pwned",
        "channels": [provider_channel(emails=["x@example.com"])],
    },
    ("POST", "/v1/config/categories/{type}"): {"name": "mine"},
    ("PUT", "/v1/config/categories/{type}/{id}"): {"name": "pwned"},
}

# Templated paths whose parameters choose within the caller's own data, not a resource.
SELECTOR_PATHS = ("/v1/usage/", "/v2/usage/")
# Path parameters that name no resource of anyone's: a kind of usage field and its value,
# a kind of pipeline component, a type of category (within the caller's own account,
# whatever the path says).
NOT_IDS = {"kind", "name", "type"}


def names_a_resource(template: str) -> bool:
    if template.startswith(SELECTOR_PATHS):
        return False
    return bool(set(re.findall(r"\{(\w+)\}", template)) - NOT_IDS)


async def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code in (status, 201), response.text
    return response.json()


async def build_victim(client: AppClient) -> tuple[AccountCtx, dict[str, str]]:
    tenant = await make_tenant(client.database_url)
    account = await with_service_key(client, await make_account(client, tenant))
    h = account.headers
    ids: dict[str, str] = {"account_id": account.account_id, "feature": "throttle-processor"}
    ids["service_key"] = (await create_key(client, account, type_="service"))["id"]
    rule = await _ok(
        await client.post(
            "/v1/config/ingestion/exclusions", json={"title": "r", "apps": ["a"]}, headers=h
        )
    )
    ids["exclusion"] = rule["id"]
    template = await _ok(
        await client.post(
            "/v1/config/parsing/templates",
            json={"name": "t", "pattern": "secret=(?P<secret>\\w+)"},
            headers=h,
        )
    )
    ids["parsing_template"] = template["id"]
    board = await _ok(await client.post("/v1/config/board", json={"title": "b"}, headers=h))
    ids["boardid"] = board["boardid"]
    route = (
        await _ok(await client.post("/v3/pipeline/gateway-route", json={"title": "g"}, headers=h))
    )["data"]
    ids["gateway_route_id"] = route["id"]
    base = f"/v3/pipeline/gateway-route/{route['id']}"
    access = (
        await _ok(await client.post(base + "/access-key", json={"type": "generated"}, headers=h))
    )["data"]
    ids["key_id"] = access["id"]
    signing = (
        await _ok(await client.put(base + "/signing-key", json={"key": "s" * 32}, headers=h))
    )["data"]
    ids["signing_key_id"] = signing["id"]
    pipeline = (await _ok(await client.post("/v3/pipeline", json={"title": "p"}, headers=h)))[
        "data"
    ]
    ids["pipeline_id"] = pipeline["id"]
    p = f"/v3/pipeline/{pipeline['id']}"
    source = await _ok(
        await client.post(
            p + "/source", json={"type": "http", "gateway_route_id": route["id"]}, headers=h
        )
    )
    ids["source"] = source["data"]["id"]
    processor = await _ok(
        await client.post(
            p + "/processor",
            json={"type": "filter", "user_config": FILTER, "inputs": [ids["source"]]},
            headers=h,
        )
    )
    ids["processor"] = processor["data"]["id"]
    destination = await _ok(
        await client.post(
            p + "/destination", json={"type": "blackhole", "inputs": [ids["processor"]]}, headers=h
        )
    )
    ids["destination"] = destination["data"]["id"]
    alert = await _ok(
        await client.post(f"{p}/transform/{ids['processor']}/alert", json=PIPELINE_ALERT, headers=h)
    )
    ids["alert_id"] = alert["data"]["id"]
    group = await _ok(await client.post("/v1/config/groups", json={"name": "g"}, headers=h))
    ids["groupId"] = group["id"]
    member = await _ok(
        await client.post(
            "/v1/config/members",
            json={"email": f"m-{account.account_id}@example.com", "role": "member"},
            headers=h,
        )
    )
    ids["email"] = member["email"]
    ids["account"] = account.data["account"]
    preset = await _ok(
        await client.post(
            "/v1/config/presetalert",
            json={"name": "p", "channels": [provider_channel(emails=["a@example.com"])]},
            headers=h,
        )
    )
    ids["presetid"] = preset["presetid"]
    view = await _ok(await client.post("/v1/config/view", json=view_body(), headers=h))
    ids["viewID"] = view["viewID"]
    category = await _ok(
        await client.post("/v1/config/categories/views", json={"name": "c"}, headers=h)
    )
    ids["category"] = category["id"]
    ids["type"] = "views"
    return account, ids


def fill(path: str, ids: dict[str, str]) -> str | None:
    """The path with the victim's ids, or None when the matrix does not know a parameter."""
    values = dict(ids)
    if path.startswith("/v1/config/keys/"):
        values["id"] = ids["service_key"]
    elif path.startswith("/v1/config/ingestion/exclusions/"):
        values["id"] = ids["exclusion"]
    elif path.startswith("/v1/config/parsing/templates/"):
        values["id"] = ids["parsing_template"]
    elif path.startswith("/v1/config/categories/") and "category" in ids:
        values["id"] = ids["category"]
    for segment, kind in (
        ("source", "source"),
        ("processor", "processor"),
        ("transform", "processor"),
        ("destination", "destination"),
        ("sink", "destination"),
    ):
        if f"/{segment}/" in path:
            values["node_id"] = ids[kind]
    values["component_id"] = ids["processor"]
    # Usage paths select within the caller's own account (tests/usage covers that one
    # account's lines never count for another): a kind and a name, no resource id.
    values["kind"] = "transform" if path.startswith("/v3/pipeline/") else "hosts"
    values["name"] = "web-1"
    try:
        return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)
    except KeyError:
        return None


async def snapshot(client: AppClient, account: AccountCtx, ids: dict[str, str]) -> list[Any]:
    h = account.headers
    reads = [
        client.get(f"/v3/enterprise/account/{ids['account_id']}", headers=account.tenant.headers),
        client.get(
            f"/v3/enterprise/account/{ids['account_id']}/features", headers=account.tenant.headers
        ),
        client.get("/v1/config/keys", headers=h),
        client.get("/v1/config/ingestion/exclusions", headers=h),
        client.get("/v1/config/parsing/templates", headers=h),
        client.get(f"/v1/config/board/{ids['boardid']}", headers=h),
        client.get(f"/v3/pipeline/gateway-route/{ids['gateway_route_id']}", headers=h),
        client.get(f"/v3/pipeline/gateway-route/{ids['gateway_route_id']}/access-key", headers=h),
        client.get(f"/v3/pipeline/gateway-route/{ids['gateway_route_id']}/signing-key", headers=h),
        client.get(f"/v3/pipeline/{ids['pipeline_id']}", headers=h),
        client.get(f"/v3/pipeline/{ids['pipeline_id']}/alert/{ids['alert_id']}", headers=h),
        client.get("/v1/config/members", headers=h),
        client.get("/v1/config/groups", headers=h),
    ]
    out = []
    for read in reads:
        response = await read
        assert response.status_code == 200, response.text
        out.append(response.json())
    return out


async def test_no_tenant_reaches_another_on_any_endpoint(client: AppClient) -> None:
    victim, ids = await build_victim(client)
    before = await snapshot(client, victim, ids)

    attacker_tenant = await make_tenant(client.database_url)
    attacker = await with_service_key(client, await make_account(client, attacker_tenant))
    identities = {
        "enterprise key": attacker_tenant.headers,
        "delegated to own account": attacker_tenant.as_account(attacker.account_id),
        "own service key": attacker.headers,
        "delegating into the victim": attacker_tenant.as_account(victim.account_id),
    }
    secret_ids = {value for key, value in ids.items() if key != "feature"}

    document = (await client.get("/openapi.json")).json()
    attempted: set[str] = set()
    streams: set[str] = set()
    for template, operations in document["paths"].items():
        for method, operation in operations.items():
            method = method.upper()
            if "text/event-stream" in operation["responses"].get("200", {}).get("content", {}):
                streams.add(f"{method} {template}")
                if "{" not in template:
                    # A stream of the caller's own account never ends over in-process
                    # ASGI; live tail's tenancy is tested through a real server in
                    # tests/tail. A stream of a named resource (a pipeline's tap) is
                    # refused before it opens, so it is tried here.
                    continue
            path = fill(template, ids)
            if "{" in template:
                assert path is not None, f"the tenancy matrix cannot fill {template}"
                attempted.add(template)
            for name, headers in identities.items():
                body = BODIES.get((method, template))
                if isinstance(body, dict):
                    body = {k: fill(v, ids) if isinstance(v, str) else v for k, v in body.items()}
                response = await client.request(
                    method, path or template, json=body, headers=headers
                )
                where = f"{method} {template} as {name}"
                # The data plane takes its own credentials (access and ingestion keys), so
                # a management key there is simply not a credential.
                refused = (
                    (401, 403, 404) if template.startswith(("/gateway/", "/logs/")) else (403, 404)
                )
                if names_a_resource(template):
                    assert response.status_code in refused, (
                        f"{where}: {response.status_code} {response.text}"
                    )
                else:
                    assert response.status_code < 500, where
                # An id the attacker sent in the path may be echoed in the error; any
                # other id of the victim's in an answer is a leak.
                leaked = [v for v in secret_ids if v in response.text and v not in (path or "")]
                assert not leaked, f"{where} leaked {leaked}: {response.text}"

    templated = {t for t in document["paths"] if "{" in t}
    assert attempted == templated
    assert streams == {
        "GET /v1/tail",
        "POST /v3/pipeline/{pipeline_id}/tap/{component_id}/stream",
    }, streams
    assert await snapshot(client, victim, ids) == before


async def test_references_to_another_tenants_objects_are_refused(client: AppClient) -> None:
    _victim, ids = await build_victim(client)
    attacker = await make_account(client, await make_tenant(client.database_url))
    pipeline = (
        await client.post("/v3/pipeline", json={"title": "mine"}, headers=attacker.headers)
    ).json()["data"]
    # Binding my source to the victim's gateway route: refused exactly as a missing route.
    bind = await client.post(
        f"/v3/pipeline/{pipeline['id']}/source",
        json={"type": "http", "gateway_route_id": ids["gateway_route_id"]},
        headers=attacker.headers,
    )
    missing = await client.post(
        f"/v3/pipeline/{pipeline['id']}/source",
        json={"type": "http", "gateway_route_id": "0" * 36},
        headers=attacker.headers,
    )
    assert bind.status_code == missing.status_code == 400
    # Wiring the victim's node into my pipeline: a dangling input.
    wire = await client.post(
        f"/v3/pipeline/{pipeline['id']}/destination",
        json={"type": "blackhole", "inputs": [ids["processor"]]},
        headers=attacker.headers,
    )
    assert wire.status_code == 400
