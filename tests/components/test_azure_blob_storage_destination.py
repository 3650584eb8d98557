"""The ``azure-blob-storage`` destination in a published pipeline, against Azurite (a
real Blob service process, ``tests/objectstore/azurite_server.py``): events POSTed to a
gateway route arrive as block blobs, read back byte for byte (anonymously, from a
public container) in each encoding and compression; Azurite checks every Shared Key
signature; a missing container makes the gateway ask for a retry; a wrong account key
is refused by Azurite and reported."""

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
from tests.objectstore.azurite_server import (  # noqa: F401  (the session's server)
    Azurite,
    azurite,
)
from tests.waiting import eventually

from tidegate.components.destinations.azure_blob_storage import (
    AzureBlobStorageConfig,
    azure_blob_requests,
)
from tidegate.objectstore.azure import string_to_sign


@pytest.fixture(scope="module")
async def client(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AppClient]:
    settings = make_settings(
        database_url, tmp_path_factory.mktemp("data"), destination_allow="127.0.0.1/32"
    )
    async with running_client(settings) as http:
        yield http


EVENTS = [
    {"message": "one ✓", "app": "api", "timestamp": 1_735_787_045_678},
    {"line": "two", "app": "db", "nested": {"n": 2}},
    {"app": "no text"},
]


def _config(azurite: Azurite, container: str, **fields: Any) -> dict[str, Any]:  # noqa: F811
    # destinations/azure_blob_storage.go: AzureBlobStorageFromModel's keys and defaults.
    return {
        "ack_enabled": True,
        "batch_timeout_secs": 300,
        "encoding": "text",
        "compression": "none",
        "container_name": container,
        "connection_string": azurite.connection_string,
        **fields,
    }


async def _container(azurite: Azurite) -> str:  # noqa: F811
    return await asyncio.to_thread(azurite.make_container, f"dest-{uuid.uuid4().hex[:10]}")


@pytest.mark.parametrize(
    ("encoding", "compression", "extension", "content_type", "body"),
    [
        (
            "text",
            "none",
            ".log",
            "text/plain; charset=utf-8",
            b'one \xe2\x9c\x93\ntwo\n{"app":"no text"}\n',
        ),
        (
            "json",
            "gzip",
            ".json.gz",
            "application/json",
            b'[{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678},'
            b'{"line":"two","app":"db","nested":{"n":2}},{"app":"no text"}]',
        ),
        (
            "ndjson",
            "none",
            ".ndjson",
            "application/x-ndjson",
            b'{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678}\n'
            b'{"line":"two","app":"db","nested":{"n":2}}\n{"app":"no text"}\n',
        ),
    ],
)
async def test_events_arrive_as_a_blob_byte_for_byte(
    client: AppClient,
    azurite: Azurite,  # noqa: F811
    encoding: str,
    compression: str,
    extension: str,
    content_type: str,
    body: bytes,
) -> None:
    container = await _container(azurite)
    account = await new_account(client, throttle=False)
    config = _config(
        azurite, container, encoding=encoding, compression=compression, prefix="logs/day=1/"
    )
    wired = await wire_source(
        client,
        account,
        "http",
        {},
        [("out", "destination", "azure-blob-storage", config, ["source"])],
    )
    response = await client.post(wired.url, json=EVENTS, headers=wired.auth)
    assert response.status_code == 200, response.text
    (name,) = await asyncio.to_thread(azurite.names, container)
    assert name.startswith("logs/day=1/")
    assert name.endswith(extension)
    content, headers = await asyncio.to_thread(azurite.read, container, name)
    assert headers["content-type"] == content_type
    if compression == "gzip":
        assert headers["content-encoding"] == "gzip"
        content = gzip.decompress(content)
    assert content == body


async def test_refusals_ask_the_sender_to_retry(
    client: AppClient,
    azurite: Azurite,  # noqa: F811
) -> None:
    """No container yet: Azure's 404 is reported (the gateway answers 503); once it
    exists the same request is taken. A wrong account key: Azurite refuses the
    signature (403), reported too."""
    container = f"later-{uuid.uuid4().hex[:10]}"
    account = await new_account(client, throttle=False)
    wired = await wire_source(
        client,
        account,
        "http",
        {},
        [("out", "destination", "azure-blob-storage", _config(azurite, container), ["source"])],
    )
    failed = await client.post(wired.url, json=EVENTS, headers=wired.auth)
    assert failed.status_code == 503, failed.text
    await asyncio.to_thread(azurite.make_container, container)
    taken = await client.post(wired.url, json=EVENTS, headers=wired.auth)
    assert taken.status_code == 200, taken.text
    assert len(await asyncio.to_thread(azurite.names, container)) == 1

    wrong = azurite.connection_string.replace("AccountKey=Eby8", "AccountKey=AAAA")
    other = await wire_source(
        client,
        account,
        "http",
        {},
        [
            (
                "out",
                "destination",
                "azure-blob-storage",
                _config(azurite, container, connection_string=wrong),
                ["source"],
            )
        ],
    )
    refused = await client.post(other.url, json=EVENTS, headers=other.auth)
    assert refused.status_code == 503, refused.text
    assert len(await asyncio.to_thread(azurite.names, container)) == 1


async def test_unacknowledged_delivery_arrives_in_the_background(
    client: AppClient,
    azurite: Azurite,  # noqa: F811
) -> None:
    container = await _container(azurite)
    account = await new_account(client, throttle=False)
    config = _config(azurite, container, ack_enabled=False, encoding="json")
    wired = await wire_source(
        client,
        account,
        "http",
        {},
        [("out", "destination", "azure-blob-storage", config, ["source"])],
    )
    response = await client.post(wired.url, json=EVENTS[:1], headers=wired.auth)
    assert response.status_code == 200, response.text
    names = await eventually(
        lambda: asyncio.to_thread(azurite.names, container), what="the blob in the container"
    )
    content, _ = await asyncio.to_thread(azurite.read, container, names[0])
    assert content == b'[{"message":"one \xe2\x9c\x93","app":"api","timestamp":1735787045678}]'


async def test_a_private_endpoint_is_refused_on_save_without_the_operator(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The Blob endpoint is checked by the destination guard like any destination's
    host: the provider's own test data (``http://localhost:3000``) is refused here."""
    settings = make_settings(database_url, tmp_path_factory.mktemp("data"))
    async with running_client(settings) as http:
        account = await new_account(http, throttle=False)
        with pytest.raises(AssertionError, match="non-public"):
            await wire_source(
                http,
                account,
                "http",
                {},
                [
                    (
                        "out",
                        "destination",
                        "azure-blob-storage",
                        {"container_name": "logs", "connection_string": "http://localhost:3000"},
                        ["source"],
                    )
                ],
            )


def test_shared_key_string_to_sign() -> None:
    """The example of Azure's documentation shape: verb, 11 standard headers (an empty
    Content-Length for 0), x-ms-* sorted, then /account/path and sorted parameters."""
    signed = string_to_sign(
        "PUT",
        "https://acct.blob.core.windows.net/logs/a%20b.log?restype=x&comp=block",
        [
            ("x-ms-version", "2021-08-06"),
            ("Content-Type", "text/plain"),
            ("x-ms-date", "Fri, 27 Nov 2026 12:00:00 GMT"),
            ("Content-Length", "0"),
        ],
        "acct",
    )
    assert signed == (
        "PUT\n\n\n\n\ntext/plain\n\n\n\n\n\n\n"
        "x-ms-date:Fri, 27 Nov 2026 12:00:00 GMT\nx-ms-version:2021-08-06\n"
        "/acct/logs/a%20b.log\ncomp:block\nrestype:x"
    )


def test_large_deliveries_are_split_into_blobs() -> None:
    config = AzureBlobStorageConfig.model_validate(
        {"container_name": "logs", "connection_string": "UseDevelopmentStorage=true"}
    )
    requests = azure_blob_requests([{"message": "x" * 1_000_000}] * 25, config, received_ms=1)
    assert len(requests) == 3
    assert len({request.url for request in requests}) == 3
    for request in requests:
        names = {name.lower() for name, _ in request.headers}
        assert {"authorization", "x-ms-date", "x-ms-version", "x-ms-blob-type"} <= names
