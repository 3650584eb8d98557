"""The ``azblob`` archive integration against Azurite (Microsoft's emulator, a real Blob
service process: ``tests/objectstore/azurite_server.py``): the provider's body applied
and read back; a day written as one gzip NDJSON block blob and read back byte for byte
against the export of the same day (read with a request signed by hand, no tidegate
code); a day larger than a block committed as several blocks into a container the
writer made; a wrong key reported in the day's status and retried once it is put
right; the key sealed at rest. Both backends."""

from __future__ import annotations

import asyncio
import base64
import uuid
from typing import Any

import pytest
from tests.archive.helpers import (
    account_with_day,
    day_statuses,
    exported_day,
    gunzip,
    ndjson,
    runner_for,
    stored_config,
    write,
)
from tests.conftest import AppClient
from tests.ingest.factories import Ingestor, make_ingestor
from tests.objectstore.azurite_server import (  # noqa: F401  (the session's server)
    ACCOUNT,
    KEY,
    Azurite,
    azurite,
)

from tidegate.archive.writer import day_name, object_key
from tidegate.clock import now_ms
from tidegate.config import Settings

PATH = "/v1/config/archiving"
BODY = {"integration": "azblob", "accountname": ACCOUNT, "accountkey": KEY}
# A well-formed key that is not the account's: the service answers 403.
WRONG_KEY = "AAAA" + KEY[4:]


def _settings(client: AppClient, azurite: Azurite, container: str) -> Settings:  # noqa: F811
    """The server's Blob endpoint: Azurite's path-style URL for the account."""
    endpoint = azurite.endpoint.rsplit("/", 1)[0] + "/{account}"
    return client.settings.with_overrides(
        azure_blob_endpoint=endpoint, archive_azure_container=container
    )


def _container() -> str:
    return f"arch-{uuid.uuid4().hex[:12]}"


async def _blob_is_the_export(
    client: AppClient,
    azurite: Azurite,  # noqa: F811
    container: str,
    who: Ingestor,
    day: int,
    *,
    signed: bool = False,
) -> tuple[bytes, Any]:
    stored, headers = await asyncio.to_thread(
        azurite.read, container, object_key(who.account_id, day), signed=signed
    )
    assert gunzip(stored) == ndjson(await exported_day(client, who.account.headers, day))
    return stored, headers


async def test_the_provider_body_applies_reads_back_and_is_sealed(client: AppClient) -> None:
    """``generateArchiveConfig``'s flat body: 200, read back as sent (the provider sets
    ``accountkey`` from the read: anything else is drift, as for ``dos``' ``secretkey``
    and ``ibm``'s ``apikey``), the key never stored in clear."""
    who = await make_ingestor(client)
    headers = who.account.headers
    key = base64.b64encode(uuid.uuid4().bytes * 4).decode()
    body = {"integration": "azblob", "accountname": "examplestore", "accountkey": key}
    created = await client.post(PATH, json=body, headers=headers)
    assert created.status_code == 200, created.text
    assert created.json() == body
    assert (await client.get(PATH, headers=headers)).json() == body
    row = await stored_config(client, who.account_id)
    assert row.integration == "azblob"
    assert key not in row.sealed
    assert "examplestore" not in row.sealed


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"accountname": "example name"}, "accountname: an Azure storage account name"),
        ({"accountname": "ab"}, "accountname: an Azure storage account name"),
        ({"accountkey": "example key"}, "accountkey: the storage account's access key"),
        ({"accountkey": ""}, "accountkey is required"),
        ({"container": "logs"}, "container: unknown field"),
    ],
)
async def test_an_account_azure_could_not_have_is_refused(
    client: AppClient, fields: dict[str, str], says: str
) -> None:
    who = await make_ingestor(client)
    refused = await client.post(PATH, json={**BODY, **fields}, headers=who.account.headers)
    assert refused.status_code == 400, refused.text
    assert says in refused.json()["error"]


async def test_a_day_is_archived_to_a_block_blob_byte_for_byte(
    client: AppClient,
    azurite: Azurite,  # noqa: F811
) -> None:
    container = await asyncio.to_thread(azurite.make_container, _container())
    who, day = await account_with_day(client, BODY, days_ago=3, lines=300)
    assert await write(client, who, day, settings=_settings(client, azurite, container)) == 1
    key = object_key(who.account_id, day)
    assert await asyncio.to_thread(azurite.names, container) == [key]
    stored, headers = await _blob_is_the_export(client, azurite, container, who, day)
    assert headers["content-type"] == "application/gzip"
    assert headers["x-ms-blob-type"] == "BlockBlob"
    status = (await day_statuses(client, who))[day_name(day)]
    assert (status["status"], status["attempts"], status["error"]) == ("done", 1, None)
    assert (status["object"], status["lines"], status["bytes"]) == (key, 300, len(stored))


async def test_a_day_larger_than_a_block_commits_several_blocks(
    client: AppClient,
    azurite: Azurite,  # noqa: F811
) -> None:
    """Chunks of 100 lines, blocks of 8 KiB: the writer holds one block, the blocks make
    the whole day; the container (private) is made by the writer."""
    container = _container()
    who, day = await account_with_day(client, BODY, days_ago=4, lines=1_200)
    settings = _settings(client, azurite, container)
    assert await write(client, who, day, settings=settings, chunk_lines=100, part_bytes=8192) == 1
    stored, _ = await _blob_is_the_export(client, azurite, container, who, day, signed=True)
    blocks = await asyncio.to_thread(
        azurite.committed_blocks, container, object_key(who.account_id, day)
    )
    assert len(blocks) >= 3, blocks
    assert sum(blocks) == len(stored)
    assert all(size >= 8192 for size in blocks[:-1]), blocks
    assert (await day_statuses(client, who))[day_name(day)]["bytes"] == len(stored)


async def test_a_wrong_key_is_reported_and_retried(
    client: AppClient,
    azurite: Azurite,  # noqa: F811
) -> None:
    container = await asyncio.to_thread(azurite.make_container, _container())
    who, day = await account_with_day(
        client, {**BODY, "accountkey": WRONG_KEY}, days_ago=5, lines=40
    )
    clock = [now_ms()]
    runner = runner_for(
        client, settings=_settings(client, azurite, container), clock=lambda: clock[0]
    )
    try:
        assert await runner.write(who.account_id, day) == 0
        status = (await day_statuses(client, who))[day_name(day)]
        assert (status["status"], status["attempts"], status["object"]) == ("retrying", 1, None)
        assert "403" in status["error"]
        # Azure's code is AuthenticationFailed; Azurite's, AuthorizationFailure.
        assert (
            "(AuthenticationFailed)" in status["error"]
            or "(AuthorizationFailure)" in status["error"]
        )
        assert KEY not in status["error"]
        assert WRONG_KEY not in status["error"]
        assert await asyncio.to_thread(azurite.names, container) == []
        # Not due before its backoff.
        assert await runner.write(who.account_id, day) == 0
        assert (await day_statuses(client, who))[day_name(day)]["attempts"] == 1

        put_right = await client.put(PATH, json=BODY, headers=who.account.headers)
        assert put_right.status_code == 200, put_right.text
        clock[0] += 31_000  # past the first backoff (30 s in these settings)
        assert await runner.write(who.account_id, day) == 1
    finally:
        await runner.close()
    status = (await day_statuses(client, who))[day_name(day)]
    assert (status["status"], status["attempts"], status["error"]) == ("done", 2, None)
    await _blob_is_the_export(client, azurite, container, who, day)
