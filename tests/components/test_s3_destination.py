"""The ``s3`` destination in a published pipeline, against moto in server mode (a real
S3 API process): events POSTed to a gateway route arrive as objects, read back byte
for byte in each encoding and compression; a refused PUT makes the gateway ask for a
retry (``ack_enabled``); the objects' keys follow ``prefix``. The operator pointed
``TIDEGATE_S3_ENDPOINT`` at moto and allowed loopback."""

from __future__ import annotations

import asyncio
import gzip
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.components.factories import wire_source
from tests.conftest import AppClient, make_settings, running_client
from tests.gateway.factories import new_account
from tests.objectstore.moto_server import (
    ACCESS_KEY_ID,
    REGION,
    SECRET_ACCESS_KEY,
    MotoServer,
    moto_server,  # noqa: F401  (the session's server)
)
from tests.waiting import eventually

from tidegate.components.destinations.s3 import S3DestinationConfig, s3_requests


@pytest.fixture(scope="module")
async def client(
    database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    moto_server: MotoServer,  # noqa: F811
) -> AsyncIterator[AppClient]:
    settings = make_settings(
        database_url,
        tmp_path_factory.mktemp("data"),
        destination_allow="127.0.0.1/32",
        s3_endpoint=moto_server.endpoint,
    )
    async with running_client(settings) as http:
        yield http


EVENTS = [
    {"message": "one ✓", "app": "api", "timestamp": 1_735_787_045_678},
    {"line": "two", "app": "db", "nested": {"n": 2}},
    {"app": "no text"},
]


def _config(bucket: str, **fields: Any) -> dict[str, Any]:
    return {
        "ack_enabled": True,
        "batch_timeout_secs": 300,
        "auth": {"access_key_id": ACCESS_KEY_ID, "secret_access_key": SECRET_ACCESS_KEY},
        "region": REGION,
        "bucket": bucket,
        "prefix": "/",
        "encoding": "text",
        "compression": "none",
        **fields,
    }


@pytest.mark.parametrize(
    ("encoding", "compression", "extension", "body"),
    [
        ("text", "none", ".log", b'one \xe2\x9c\x93\ntwo\n{"app":"no text"}\n'),
        (
            "ndjson",
            "gzip",
            ".ndjson.gz",
            b'{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678}\n'
            b'{"line":"two","app":"db","nested":{"n":2}}\n{"app":"no text"}\n',
        ),
        (
            "json",
            "none",
            ".json",
            b'[{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678},'
            b'{"line":"two","app":"db","nested":{"n":2}},{"app":"no text"}]',
        ),
    ],
)
async def test_events_arrive_as_an_object_byte_for_byte(
    client: AppClient,
    moto_server: MotoServer,  # noqa: F811
    encoding: str,
    compression: str,
    extension: str,
    body: bytes,
) -> None:
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"dest-{uuid.uuid4().hex[:10]}")
    account = await new_account(client, throttle=False)
    config = _config(bucket, encoding=encoding, compression=compression, prefix="logs/day=1/")
    wired = await wire_source(
        client, account, "http", {}, [("out", "destination", "s3", config, ["source"])]
    )
    response = await client.post(wired.url, json=EVENTS, headers=wired.auth)
    assert response.status_code == 200, response.text
    (key,) = await asyncio.to_thread(moto_server.keys, bucket)
    assert key.startswith("logs/day=1/")
    assert key.endswith(extension)
    stored, meta = await asyncio.to_thread(moto_server.read, bucket, key)
    if compression == "gzip":
        assert meta["ContentEncoding"] == "gzip"
        stored = gzip.decompress(stored)
    assert stored == body


async def test_a_refused_put_asks_the_sender_to_retry(
    client: AppClient,
    moto_server: MotoServer,  # noqa: F811
) -> None:
    """The bucket does not exist: S3 answers 404 (not retried), the gateway reports the
    failure; once it exists the same request is taken."""
    bucket = f"later-{uuid.uuid4().hex[:10]}"
    account = await new_account(client, throttle=False)
    wired = await wire_source(
        client, account, "http", {}, [("out", "destination", "s3", _config(bucket), ["source"])]
    )
    failed = await client.post(wired.url, json=EVENTS, headers=wired.auth)
    assert failed.status_code >= 500, failed.text
    await asyncio.to_thread(moto_server.make_bucket, bucket)
    taken = await client.post(wired.url, json=EVENTS, headers=wired.auth)
    assert taken.status_code == 200, taken.text
    assert len(await asyncio.to_thread(moto_server.keys, bucket)) == 1


async def test_unacknowledged_delivery_arrives_in_the_background(
    client: AppClient,
    moto_server: MotoServer,  # noqa: F811
) -> None:
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"dest-{uuid.uuid4().hex[:10]}")
    account = await new_account(client, throttle=False)
    config = _config(bucket, ack_enabled=False, encoding="ndjson")
    wired = await wire_source(
        client, account, "http", {}, [("out", "destination", "s3", config, ["source"])]
    )
    response = await client.post(wired.url, json=EVENTS[:1], headers=wired.auth)
    assert response.status_code == 200, response.text
    keys = await eventually(
        lambda: asyncio.to_thread(moto_server.keys, bucket), what="the object in the bucket"
    )
    stored, _ = await asyncio.to_thread(moto_server.read, bucket, keys[0])
    assert stored == b'{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678}\n'


def test_large_deliveries_are_split_into_objects() -> None:
    config = S3DestinationConfig.model_validate(_config("b", encoding="ndjson"))
    event = {"message": "x" * 1_000_000}
    requests = s3_requests([event] * 25, config, received_ms=1, endpoint="http://s3.test")
    assert len(requests) == 3
    assert all(request.method == "PUT" for request in requests)
    assert len({request.url for request in requests}) == 3
    for request in requests:
        names = {name.lower() for name, _ in request.headers}
        assert {"authorization", "x-amz-date", "x-amz-content-sha256"} <= names
