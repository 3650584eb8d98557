"""Every operation x every role: what each role may do, on every endpoint.

The operations are enumerated from the app itself (tidegate.auth.permissions.route_permissions),
so an endpoint added later is covered, and one that declares no permission fails here.
People of each role sign in through the web app's session (cookie + CSRF token) and
call every operation on their own account's resources: a role below the operation's
permission gets exactly 403 and changes nothing; the lowest role allowed gets past the
check (its answer is whatever the operation answers, never 403 or a 5xx); reads are
tried by every role allowed.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.auth.test_tenancy_matrix import BODIES, build_victim, fill, snapshot
from tests.conftest import AppClient
from tests.users.factories import Browser, add_person, sign_in_person

from tidegate.auth.permissions import route_permissions
from tidegate.auth.roles import MINIMUM_ROLE, Permission, Role
from tidegate.web.endpoints import ASSETS_PREFIX as WEB_ASSETS_PREFIX
from tidegate.web.endpoints import PAGES as WEB_PAGES

# Operations with no credentials at all: the data plane's own keys, sign-in and its
# tokens, health, metrics, the docs. A new public endpoint must be added here on purpose.
PUBLIC = {
    ("GET", "/healthz"),
    ("GET", "/metrics"),
    ("POST", "/gateway/{gateway_route_id}"),
    ("POST", "/logs/ingest"),
    ("POST", "/logs/agent"),
    ("POST", "/v1/auth/session"),
    ("POST", "/v1/auth/invitation/accept"),
    ("POST", "/v1/auth/password-reset"),
    ("POST", "/v1/auth/password-reset/confirm"),
    ("POST", "/login"),
    ("GET", "/docs"),
    ("GET", "/docs/oauth2-redirect"),
    ("GET", "/redoc"),
    ("GET", "/docs-assets/{name}"),
    ("GET", "/openapi.json"),
    # The web app's shell and assets: no data, every page's data comes from the API.
    *(("GET", page) for page in WEB_PAGES),
    ("GET", WEB_ASSETS_PREFIX + "/{version}/{name:path}"),
    ("GET", "/favicon.ico"),
    # Pipeline sources of other protocols: the route's own access keys.
    ("POST", "/gateway/{gateway_route_id}/services/collector"),
    ("POST", "/gateway/{gateway_route_id}/services/collector/event"),
    ("POST", "/gateway/{gateway_route_id}/services/collector/event/1.0"),
    ("POST", "/gateway/{gateway_route_id}/services/collector/raw"),
    ("POST", "/gateway/{gateway_route_id}/services/collector/raw/1.0"),
    ("POST", "/gateway/{gateway_route_id}/v1/logs"),
    ("POST", "/gateway/{gateway_route_id}/v1/metrics"),
    ("POST", "/gateway/{gateway_route_id}/v1/traces"),
    ("POST", "/gateway/{gateway_route_id}/api/v1/write"),
    ("POST", "/gateway/{gateway_route_id}/api/v2/logs"),
    ("POST", "/gateway/{gateway_route_id}/api/v1/series"),
    ("POST", "/gateway/{gateway_route_id}/api/v2/series"),
}
# WebSocket routes authenticate inside their handler (principal_of + principal.require:
# tidegate/tail/websocket.py requires READ); a new one must be listed here on purpose.
SOCKETS = {("WEBSOCKET", "/ws/tail")}
# Streams never end over in-process ASGI (their roles are the data plane's READ, checked
# before the stream starts; tests/tail covers them through a real server); signing out
# would end the caller's own session (tests/sessions).
SKIPPED = {("GET", "/v1/tail"), ("DELETE", "/v1/auth/session")}
# Streams the roles below their permission are refused (tried here), but that an allowed
# role would hold open forever over in-process ASGI: tests/pipelines/test_tap_stream.py
# opens them.
STREAMS = {("POST", "/v3/pipeline/{pipeline_id}/tap/{component_id}/stream")}

# The policy (docs/people.md, "Roles"): what changing each kind of resource needs, by
# path prefix (the longest that matches). A write that no prefix covers fails the test,
# so a new endpoint's permission is chosen on purpose.
R, C, M = Permission.READ, Permission.CONTENT, Permission.MANAGE
OWN, E = Permission.OWN, Permission.ENTERPRISE
WRITE_POLICY: dict[str, Permission] = {
    "/v3/enterprise": E,
    "/v1/config/keys": M,
    "/v1/config/archiving": M,
    "/v1/config/ingestion/exclusions": M,
    "/v1/config/parsing/templates": M,
    "/v1/config/ingestion/suspend": OWN,
    "/v1/config/ingestion/resume": OWN,
    "/v1/config/members": M,
    "/v1/config/groups": M,
    "/v3/pipeline": M,
    "/v1/config/board": C,
    "/v1/config/view": C,
    "/v1/config/presetalert": C,
    "/v1/config/categories": C,
    "/v1/config/index-rate": C,
    "/v1/auth/session": Permission.SIGNED_IN,
    # A person's own settings, whatever their role.
    "/v1/auth/preferences": Permission.SIGNED_IN,
}
READ_POLICY: dict[str, Permission] = {
    "/v3/enterprise": E,
    "/v1/config/keys": M,
    "/v1/config/archiving": M,
    "/v1/auth/session": Permission.SIGNED_IN,
    "/v1/auth/preferences": Permission.SIGNED_IN,
    "/v3/auth/account": Permission.SIGNED_IN,
    "/info": Permission.SIGNED_IN,
    "/orgs": Permission.SIGNED_IN,
    "/": R,
}


def expected(method: str, path: str) -> Permission | None:
    policy = READ_POLICY if method in ("GET", "HEAD") else WRITE_POLICY
    matches = [prefix for prefix in policy if path.startswith(prefix)]
    return policy[max(matches, key=len)] if matches else None


PERSON_ROLES = [Role.READONLY, Role.MEMBER, Role.ADMIN, Role.OWNER]


def operations(client: AppClient) -> list[tuple[str, str, Permission | None, bool]]:
    app = client._transport.app  # type: ignore[attr-defined]
    return list(route_permissions(app))


async def test_every_operation_declares_a_permission_or_is_public(client: AppClient) -> None:
    undeclared, public = [], set()
    for method, path, permission, needs_credentials in operations(client):
        if method == "HEAD":
            continue
        if method == "WEBSOCKET":
            assert (method, path) in SOCKETS, f"a new WebSocket route: {path}"
            continue
        if not needs_credentials:
            public.add((method, path))
        elif permission is None:
            undeclared.append(f"{method} {path}")
    assert undeclared == [], f"declare a permission (tidegate.auth.roles) for {undeclared}"
    wrong = [
        f"{method} {path}: {permission} (policy: {expected(method, path)})"
        for method, path, permission, needs_credentials in operations(client)
        if needs_credentials
        and method not in ("HEAD", "WEBSOCKET")
        and permission != expected(method, path)
    ]
    assert wrong == [], "permission differs from the policy in this test: " + "; ".join(wrong)
    assert public <= PUBLIC, f"unexpected operations without credentials: {public - PUBLIC}"


def allowed(role: Role, permission: Permission) -> bool:
    if permission is Permission.SIGNED_IN:
        return True
    if permission is Permission.ENTERPRISE:
        return False
    return role >= MINIMUM_ROLE[permission]


async def _people(client: AppClient, account_id: str) -> dict[Role, Browser]:
    browsers = {}
    for role in PERSON_ROLES:
        person = await add_person(client.database_url, account_id=account_id, role=role.label)
        browsers[role] = await sign_in_person(client, person)
    return browsers


def _body(method: str, template: str, ids: dict[str, str]) -> Any:
    body = BODIES.get((method, template))
    if isinstance(body, dict):
        body = {k: fill(v, ids) if isinstance(v, str) else v for k, v in body.items()}
    return body


@pytest.mark.timeout(900)
async def test_each_role_may_do_exactly_what_its_permission_allows(client: AppClient) -> None:
    account, ids = await build_victim(client)
    group = await client.post("/v1/config/groups", json={"name": "g"}, headers=account.headers)
    ids["groupId"] = group.json()["id"]
    spare = await add_person(client.database_url, account_id=account.account_id, role="member")
    ids["email"] = spare.email
    ids["account"] = account.data["account"]
    # Usage paths name a kind of field and a value, not a resource.
    ids["kind"], ids["name"] = "apps", "web"
    browsers = await _people(client, account.account_id)
    before = await snapshot(client, account, ids)

    tried: list[str] = []
    writes_allowed: list[tuple[str, str, str, Role]] = []
    for method, template, permission, needs_credentials in operations(client):
        if (
            method in ("HEAD", "WEBSOCKET")
            or not needs_credentials
            or (method, template) in SKIPPED
        ):
            continue
        assert permission is not None, f"{method} {template} declares no permission"
        path = fill(template, ids)
        assert path is not None, f"the role matrix cannot fill {template}"
        body = _body(method, template, ids)
        tried.append(f"{method} {template}")
        for role in PERSON_ROLES:
            if allowed(role, permission):
                continue
            response = await client.request(method, path, json=body, headers=browsers[role].headers)
            assert response.status_code == 403, (
                f"{method} {template} as {role.label}: {response.status_code} {response.text}"
            )
        if method in ("GET", "HEAD"):
            for role in PERSON_ROLES:
                if allowed(role, permission):
                    response = await client.request(method, path, headers=browsers[role].headers)
                    where = f"{method} {template} as {role.label}: {response.text}"
                    assert response.status_code != 403, where
                    assert response.status_code < 500, where
        else:
            lowest = next((r for r in PERSON_ROLES if allowed(r, permission)), None)
            if lowest is not None and (method, template) not in STREAMS:
                writes_allowed.append((method, template, path, lowest))
    # Denied writes changed nothing.
    assert await snapshot(client, account, ids) == before
    # Then the lowest role allowed gets past the check on every write (deletes last, so
    # the resources the others need are still there).
    writes_allowed.sort(key=lambda item: item[0] == "DELETE")
    for method, template, path, role in writes_allowed:
        body = _body(method, template, ids)
        response = await client.request(method, path, json=body, headers=browsers[role].headers)
        where = f"{method} {template} as {role.label}: {response.text}"
        assert response.status_code != 403, where
        assert response.status_code < 500, where
    assert len(tried) > 60


async def test_readonly_reads_logs_and_configuration_but_changes_nothing(
    client: AppClient,
) -> None:
    account, _ids = await build_victim(client)
    readonly = (await _people(client, account.account_id))[Role.READONLY]
    for path in (
        "/v1/config/board",
        "/v1/config/ingestion/exclusions",
        "/v1/config/parsing/templates",
        "/v2/export?from=0&to=1",
        "/v3/pipeline",
    ):
        assert (await client.get(path, headers=readonly.headers)).status_code == 200, path
    assert (await client.get("/v1/config/keys", headers=readonly.headers)).status_code == 403
    assert (
        await client.post("/v1/config/board", json={"title": "x"}, headers=readonly.headers)
    ).status_code == 403


async def test_pipeline_alerts_are_managed_as_pipelines(client: AppClient) -> None:
    """Pipeline alerts (docs/api-pipelines.md): read by every role, changed by admins
    and owners only, as the pipelines they belong to; the matrix above tries each."""
    found = {
        (method, path): permission
        for method, path, permission, _ in operations(client)
        if path.startswith("/v3/pipeline/") and "/alert" in path and method != "HEAD"
    }
    # GET one by the provider's path; list, create, get, replace, delete under the
    # component's kind (a path parameter: source, transform, sink) and under each of the
    # aliases processor and destination.
    assert len(found) == 1 + 5 * 3, sorted(found)
    for (method, path), permission in found.items():
        assert permission == (R if method == "GET" else M), (method, path)
