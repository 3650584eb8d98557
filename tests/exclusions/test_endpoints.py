"""The v1 ingestion exclusion rules API over HTTP, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.keys.factories import with_service_key

RULES = "/v1/config/ingestion/exclusions"
RULE_FIELDS = {"id", "title", "hosts", "apps", "query", "active", "indexonly"}


def assert_legacy_error(response: httpx.Response, status: int, code: str | None = None) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "code", "status"}
    assert isinstance(body["error"], str)
    assert body["error"]
    assert isinstance(body["code"], str)
    assert body["status"] == "error"
    if code is not None:
        assert body["code"] == code
    return str(body["error"])


async def new_account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


async def create_rule(client: AppClient, account: AccountCtx, **fields: Any) -> dict[str, Any]:
    body = {"title": "noise", "apps": ["nginx"], **fields}
    response = await client.post(RULES, json=body, headers=account.headers)
    assert response.status_code == 200, response.text
    rule: dict[str, Any] = response.json()
    return rule


async def test_create_applies_defaults(client: AppClient) -> None:
    account = await new_account(client)
    response = await client.post(
        RULES, json={"title": "health checks", "apps": ["lb"]}, headers=account.headers
    )
    assert response.status_code == 200
    rule = response.json()
    assert set(rule) == RULE_FIELDS
    assert rule["title"] == "health checks"
    assert rule["apps"] == ["lb"]
    assert rule["hosts"] == []
    assert rule["query"] == ""
    assert rule["active"] is False
    assert rule["indexonly"] is True
    assert isinstance(rule["id"], str)
    assert rule["id"]


async def test_crud_round_trip(client: AppClient) -> None:
    account = await new_account(client)
    first = await create_rule(
        client,
        account,
        title="HTTP 2XX",
        hosts=["web-1", "web-2"],
        apps=["nginx", "apache"],
        query="response:(>=200 <300)",
        active=True,
        indexonly=False,
    )
    second = await create_rule(client, account, title="second")
    path = f"{RULES}/{first['id']}"

    listed = await client.get(RULES, headers=account.headers)
    assert listed.status_code == 200
    assert listed.json() == [first, second]

    one = await client.get(path, headers=account.headers)
    assert one.status_code == 200
    assert one.json() == [first]  # a one-element array, as the spec says

    patched = await client.patch(
        path, json={"title": "renamed", "active": False}, headers=account.headers
    )
    assert patched.status_code == 200
    assert patched.json() == {**first, "title": "renamed", "active": False}
    assert (await client.get(path, headers=account.headers)).json() == [patched.json()]

    deleted = await client.delete(path, headers=account.headers)
    assert deleted.status_code == 200
    assert deleted.json() == patched.json()
    assert_legacy_error(await client.get(path, headers=account.headers), 404, "NotFound")
    assert_legacy_error(await client.delete(path, headers=account.headers), 404, "NotFound")
    remaining = (await client.get(RULES, headers=account.headers)).json()
    assert remaining == [second]


async def test_terraform_provider_body(client: AppClient) -> None:
    """The Terraform provider sends every field, `[]` and `""` for unused parts."""
    account = await new_account(client)
    body = {
        "title": "HTTP 2XX",
        "active": True,
        "apps": ["nginx", "apache"],
        "hosts": [],
        "query": "",
        "indexonly": False,
    }
    response = await client.post(RULES, json=body, headers=account.headers)
    assert response.status_code == 200, response.text
    rule = response.json()
    assert rule["hosts"] == []
    assert rule["query"] == ""
    assert rule["apps"] == ["nginx", "apache"]
    patched = await client.patch(
        f"{RULES}/{rule['id']}", json={**body, "hosts": ["h"]}, headers=account.headers
    )
    assert patched.status_code == 200
    assert patched.json()["hosts"] == ["h"]


async def test_id_in_a_body_is_ignored(client: AppClient) -> None:
    account = await new_account(client)
    rule = await create_rule(client, account, id="chosen-by-client")
    assert rule["id"] != "chosen-by-client"
    path = f"{RULES}/{rule['id']}"
    patched = await client.patch(path, json={"id": "other", "title": "t"}, headers=account.headers)
    assert patched.status_code == 200
    assert patched.json()["id"] == rule["id"]
    assert_legacy_error(await client.get(f"{RULES}/other", headers=account.headers), 404)


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"apps": ["a"]}, "title"),
        ({"title": "", "apps": ["a"]}, "title"),
        ({"title": None, "apps": ["a"]}, "title"),
        ({"title": "x" * 251, "apps": ["a"]}, "title"),
        ({"title": "t\u0000", "apps": ["a"]}, "title"),
        ({"title": "t"}, "hosts, apps or query"),
        ({"title": "t", "hosts": []}, "hosts, apps or query"),
        ({"title": "t", "hosts": [], "apps": [], "query": "  "}, "hosts, apps or query"),
        ({"title": "t", "hosts": None, "apps": None, "query": None}, "hosts, apps or query"),
        ({"title": "t", "apps": [""]}, "apps"),
        ({"title": "t", "hosts": ["ok", ""]}, "hosts"),
        ({"title": "t", "hosts": "web-1"}, "hosts"),
        ({"title": "t", "hosts": [1]}, "hosts"),
        ({"title": "t", "apps": ["a"], "active": "maybe"}, "active"),
        ({"title": "t", "apps": ["a"], "indexonly": []}, "indexonly"),
        ({"title": "t", "query": 5}, "query"),
        ({"title": "t", "query": "_retention:30"}, "_retention"),
        ({"title": "t", "query": "error -_mezmo_line_size:>100"}, "_mezmo_line_size"),
        ({"title": "t", "query": "a OR (b _retention.days:1)"}, "_retention"),
        ({"title": "t", "query": "a ("}, "query: unbalanced parenthesis"),
        ({"title": "t", "apps": ["a"], "query": 'say "hi'}, "query: unbalanced quote"),
        ({"title": "t", "query": "x" * 4097}, "query"),
        ({"title": "t", "apps": ["a"], "unknown": 1}, None),
    ],
)
async def test_create_validation(
    client: AppClient, body: dict[str, Any], names: str | None
) -> None:
    account = await new_account(client)
    response = await client.post(RULES, json=body, headers=account.headers)
    message = assert_legacy_error(response, 400, "BadRequest")
    if names is not None:
        assert names in message
    assert (await client.get(RULES, headers=account.headers)).json() == []


async def test_reserved_names_in_a_phrase_or_as_plain_terms_are_allowed(client: AppClient) -> None:
    account = await new_account(client)
    rule = await create_rule(client, account, query='"_retention:30" OR _mezmo_line_size')
    assert rule["query"] == '"_retention:30" OR _mezmo_line_size'


async def test_malformed_json_and_wrong_content_type(client: AppClient) -> None:
    account = await new_account(client)
    headers = {**account.headers, "content-type": "application/json"}
    assert_legacy_error(await client.post(RULES, content=b"{", headers=headers), 400)
    plain = {**account.headers, "content-type": "text/plain"}
    response = await client.post(RULES, content=b'{"title":"t","apps":["a"]}', headers=plain)
    assert_legacy_error(response, 415)


async def test_patch_keeps_at_least_one_part(client: AppClient) -> None:
    account = await new_account(client)
    rule = await create_rule(client, account, hosts=["h"], apps=None)
    path = f"{RULES}/{rule['id']}"

    cleared = await client.patch(path, json={"hosts": []}, headers=account.headers)
    assert "hosts, apps or query" in assert_legacy_error(cleared, 400)
    nulled = await client.patch(path, json={"hosts": None, "query": ""}, headers=account.headers)
    assert_legacy_error(nulled, 400)
    assert (await client.get(path, headers=account.headers)).json() == [rule]

    swapped = await client.patch(
        path, json={"hosts": None, "query": "level:error"}, headers=account.headers
    )
    assert swapped.status_code == 200
    assert swapped.json()["hosts"] == []
    assert swapped.json()["query"] == "level:error"


async def test_patch_null_leaves_required_fields_unchanged(client: AppClient) -> None:
    account = await new_account(client)
    rule = await create_rule(client, account, active=True, indexonly=False)
    path = f"{RULES}/{rule['id']}"
    response = await client.patch(
        path, json={"title": None, "active": None, "indexonly": None}, headers=account.headers
    )
    assert response.status_code == 200
    assert response.json() == rule
    empty = await client.patch(path, json={}, headers=account.headers)
    assert empty.json() == rule


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"title": ""}, "title"),
        ({"apps": [""]}, "apps"),
        ({"query": "_retention:1"}, "_retention"),
        ({"query": "level:error OR"}, "query"),
        ({"active": "sometimes"}, "active"),
        ({"nope": True}, None),
    ],
)
async def test_patch_validation(client: AppClient, body: dict[str, Any], names: str | None) -> None:
    account = await new_account(client)
    rule = await create_rule(client, account)
    path = f"{RULES}/{rule['id']}"
    message = assert_legacy_error(await client.patch(path, json=body, headers=account.headers), 400)
    if names is not None:
        assert names in message
    assert (await client.get(path, headers=account.headers)).json() == [rule]


async def test_works_with_a_service_key(client: AppClient) -> None:
    account = await with_service_key(client, await new_account(client))
    for headers in ({"Authorization": f"Token {account.service_key}"},
                    {"servicekey": str(account.service_key)}):  # fmt: skip
        response = await client.post(RULES, json={"title": "t", "hosts": ["h"]}, headers=headers)
        assert response.status_code == 200
        listed = await client.get(RULES, headers=headers)
        assert response.json() in listed.json()


async def test_enterprise_key_without_delegation_is_forbidden(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    rule = await create_rule(client, account)
    headers = tenant.headers
    assert_legacy_error(await client.get(RULES, headers=headers), 403, "Forbidden")
    response = await client.post(RULES, json={"title": "t", "apps": ["a"]}, headers=headers)
    assert_legacy_error(response, 403, "Forbidden")
    for method in ("GET", "PATCH", "DELETE"):
        body = {"title": "x"} if method == "PATCH" else None
        response = await client.request(method, f"{RULES}/{rule['id']}", json=body, headers=headers)
        assert_legacy_error(response, 403, "Forbidden")


async def test_credentials_required(client: AppClient) -> None:
    assert_legacy_error(await client.get(RULES), 401, "Unauthorized")
    assert_legacy_error(await client.get(f"{RULES}/abc"), 401, "Unauthorized")


@pytest.mark.parametrize("same_enterprise", [True, False])
async def test_another_accounts_rule_is_not_found(client: AppClient, same_enterprise: bool) -> None:
    owner_tenant = await make_tenant(client.database_url)
    owner = await make_account(client, owner_tenant)
    other_tenant = owner_tenant if same_enterprise else await make_tenant(client.database_url)
    intruder = await make_account(client, other_tenant)
    rule = await create_rule(client, owner)
    path = f"{RULES}/{rule['id']}"

    for ctx in (intruder, await with_service_key(client, intruder)):
        assert_legacy_error(await client.get(path, headers=ctx.headers), 404, "NotFound")
        patched = await client.patch(path, json={"title": "pwned"}, headers=ctx.headers)
        assert_legacy_error(patched, 404, "NotFound")
        assert_legacy_error(await client.delete(path, headers=ctx.headers), 404, "NotFound")
        assert (await client.get(RULES, headers=ctx.headers)).json() == []

    assert (await client.get(path, headers=owner.headers)).json() == [rule]


@pytest.mark.parametrize(
    ("rule_id", "status"), [("missing", 404), ("f" * 24, 404), ("x" * 25, 400)]
)
async def test_unknown_or_malformed_ids(client: AppClient, rule_id: str, status: int) -> None:
    account = await new_account(client)
    for method in ("GET", "PATCH", "DELETE"):
        body = {"title": "x"} if method == "PATCH" else None
        response = await client.request(
            method, f"{RULES}/{rule_id}", json=body, headers=account.headers
        )
        assert_legacy_error(response, status)


async def test_concurrent_changes_to_one_rule_never_fail(client: AppClient) -> None:
    account = await new_account(client)
    for _ in range(3):
        rule = await create_rule(client, account)
        path = f"{RULES}/{rule['id']}"
        answers = await asyncio.gather(
            client.delete(path, headers=account.headers),
            client.patch(path, json={"title": "racing"}, headers=account.headers),
            client.delete(path, headers=account.headers),
        )
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses in ([200, 200, 404], [200, 404, 404]), [a.text for a in answers]
