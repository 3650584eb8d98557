"""Access keys (bare and Token) and X-Hub-Signature on POST /gateway/{id}."""

from __future__ import annotations

import pytest
from tests.conftest import AppClient
from tests.gateway.factories import (
    add_signing_key,
    count_lines,
    make_access_key,
    new_account,
    wire,
)
from tests.gateway.test_body_forms import LOG, legacy_error

from tidegate.kit.signature import METHODS, sign

BODY = b'[{"line": "signed"}]'
JSON = {"Content-Type": "application/json"}


async def test_access_key_bare_and_token(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    for authorization in (wired.key, f"Token {wired.key}", f"token  {wired.key} "):
        response = await client.post(
            wired.url, content=BODY, headers={**JSON, "Authorization": authorization}
        )
        assert response.status_code == 200, (authorization, response.text)
    assert await count_lines(client.database_url, account.account_id) == 3


@pytest.mark.parametrize(
    "authorization", [None, "", "Token ", "Token tga_0000000000000000000000000000000000000000"]
)
async def test_missing_or_wrong_key_is_401(client: AppClient, authorization: str | None) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    headers = dict(JSON)
    if authorization is not None:
        headers["Authorization"] = authorization
    response = await client.post(wired.url, content=BODY, headers=headers)
    body = legacy_error(response, 401)
    assert body["code"] == "Unauthorized"
    assert await count_lines(client.database_url, account.account_id) == 0


async def test_key_of_another_route_is_401(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    first = await wire(client, account, LOG)
    second = await wire(client, account, LOG)
    response = await client.post(
        first.url, content=BODY, headers={**JSON, "Authorization": second.key}
    )
    legacy_error(response, 401)


async def test_management_key_is_not_an_access_key(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    response = await client.post(wired.url, content=BODY, headers={**JSON, **account.headers})
    legacy_error(response, 401)


async def test_unknown_route_is_404_and_bad_id_400(client: AppClient) -> None:
    response = await client.post(
        "/gateway/00000000-0000-0000-0000-000000000000",
        content=BODY,
        headers={"Authorization": "x"},
    )
    legacy_error(response, 404)
    response = await client.post("/gateway/bad%20id", content=BODY, headers={"Authorization": "x"})
    legacy_error(response, 400)


async def test_deleted_access_key_stops_working(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    listed = await client.get(
        f"/v3/pipeline/gateway-route/{wired.route_id}/access-key", headers=account.headers
    )
    key_id = listed.json()["data"][0]["id"]
    deleted = await client.delete(
        f"/v3/pipeline/gateway-route/{wired.route_id}/access-key/{key_id}", headers=account.headers
    )
    assert deleted.status_code == 200
    response = await client.post(wired.url, content=BODY, headers={**JSON, **wired.auth})
    legacy_error(response, 401)


@pytest.mark.parametrize("method", sorted(METHODS))
async def test_signature_each_method(client: AppClient, method: str) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    await add_signing_key(client, account, wired.route_id, "a-signing-key-of-16+")
    signature = sign(BODY, b"a-signing-key-of-16+", method)
    response = await client.post(
        wired.url, content=BODY, headers={**JSON, **wired.auth, "X-Hub-Signature": signature}
    )
    assert response.status_code == 200, response.text
    upper = signature.split("=", 1)[0].upper() + "=" + signature.split("=", 1)[1].upper()
    response = await client.post(
        wired.url, content=BODY, headers={**JSON, **wired.auth, "X-Hub-Signature": upper}
    )
    assert response.status_code == 200, response.text
    assert await count_lines(client.database_url, account.account_id) == 2


@pytest.mark.parametrize(
    "signature",
    [
        None,
        "",
        "sha256",
        "sha256=",
        "sha256=zz",
        "md5=" + "0" * 32,
        sign(BODY, b"another-key-entirely", "sha256"),
        sign(BODY + b" ", b"a-signing-key-of-16+", "sha256"),  # signed another body
        sign(BODY, b"a-signing-key-of-16+", "sha256")[:-2],  # truncated
    ],
)
async def test_bad_or_missing_signature_is_401_and_nothing_processed(
    client: AppClient, signature: str | None
) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    await add_signing_key(client, account, wired.route_id, "a-signing-key-of-16+")
    headers = {**JSON, **wired.auth}
    if signature is not None:
        headers["X-Hub-Signature"] = signature
    response = await client.post(wired.url, content=BODY, headers=headers)
    body = legacy_error(response, 401)
    assert "X-Hub-Signature" in body["error"]
    assert await count_lines(client.database_url, account.account_id) == 0


async def test_signature_checked_before_the_body_is_read(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    await add_signing_key(client, account, wired.route_id, "a-signing-key-of-16+")
    response = await client.post(wired.url, content=b"{not json", headers={**JSON, **wired.auth})
    legacy_error(response, 401)


async def test_several_signing_keys_rotation(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    old = await add_signing_key(client, account, wired.route_id, "old-signing-key-0001")
    await add_signing_key(client, account, wired.route_id, "new-signing-key-0002")
    for key in (b"old-signing-key-0001", b"new-signing-key-0002"):
        response = await client.post(
            wired.url,
            content=BODY,
            headers={**JSON, **wired.auth, "X-Hub-Signature": sign(BODY, key, "sha512")},
        )
        assert response.status_code == 200, response.text
    deleted = await client.delete(
        f"/v3/pipeline/gateway-route/{wired.route_id}/signing-key/{old}", headers=account.headers
    )
    assert deleted.status_code == 200
    stale = sign(BODY, b"old-signing-key-0001", "sha512")
    response = await client.post(
        wired.url, content=BODY, headers={**JSON, **wired.auth, "X-Hub-Signature": stale}
    )
    legacy_error(response, 401)
    assert await count_lines(client.database_url, account.account_id) == 2


async def test_signature_on_a_route_of_another_key_is_not_needed(client: AppClient) -> None:
    """A route without signing keys takes unsigned events even when another route of
    the same account has keys."""
    account = await new_account(client, throttle=False)
    signed = await wire(client, account, LOG)
    plain = await wire(client, account, LOG)
    await add_signing_key(client, account, signed.route_id, "a-signing-key-of-16+")
    response = await client.post(plain.url, content=BODY, headers={**JSON, **plain.auth})
    assert response.status_code == 200


async def test_second_access_key_works(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    other = await make_access_key(client, account, wired.route_id)
    response = await client.post(wired.url, content=BODY, headers={**JSON, "Authorization": other})
    assert response.status_code == 200


async def test_deactivated_account_is_403(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    off = await client.patch(
        f"/v3/enterprise/account/{account.account_id}",
        json={"status": "deactivated"},
        headers=account.tenant.headers,
    )
    assert off.status_code == 200, off.text
    response = await client.post(wired.url, content=BODY, headers={**JSON, **wired.auth})
    legacy_error(response, 403)
    assert await count_lines(client.database_url, account.account_id) == 0
