"""``/v1/config/archiving`` as the ``logdna/logdna`` Terraform provider's
``logdna_archive`` uses it (``logdna/resource_archive.go``: the flat bodies of
``generateArchiveConfig``, a 200 expected on every call, ``archiveResponse`` read back):
create, read without drift, update, delete; what is refused and how; secrets sealed at
rest; the SSRF guard on a tenant's endpoint; one account never sees another's; and
IBM COS through its IAM token and the S3 API (swift: tests/archive/test_swift.py)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from tests.archive.helpers import (
    SWIFT_EXAMPLE,
    exported_day,
    gunzip,
    ndjson,
    runner_for,
    stored_config,
)
from tests.components.receiver import Receiver
from tests.conftest import AppClient
from tests.ingest.factories import ingest, make_ingestor
from tests.objectstore.moto_server import MotoServer

from tidegate.archive.writer import day_name, object_key
from tidegate.clock import now_ms
from tidegate.logs.store import DAY_MS

# The provider's examples (docs/resources/logdna_archive.md), one per integration built.
APPLIES = [
    {"integration": "s3", "bucket": "example"},
    {
        "integration": "ibm",
        "bucket": "example",
        "endpoint": "s3.us-south.cloud-object-storage.appdomain.cloud",
        "apikey": "key",
        "resourceinstanceid": "id",
    },
    {
        "integration": "dos",
        "space": "example",
        "endpoint": "nyc3.digitaloceanspaces.com",
        "accesskey": "key",
        "secretkey": "key",
    },
    # The provider's example's name and key ("example name", "example key") are not an
    # account Azure could have: refused (tests/archive/test_azblob.py).
    {
        "integration": "azblob",
        "accountname": "examplestore",
        "accountkey": "ZXhhbXBsZSBrZXk=",
    },
    {"integration": "gcs", "bucket": "example", "projectid": "id"},
    SWIFT_EXAMPLE,
]
PATH = "/v1/config/archiving"


def _v1_error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "error"
    assert isinstance(body["error"], str)
    assert body["error"]
    return body


async def test_each_provider_body_applies_reads_back_and_deletes(client: AppClient) -> None:
    who = await make_ingestor(client)
    headers = who.account.headers
    _v1_error(await client.get(PATH, headers=headers), 404)
    created = await client.post(PATH, json=APPLIES[0], headers=headers)
    assert created.status_code == 200, created.text
    assert created.json() == APPLIES[0]
    for body in APPLIES:
        updated = await client.put(PATH, json=body, headers=headers)
        assert updated.status_code == 200, updated.text
        assert updated.json() == body
        read = await client.get(PATH, headers=headers)
        assert read.status_code == 200
        assert read.json() == body, "drift: read back differs"
    deleted = await client.delete(PATH, headers=headers)
    assert deleted.status_code == 200, deleted.text
    _v1_error(await client.get(PATH, headers=headers), 404)
    _v1_error(await client.delete(PATH, headers=headers), 404)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"integration": "invalid"}, "must be one of [ibm s3 azblob gcs dos swift]"),
        ({"integration": "s3"}, "bucket is required for integration s3"),
        ({"integration": "s3", "bucket": ""}, "bucket is required"),
        ({"integration": "s3", "bucket": 7}, "bucket is required"),
        ({"integration": "s3", "bucket": "b", "region": "x"}, "region: unknown field"),
        ({"integration": "s3", "bucket": "b" * 1025}, "at most 1024 characters"),
        ([1, 2], "object"),
    ],
)
async def test_bad_bodies_are_400_in_the_v1_shape(client: AppClient, body: Any, says: str) -> None:
    who = await make_ingestor(client)
    refused = _v1_error(await client.post(PATH, json=body, headers=who.account.headers), 400)
    assert says in refused["error"]


async def test_create_twice_is_a_conflict_and_update_needs_a_configuration(
    client: AppClient,
) -> None:
    who = await make_ingestor(client)
    _v1_error(await client.put(PATH, json=APPLIES[0], headers=who.account.headers), 404)
    assert (
        await client.post(PATH, json=APPLIES[0], headers=who.account.headers)
    ).status_code == 200
    _v1_error(await client.post(PATH, json=APPLIES[0], headers=who.account.headers), 409)


async def test_a_private_endpoint_is_refused(client: AppClient) -> None:
    """The module's app allows 127.0.0.1/32 only: 10.0.0.1, 169.254.169.254 and
    localhost's other addresses are refused on save."""
    who = await make_ingestor(client)
    for endpoint in ("http://10.0.0.1", "169.254.169.254", "https://127.0.0.2:9000"):
        body = {**APPLIES[2], "endpoint": endpoint}
        refused = _v1_error(await client.post(PATH, json=body, headers=who.account.headers), 400)
        assert "non-public address" in refused["error"]


async def test_secrets_are_sealed_at_rest_and_accounts_see_only_their_own(
    client: AppClient,
) -> None:
    owner, other = await make_ingestor(client), await make_ingestor(client)
    secret = f"secret-{uuid.uuid4().hex}"
    body = {**APPLIES[2], "secretkey": secret}
    assert (await client.post(PATH, json=body, headers=owner.account.headers)).status_code == 200
    _v1_error(await client.get(PATH, headers=other.account.headers), 404)
    status = await client.get(f"{PATH}/status", headers=other.account.headers)
    assert status.json() == {"integration": None, "days": []}
    row = await stored_config(client, owner.account_id)
    assert secret not in row.sealed


async def test_run_on_demand_takes_only_a_past_day(client: AppClient) -> None:
    who = await make_ingestor(client)
    headers = who.account.headers
    _v1_error(await client.post(f"{PATH}/run", json={}, headers=headers), 404)
    assert (await client.post(PATH, json=APPLIES[0], headers=headers)).status_code == 200
    today = day_name(now_ms() // DAY_MS)
    refused = _v1_error(await client.post(f"{PATH}/run", json={"day": today}, headers=headers), 400)
    assert "has not ended" in refused["error"]
    _v1_error(await client.post(f"{PATH}/run", json={"day": "2026-02-30"}, headers=headers), 400)
    default = await client.post(f"{PATH}/run", headers=headers)
    assert default.status_code == 200, default.text
    assert default.json()["day"] == day_name(now_ms() // DAY_MS - 1)
    assert default.json()["status"] == "pending"


async def test_ibm_cos_through_an_iam_token_and_the_s3_api(
    client: AppClient, moto_server: MotoServer
) -> None:
    """IBM's IAM token endpoint as documented (a form POST of the API key, a JSON answer
    with ``access_token``), then the object through the S3 API with the token."""
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"cos-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    day = now_ms() // DAY_MS - 2
    response = await ingest(
        client, who, [{"line": f"cos {n}", "timestamp": day * DAY_MS + n} for n in range(25)]
    )
    assert response.status_code == 200
    body = {
        "integration": "ibm",
        "bucket": bucket,
        "endpoint": moto_server.endpoint,
        "apikey": "the-api-key",
        "resourceinstanceid": "crn:v1:instance",
    }
    assert (await client.post(PATH, json=body, headers=who.account.headers)).status_code == 200
    await client.post(f"{PATH}/run", json={"day": day_name(day)}, headers=who.account.headers)
    token = b'{"access_token":"iam-token-1","token_type":"Bearer","expires_in":3600}'
    async with Receiver(answer=token) as iam:
        settings = client.settings.with_overrides(ibm_iam_token_url=f"{iam.base}/identity/token")
        runner = runner_for(client, settings=settings)
        try:
            assert await runner.write(who.account_id, day) == 1
        finally:
            await runner.close()
    (exchange,) = iam.requests
    assert (exchange.method, exchange.target) == ("POST", "/identity/token")
    assert exchange.body == (
        b"grant_type=urn%3Aibm%3Aparams%3Aoauth%3Agrant-type%3Aapikey&apikey=the-api-key"
    )
    stored, _ = await asyncio.to_thread(moto_server.read, bucket, object_key(who.account_id, day))
    assert gunzip(stored) == ndjson(await exported_day(client, who.account.headers, day))


async def test_an_iam_refusal_is_reported(client: AppClient) -> None:
    who = await make_ingestor(client)
    day = now_ms() // DAY_MS - 2
    body = {**APPLIES[1], "endpoint": "http://127.0.0.1:9"}
    assert (await client.post(PATH, json=body, headers=who.account.headers)).status_code == 200
    await client.post(f"{PATH}/run", json={"day": day_name(day)}, headers=who.account.headers)
    async with Receiver(script=[400], answer=b'{"errorCode":"BXNIM0415E"}') as iam:
        settings = client.settings.with_overrides(ibm_iam_token_url=f"{iam.base}/identity/token")
        runner = runner_for(client, settings=settings)
        try:
            assert await runner.write(who.account_id, day) == 0
        finally:
            await runner.close()
    status = await client.get(f"{PATH}/status", headers=who.account.headers)
    (item,) = status.json()["days"]
    assert item["status"] == "retrying"
    assert "IBM IAM answered HTTP 400" in item["error"]
