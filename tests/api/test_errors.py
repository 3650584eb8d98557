"""Bad input of every kind answers a clear error in the right shape: never a 500, never HTML."""

from __future__ import annotations

import pytest
from tests.conftest import AppClient
from tests.factories import make_tenant

V3_KEYS = {"status", "code", "message", "errors"}
LEGACY_KEYS = {"error", "code", "status"}


def assert_v3(response_json: dict[str, object], status: int) -> None:
    assert V3_KEYS <= set(response_json) <= V3_KEYS | {"context"}
    assert response_json["status"] == status


def assert_legacy(response_json: dict[str, object]) -> None:
    assert set(response_json) == LEGACY_KEYS
    assert response_json["status"] == "error"


@pytest.mark.parametrize(
    ("path", "family"),
    [
        ("/v3/enterprise/nothing", "v3"),
        ("/v1/config/nothing", "legacy"),
        ("/no/such/page", "legacy"),
    ],
)
async def test_unknown_route(client: AppClient, path: str, family: str) -> None:
    response = await client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    if family == "v3":
        assert_v3(response.json(), 404)
    else:
        assert_legacy(response.json())


async def test_wrong_method(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    response = await client.delete("/v3/enterprise", headers=tenant.headers)
    assert response.status_code == 405
    assert_v3(response.json(), 405)
    assert "allow" in response.headers


async def test_malformed_json(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    response = await client.post(
        "/v3/enterprise/account",
        content=b'{"company": ',
        headers={**tenant.headers, "content-type": "application/json"},
    )
    assert response.status_code == 400
    assert_v3(response.json(), 400)
    assert response.json()["context"] == "body"


async def test_wrong_content_type(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    response = await client.post(
        "/v3/enterprise/account",
        content=b"company=x",
        headers={**tenant.headers, "content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 415
    assert_v3(response.json(), 415)


async def test_oversized_body_is_refused_before_parsing(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    huge = b'{"company": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    response = await client.post(
        "/v3/enterprise/account",
        content=huge,
        headers={**tenant.headers, "content-type": "application/json"},
    )
    assert response.status_code == 413
    assert_v3(response.json(), 413)


async def test_oversized_chunked_body_is_refused(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)

    async def chunks():  # type: ignore[no-untyped-def]
        yield b'{"company": "'
        for _ in range(40):
            yield b"x" * 65536
        yield b'"}'

    response = await client.post(
        "/v3/enterprise/account",
        content=chunks(),
        headers={**tenant.headers, "content-type": "application/json"},
    )
    assert response.status_code == 413


async def test_body_that_is_not_an_object(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    response = await client.post("/v3/enterprise/account", json=[1, 2], headers=tenant.headers)
    assert response.status_code == 400
    assert response.json()["errors"][0]["keyword"] == "type"


async def test_legacy_error_names_an_unknown_field(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    from tests.factories import make_account

    account = await make_account(client, tenant)
    response = await client.post(
        "/v1/config/board", json={"title": "t", "colour": "red"}, headers=account.headers
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "colour: unknown field",
        "code": "BadRequest",
        "status": "error",
    }


async def test_missing_body_is_not_an_object(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    response = await client.post("/v3/enterprise/account", headers=tenant.headers)
    assert response.status_code == 400
    item = response.json()["errors"][0]
    assert (item["keyword"], item["instance_path"], item["message"]) == (
        "type",
        "",
        "must be object",
    )
