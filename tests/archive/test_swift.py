"""The ``swift`` archive integration against a protocol-exact OpenStack Keystone and
Swift (``tests/objectstore/openstack.py``, a real HTTP server on 127.0.0.1 written from
OpenStack's Identity v3 / v2.0 and Object Storage API references): the provider's body
read back as sent and sealed at rest; a day written into the container and read back
byte for byte against the export of the same day; a day of several parts written as
segments and a Static Large Object manifest; a wrong password reported, then written
once it is put right; an expired token refreshed mid-upload; a 5xx retried; Identity
v2.0 auth URLs. Then OpenStack Swift itself (``tests/objectstore/swift_server.py``,
TempAuth: Swift's v1 authentication, since no Keystone runs here): a day and a large
day (a real Static Large Object) read back byte for byte, a wrong password reported.
Both backends."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from tests.archive.helpers import (
    SWIFT_EXAMPLE,
    account_with_day,
    day_statuses,
    exported_day,
    gunzip,
    ndjson,
    past_day,
    runner_for,
    state_of,
    stored_config,
    write,
    written_after_backoff,
)
from tests.components.receiver import Receiver
from tests.conftest import AppClient
from tests.ingest.factories import Ingestor, ingest, make_ingestor
from tests.objectstore import swift_server as swift_server_module
from tests.objectstore.openstack import OpenStack
from tests.objectstore.swift_server import (  # noqa: F401  (the session's server)
    SwiftServer,
    swift_server,
)

from tidegate.archive.writer import day_name, object_key, write_day
from tidegate.clock import now_ms
from tidegate.logs.store import DAY_MS
from tidegate.objectstore.swift import SEGMENTS, SwiftClient, SwiftCredentials, SwiftUpload

PATH = "/v1/config/archiving"
CONTAINER = "tidegate-archive"
PROVIDER_EXAMPLE = SWIFT_EXAMPLE


@pytest.fixture(scope="module")
async def openstack() -> AsyncIterator[OpenStack]:
    cloud = OpenStack()
    async with Receiver(respond=cloud.respond) as receiver:
        cloud.base = receiver.base
        yield cloud


def _body(cloud: OpenStack, **changes: Any) -> dict[str, Any]:
    return {
        "integration": "swift",
        "authurl": f"{cloud.base}/v3",
        "expires": 5,
        "username": cloud.username,
        "password": cloud.password,
        "tenantname": cloud.project,
        **changes,
    }


async def _is_the_export(client: AppClient, cloud: OpenStack, who: Ingestor, day: int) -> bytes:
    stored = cloud.read(CONTAINER, object_key(who.account_id, day))
    assert gunzip(stored) == ndjson(await exported_day(client, who.account.headers, day))
    return stored


async def test_the_provider_body_reads_back_and_the_password_is_sealed(
    client: AppClient,
) -> None:
    who = await make_ingestor(client)
    headers = who.account.headers
    created = await client.post(PATH, json=PROVIDER_EXAMPLE, headers=headers)
    assert created.status_code == 200, created.text
    assert created.json() == PROVIDER_EXAMPLE
    assert (await client.get(PATH, headers=headers)).json() == PROVIDER_EXAMPLE
    # ``expires`` is ``omitempty`` in the provider: absent, and read back absent.
    without = {k: v for k, v in PROVIDER_EXAMPLE.items() if k != "expires"}
    assert (await client.put(PATH, json=without, headers=headers)).json() == without
    assert (await client.get(PATH, headers=headers)).json() == without
    secret = f"pw-{uuid.uuid4().hex}"
    assert (
        await client.put(PATH, json={**without, "password": secret}, headers=headers)
    ).status_code == 200
    row = await stored_config(client, who.account_id)
    assert row.integration == "swift"
    assert secret not in row.sealed
    assert "example user" not in row.sealed


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"expires": "5"}, "expires: whole days"),
        ({"expires": -1}, "expires: whole days"),
        ({"expires": 5.5}, "expires: whole days"),
        ({"expires": True}, "expires: whole days"),
        ({"password": ""}, "password is required for integration swift"),
        ({"region": "RegionOne"}, "region: unknown field"),
        ({"authurl": "http://10.0.0.1:5000/v3"}, "authurl: must not target a non-public"),
        ({"authurl": "ftp://keystone.example.com"}, "authurl: is not a host name or URL"),
    ],
)
async def test_bad_swift_bodies_are_refused(
    client: AppClient, changes: dict[str, Any], says: str
) -> None:
    who = await make_ingestor(client)
    body = {**PROVIDER_EXAMPLE, **changes}
    refused = await client.post(PATH, json=body, headers=who.account.headers)
    assert refused.status_code == 400, refused.text
    assert says in refused.json()["error"]


async def test_a_day_lands_in_the_container_byte_for_byte(
    client: AppClient, openstack: OpenStack
) -> None:
    who, day = await account_with_day(client, _body(openstack), days_ago=3, lines=300)
    asked = len(openstack.token_requests)
    assert await write(client, who, day) == 1
    # One Identity v3 password authentication, scoped to the project, in the Default
    # domain.
    (auth,) = openstack.token_requests[asked:]
    assert auth == {
        "identity": {
            "methods": ["password"],
            "password": {
                "user": {
                    "name": openstack.username,
                    "domain": {"id": "default"},
                    "password": openstack.password,
                }
            },
        },
        "scope": {"project": {"name": openstack.project, "domain": {"id": "default"}}},
    }
    key = object_key(who.account_id, day)
    stored = await _is_the_export(client, openstack, who, day)
    headers = openstack.containers[CONTAINER][key].headers
    assert headers["content-type"] == "application/gzip"
    assert headers["x-delete-after"] == str(5 * 86_400)
    status = (await day_statuses(client, who))[day_name(day)]
    assert (status["status"], status["attempts"], status["error"]) == ("done", 1, None)
    assert (status["object"], status["lines"], status["bytes"]) == (key, 300, len(stored))


async def test_a_day_of_several_parts_is_a_large_object(
    client: AppClient, openstack: OpenStack
) -> None:
    """1,200 lines in chunks of 100 and parts of 8 KiB: segments, each checked by its
    MD5, then a manifest; the object read back is the day."""
    who, day = await account_with_day(client, _body(openstack), days_ago=4, lines=1200)
    assert await write(client, who, day, chunk_lines=100, part_bytes=8 * 1024) == 1
    key = object_key(who.account_id, day)
    manifest = openstack.containers[CONTAINER][key].manifest
    assert manifest is not None
    assert len(manifest) >= 3
    prefix = f"/{CONTAINER}/{SEGMENTS}/{key}/"
    assert all(item["path"].startswith(prefix) for item in manifest)
    for item in manifest:
        segment = openstack.containers[CONTAINER][item["path"].split("/", 2)[2]]
        assert segment.headers["x-delete-after"] == str(5 * 86_400)
    stored = await _is_the_export(client, openstack, who, day)
    assert sum(item["size_bytes"] for item in manifest) == len(stored)


async def test_a_wrong_password_is_reported_then_written_once_right(
    client: AppClient, openstack: OpenStack
) -> None:
    body = _body(openstack, password="wrong-password")
    who, day = await account_with_day(client, body, days_ago=5, lines=30)
    clock = [now_ms()]
    runner = runner_for(client, clock=lambda: clock[0])
    try:
        assert await runner.write(who.account_id, day) == 0
        status = (await day_statuses(client, who))[day_name(day)]
        assert (status["status"], status["attempts"], status["object"]) == ("retrying", 1, None)
        assert "answered HTTP 401 (Unauthorized)" in status["error"]
        assert f"user '{openstack.username}'" in status["error"]
        assert "wrong-password" not in status["error"]
        assert object_key(who.account_id, day) not in openstack.containers.get(CONTAINER, {})
        assert await runner.write(who.account_id, day) == 0  # not before its backoff

        put = await client.put(PATH, json=_body(openstack), headers=who.account.headers)
        assert put.status_code == 200, put.text
        await written_after_backoff(client, runner, clock, who, day)
    finally:
        await runner.close()
    await _is_the_export(client, openstack, who, day)


async def _written_after_tokens_expire(
    client: AppClient, credentials: SwiftCredentials, expire: Callable[[], None], days_ago: int
) -> tuple[Ingestor, int]:
    """A token taken (the container's PUT), then ``expire`` before the day's PUT: Swift
    answers 401, the client takes a new token (two in all) and the day is written."""
    who = await make_ingestor(client)
    day = past_day(days_ago)
    lines = [{"line": f"tok {n}", "timestamp": day * DAY_MS + n} for n in range(40)]
    assert (await ingest(client, who, lines)).status_code == 200
    async with httpx.AsyncClient() as http:
        swift = SwiftClient(http, credentials, CONTAINER)
        await swift.create_container()
        first = swift.session
        await asyncio.to_thread(expire)
        written = await write_day(
            db=state_of(client).db,
            upload=SwiftUpload(swift, object_key(who.account_id, day)),
            account_id=who.account_id,
            day=day,
        )
    assert written.lines == 40
    assert swift.tokens == 2
    assert swift.session != first
    return who, day


async def test_an_expired_token_is_refreshed(client: AppClient, openstack: OpenStack) -> None:
    credentials = SwiftCredentials(
        f"{openstack.base}/v3", openstack.username, openstack.password, openstack.project
    )
    who, day = await _written_after_tokens_expire(
        client, credentials, openstack.expire_tokens, days_ago=6
    )
    await _is_the_export(client, openstack, who, day)


async def test_a_5xx_is_retried(client: AppClient, openstack: OpenStack) -> None:
    who, day = await account_with_day(client, _body(openstack), days_ago=7, lines=50)
    openstack.fail_next(503, 500)
    assert await write(client, who, day) == 1
    assert openstack.failures == []
    status = (await day_statuses(client, who))[day_name(day)]
    assert (status["status"], status["attempts"]) == ("done", 1)
    await _is_the_export(client, openstack, who, day)


async def test_a_5xx_that_lasts_is_reported(client: AppClient, openstack: OpenStack) -> None:
    who, day = await account_with_day(client, _body(openstack), days_ago=8, lines=20)
    openstack.fail_next(*[503] * 5)  # the first try and its four retries
    try:
        assert await write(client, who, day) == 0
    finally:
        openstack.failures.clear()
    status = (await day_statuses(client, who))[day_name(day)]
    assert status["status"] == "retrying"
    assert "answered HTTP 503" in status["error"]
    assert f"swift://{CONTAINER}/{object_key(who.account_id, day)}" in status["error"]


async def test_an_identity_v2_auth_url(client: AppClient, openstack: OpenStack) -> None:
    body = _body(openstack, authurl=f"{openstack.base}/v2.0/")
    body.pop("expires")
    who, day = await account_with_day(client, body, days_ago=9, lines=20)
    asked = len(openstack.token_requests)
    assert await write(client, who, day) == 1
    (auth,) = openstack.token_requests[asked:]
    assert auth == {
        "tenantName": openstack.project,
        "passwordCredentials": {"username": openstack.username, "password": openstack.password},
    }
    headers = openstack.containers[CONTAINER][object_key(who.account_id, day)].headers
    assert "x-delete-after" not in headers
    await _is_the_export(client, openstack, who, day)


# OpenStack Swift itself (tests/objectstore/swift_server.py): TempAuth, not Keystone.


def _tempauth_body(server: SwiftServer, **changes: Any) -> dict[str, Any]:
    return {
        "integration": "swift",
        "authurl": server.authurl,
        "expires": 5,
        "username": swift_server_module.USER,
        "password": swift_server_module.PASSWORD,
        "tenantname": swift_server_module.PROJECT,
        **changes,
    }


async def _is_the_export_in_swift(
    client: AppClient, server: SwiftServer, who: Ingestor, day: int
) -> tuple[bytes, dict[str, str]]:
    key = object_key(who.account_id, day)
    stored, headers = await asyncio.to_thread(server.read, CONTAINER, key)
    assert gunzip(stored) == ndjson(await exported_day(client, who.account.headers, day))
    return stored, headers


async def test_a_day_lands_in_real_swift_byte_for_byte(
    client: AppClient,
    swift_server: SwiftServer,  # noqa: F811
) -> None:
    who, day = await account_with_day(client, _tempauth_body(swift_server), days_ago=10, lines=300)
    assert await write(client, who, day) == 1
    stored, headers = await _is_the_export_in_swift(client, swift_server, who, day)
    assert headers["content-type"] == "application/gzip"
    assert headers["etag"].strip('"') == hashlib.md5(stored).hexdigest()
    assert "x-delete-at" in headers  # Swift turned X-Delete-After into its time
    status = (await day_statuses(client, who))[day_name(day)]
    assert (status["status"], status["lines"], status["bytes"]) == ("done", 300, len(stored))


async def test_a_large_day_is_a_real_static_large_object(
    client: AppClient,
    swift_server: SwiftServer,  # noqa: F811
) -> None:
    body = _tempauth_body(swift_server)
    who, day = await account_with_day(client, body, days_ago=11, lines=1200)
    assert await write(client, who, day, chunk_lines=100, part_bytes=8 * 1024) == 1
    key = object_key(who.account_id, day)
    manifest = await asyncio.to_thread(swift_server.manifest, CONTAINER, key)
    assert len(manifest) >= 3
    stored, headers = await _is_the_export_in_swift(client, swift_server, who, day)
    assert headers.get("x-static-large-object") == "True"
    assert sum(int(str(item["bytes"])) for item in manifest) == len(stored)


async def test_a_wrong_password_is_reported_by_real_swift(
    client: AppClient,
    swift_server: SwiftServer,  # noqa: F811
) -> None:
    body = _tempauth_body(swift_server, password="not-the-password")
    who, day = await account_with_day(client, body, days_ago=12, lines=10)
    assert await write(client, who, day) == 0
    status = (await day_statuses(client, who))[day_name(day)]
    assert status["status"] == "retrying"
    assert "answered HTTP 401" in status["error"]
    assert "not-the-password" not in status["error"]
    names = await asyncio.to_thread(swift_server.names, CONTAINER)
    assert object_key(who.account_id, day) not in names


async def test_a_token_real_swift_forgot_is_taken_anew(
    client: AppClient,
    swift_server: SwiftServer,  # noqa: F811
) -> None:
    """TempAuth's tokens flushed from memcached between the container's PUT and the
    object's: Swift answers 401, the client takes a new token, the day is written."""
    credentials = SwiftCredentials(
        swift_server.authurl,
        swift_server_module.USER,
        swift_server_module.PASSWORD,
        swift_server_module.PROJECT,
    )
    who, day = await _written_after_tokens_expire(
        client, credentials, swift_server.expire_tokens, days_ago=13
    )
    await _is_the_export_in_swift(client, swift_server, who, day)
