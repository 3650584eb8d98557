"""The enterprise API over HTTP, on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import AppClient
from tests.factories import make_account, make_tenant


def assert_envelope(body: dict[str, Any], *, type_: str, pk: str | None) -> None:
    assert set(body) == {"meta", "data"}
    meta = body["meta"]
    assert meta["type"] == type_
    assert meta["pk"] == pk
    assert meta["page"] == {"next": None, "previous": None}
    for name in ("list", "detail", "update", "replace", "create"):
        link = meta["links"]["self"][name]
        assert link is None or set(link) == {"method", "uri"}


async def test_enterprise_with_accounts(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url, name="Initech")
    first = await make_account(client, tenant, company="One", owneremail="same@example.com")
    second = await make_account(client, tenant, company="Two", owneremail="same@example.com")

    response = await client.get("/v3/enterprise", headers=tenant.headers)

    assert response.status_code == 200
    body = response.json()
    assert_envelope(body, type_="enterprise", pk="enterprise_id")
    data = body["data"]
    assert data["enterprise_id"] == tenant.enterprise_id
    assert data["name"] == "Initech"
    assert data["status"] == "active"
    assert [a["account_id"] for a in data["accounts"]] == [first.account_id, second.account_id]
    # One owner for both: each account's owner lists both short ids.
    owner = data["accounts"][1]["owner"]
    assert owner["accounts"] == [first.data["account"], second.data["account"]]
    assert owner["enterprise_ids"] == [tenant.enterprise_id]


async def test_account_read_has_every_spec_field(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    created = await make_account(
        client,
        tenant,
        company="Globex",
        external_id="crm-7",
        plan={"type": "pro-plan"},
        retention=14,
    )

    response = await client.get(
        f"/v3/enterprise/account/{created.account_id}", headers=tenant.headers
    )

    assert response.status_code == 200
    body = response.json()
    assert_envelope(body, type_="account", pk="account_id")
    assert body["meta"]["links"]["self"]["detail"] == {
        "method": "get",
        "uri": "/v3/enterprise/account/{account_id}",
    }
    account = body["data"]
    assert set(account) == {
        "account_id", "enterprise_id", "account", "company", "deactivated", "owneremail",
        "external_id", "plan", "quota", "retention", "status", "created", "meta", "owner",
    }  # fmt: skip
    assert len(account["account_id"]) <= 24
    assert len(account["account"]) <= 20
    assert account["company"] == "Globex"
    assert account["external_id"] == "crm-7"
    assert account["plan"] == {"type": "pro-plan"}
    assert account["quota"] == {"retention": 14}
    assert account["retention"] == 14
    assert account["status"] == "active"
    assert account["deactivated"] is None
    assert account["created"].endswith("Z")
    assert set(account["owner"]) == {
        "user_id", "firstname", "lastname", "email", "name", "accounts", "enterprise_ids", "verified",
    }  # fmt: skip


async def test_deactivate_and_reactivate(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    path = f"/v3/enterprise/account/{account.account_id}"

    off = await client.patch(path, json={"status": "deactivated"}, headers=tenant.headers)
    assert off.status_code == 200
    assert off.json()["data"]["status"] == "deactivated"
    stamped = off.json()["data"]["deactivated"]
    assert stamped is not None

    again = await client.patch(path, json={"status": "deactivated"}, headers=tenant.headers)
    assert again.json()["data"]["deactivated"] == stamped  # already off: the time stays

    on = await client.patch(
        path, json={"status": "active", "company": "Renamed"}, headers=tenant.headers
    )
    assert on.json()["data"]["status"] == "active"
    assert on.json()["data"]["deactivated"] is None
    assert on.json()["data"]["company"] == "Renamed"


async def test_patch_sets_external_id_to_null(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant, external_id="x")
    response = await client.patch(
        f"/v3/enterprise/account/{account.account_id}",
        json={"external_id": None},
        headers=tenant.headers,
    )
    assert response.json()["data"]["external_id"] is None


@pytest.mark.parametrize(
    ("body", "keyword", "instance_path"),
    [
        ({"owneremail": "a@example.com"}, "required", ""),
        ({"company": "x", "owneremail": "not-an-email"}, "format", "/owneremail"),
        ({"company": "x", "owneremail": "a@example.com", "retention": 91}, "maximum", "/retention"),
        ({"company": "x", "owneremail": "a@example.com", "retention": -1}, "minimum", "/retention"),
        ({"company": "x" * 251, "owneremail": "a@example.com"}, "maxLength", "/company"),
        (
            {"company": "x", "owneremail": "a@example.com", "plan": {"type": "abc"}},
            "minLength",
            "/plan/type",
        ),
        ({"company": "x", "owneremail": "a@example.com", "extra": 1}, "additionalProperties", ""),
        ({"company": 5, "owneremail": "a@example.com"}, "type", "/company"),
    ],
)
async def test_create_account_validation(
    client: AppClient, body: dict[str, Any], keyword: str, instance_path: str
) -> None:
    tenant = await make_tenant(client.database_url)
    response = await client.post("/v3/enterprise/account", json=body, headers=tenant.headers)
    assert response.status_code == 400
    error = response.json()
    assert error["status"] == 400
    assert error["context"] == "body"
    assert len(error["errors"]) == 1
    item = error["errors"][0]
    assert item["keyword"] == keyword
    assert item["instance_path"] == instance_path
    assert item["schema_path"].startswith("#")
    assert item["schema_path"].endswith(keyword)


async def test_one_error_item_per_failed_rule(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    response = await client.post(
        "/v3/enterprise/account",
        json={"company": "", "owneremail": "x", "retention": 100},
        headers=tenant.headers,
    )
    assert sorted(item["keyword"] for item in response.json()["errors"]) == [
        "format",
        "maximum",
        "minLength",
    ]


async def test_status_must_be_a_known_value(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    response = await client.patch(
        f"/v3/enterprise/account/{account.account_id}",
        json={"status": "paused"},
        headers=tenant.headers,
    )
    assert response.status_code == 400
    item = response.json()["errors"][0]
    assert item["keyword"] == "enum"
    assert item["params"]["allowedValues"] == ["active", "deactivated", "pending"]


async def test_path_parameter_longer_than_24(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    response = await client.get("/v3/enterprise/account/" + "a" * 25, headers=tenant.headers)
    assert response.status_code == 400
    body = response.json()
    assert body["context"] == "params"
    assert body["errors"][0]["keyword"] == "maxLength"
    assert body["errors"][0]["instance_path"] == "/account_id"


async def test_unknown_account_is_not_found(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    response = await client.get(
        "/v3/enterprise/account/000000000000000000000000", headers=tenant.headers
    )
    assert response.status_code == 404
    assert response.json()["code"] == "ENOTFOUND"


async def test_features_enable_list_disable(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    base = f"/v3/enterprise/account/{account.account_id}/features"

    listed = await client.get(base, headers=tenant.headers)
    assert listed.json()["data"] == [
        {
            "feature": "throttle-processor",
            "enabled": False,
            "account_id": account.account_id,
            "created": None,
        }
    ]
    enabled = await client.put(base + "/throttle-processor", headers=tenant.headers)
    assert enabled.status_code == 200
    assert enabled.json()["data"]["enabled"] is True
    assert (await client.get(base, headers=tenant.headers)).json()["data"][0]["enabled"] is True
    disabled = await client.delete(base + "/throttle-processor", headers=tenant.headers)
    assert disabled.json()["data"]["enabled"] is False
    assert (await client.get(base, headers=tenant.headers)).json()["data"][0]["enabled"] is False
    unknown = await client.put(base + "/no-such-feature", headers=tenant.headers)
    assert unknown.status_code == 404


async def test_text_no_database_can_store_is_a_400_not_a_500(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    body = {"company": "nul\u0000byte", "owneremail": "a@example.com"}
    response = await client.post("/v3/enterprise/account", json=body, headers=tenant.headers)
    assert response.status_code == 400
    assert response.json()["errors"][0]["keyword"] == "pattern"
    lone = await client.post(
        "/v3/enterprise/account",
        content=b'{"company": "\\ud800", "owneremail": "a@example.com"}',
        headers={**tenant.headers, "content-type": "application/json"},
    )
    assert lone.status_code == 400
    path = await client.get("/v3/enterprise/account/a%00b", headers=tenant.headers)
    assert path.status_code == 400
