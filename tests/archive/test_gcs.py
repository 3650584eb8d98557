"""The ``gcs`` archive integration against gcp-storage-emulator (a real GCS JSON API
process that takes resumable uploads chunk by chunk: ``tests/objectstore/gcs_emulator.py``)
and a protocol-exact Google OAuth token endpoint (``tests/components/google_apis.py``:
the service account's JWT verified with its public key): a day written by a resumable
upload and read back byte for byte against the export of the same day; a day larger
than a chunk sent in several chunks of 256 KiB multiples; a failed upload (no bucket
yet) reported and retried; no service account reported. Both backends."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.archive.helpers import (
    account_with_day,
    day_statuses,
    exported_day,
    gunzip,
    ndjson,
    past_day,
    runner_for,
    state_of,
    write,
)
from tests.components.google_apis import SCOPES, Google, ServiceAccountKey
from tests.components.receiver import Receiver
from tests.conftest import AppClient
from tests.ingest.factories import Ingestor, ingest, make_ingestor
from tests.objectstore.gcs_emulator import (  # noqa: F401  (the session's server)
    GcsEmulator,
    gcs_emulator,
)

from tidegate.archive.writer import day_name, object_key, write_day
from tidegate.clock import now_ms
from tidegate.config import Settings
from tidegate.logs.store import DAY_MS
from tidegate.objectstore.gcs import CHUNK_QUANTUM, GcsClient, GcsTarget, ResumableUpload


@pytest.fixture(scope="module")
async def google(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Google, Path]]:
    """The token endpoint, and the server's service account key file naming it."""
    google = Google(ServiceAccountKey.make(""))
    async with Receiver(respond=google.respond) as receiver:
        google.key.token_uri = f"{receiver.base}/token"
        path = tmp_path_factory.mktemp("gcs") / "service-account.json"
        path.write_text(google.key.json())
        yield google, path


def _settings(client: AppClient, emulator: GcsEmulator, key_file: Path | str) -> Settings:
    return client.settings.with_overrides(
        gcs_endpoint=emulator.endpoint, archive_gcs_credentials_file=str(key_file)
    )


def _body(bucket: str) -> dict[str, Any]:
    return {"integration": "gcs", "bucket": bucket, "projectid": "proj-1"}


async def _object_is_the_export(
    client: AppClient,
    emulator: GcsEmulator,
    bucket: str,
    who: Ingestor,
    day: int,
) -> bytes:
    stored = await asyncio.to_thread(emulator.read, bucket, object_key(who.account_id, day))
    assert gunzip(stored) == ndjson(await exported_day(client, who.account.headers, day))
    return stored


async def test_a_day_is_archived_by_a_resumable_upload_byte_for_byte(
    client: AppClient,
    gcs_emulator: GcsEmulator,  # noqa: F811
    google: tuple[Google, Path],
) -> None:
    tokens, key_file = google
    bucket = await asyncio.to_thread(gcs_emulator.make_bucket, f"arch-{uuid.uuid4().hex[:10]}")
    who, day = await account_with_day(client, _body(bucket), days_ago=3, lines=300)
    asked = len(tokens.assertions)
    settings = _settings(client, gcs_emulator, key_file)
    assert await write(client, who, day, settings=settings) == 1
    # One token for the attempt, for the storage scope, from the server's account.
    assert [claims["scope"] for claims in tokens.assertions[asked:]] == [SCOPES["storage"]]
    key = object_key(who.account_id, day)
    assert await asyncio.to_thread(gcs_emulator.names, bucket) == [key]
    stored = await _object_is_the_export(client, gcs_emulator, bucket, who, day)
    metadata = await asyncio.to_thread(gcs_emulator.metadata, bucket, key)
    assert metadata["contentType"] == "application/gzip"
    status = (await day_statuses(client, who))[day_name(day)]
    assert (status["status"], status["attempts"], status["error"]) == ("done", 1, None)
    assert (status["object"], status["lines"], status["bytes"]) == (key, 300, len(stored))


async def test_a_day_larger_than_a_chunk_goes_in_several_chunks(
    client: AppClient,
    gcs_emulator: GcsEmulator,  # noqa: F811
) -> None:
    """Lines that compress badly (random hex), parts of 100 KiB: the upload sends
    chunks of whole multiples of 256 KiB, contiguous, the last with the total; the
    object is the day. The requests are counted as they leave (an event hook)."""
    bucket = await asyncio.to_thread(gcs_emulator.make_bucket, f"arch-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    day = past_day(4)
    lines = [
        {"line": os.urandom(384).hex(), "timestamp": day * DAY_MS + n * 1000} for n in range(3000)
    ]
    for offset in range(0, len(lines), 500):
        assert (await ingest(client, who, lines[offset : offset + 500])).status_code == 200
    ranges: list[str] = []

    async def seen(request: httpx.Request) -> None:
        if request.method == "PUT":
            ranges.append(request.headers["content-range"])

    async with httpx.AsyncClient(event_hooks={"request": [seen]}) as http:
        upload = ResumableUpload(
            GcsClient(http, GcsTarget(gcs_emulator.endpoint, bucket, "token")),
            object_key(who.account_id, day),
        )
        written = await write_day(
            db=state_of(client).db,
            upload=upload,
            account_id=who.account_id,
            day=day,
            chunk_lines=200,
            part_bytes=100 * 1024,
        )
    assert written.lines == 3000
    assert written.bytes > 3 * CHUNK_QUANTUM
    assert len(ranges) >= 4, ranges
    first = 0
    for span in ranges[:-1]:
        start, end = (int(n) for n in span.removeprefix("bytes ").removesuffix("/*").split("-"))
        assert start == first
        assert (end + 1 - start) % CHUNK_QUANTUM == 0
        first = end + 1
    assert ranges[-1] == f"bytes {first}-{written.bytes - 1}/{written.bytes}"
    await _object_is_the_export(client, gcs_emulator, bucket, who, day)


async def test_a_failed_upload_is_reported_and_retried(
    client: AppClient,
    gcs_emulator: GcsEmulator,  # noqa: F811
    google: tuple[Google, Path],
) -> None:
    bucket = f"arch-{uuid.uuid4().hex[:10]}"
    who, day = await account_with_day(client, _body(bucket), days_ago=5, lines=30)
    clock = [now_ms()]
    settings = _settings(client, gcs_emulator, google[1])
    runner = runner_for(client, settings=settings, clock=lambda: clock[0])
    try:
        assert await runner.write(who.account_id, day) == 0
        status = (await day_statuses(client, who))[day_name(day)]
        assert (status["status"], status["attempts"], status["object"]) == ("retrying", 1, None)
        # The emulator answers a missing bucket 404 (GCS: 404 "The specified bucket
        # does not exist.", its message shown too).
        assert "answered HTTP 404" in status["error"]
        assert f"gs://{bucket}/" in status["error"]
        assert await runner.write(who.account_id, day) == 0  # not before its backoff

        await asyncio.to_thread(gcs_emulator.make_bucket, bucket)
        clock[0] += 31_000  # past the first backoff (30 s in these settings)
        assert await runner.write(who.account_id, day) == 1
    finally:
        await runner.close()
    status = (await day_statuses(client, who))[day_name(day)]
    assert (status["status"], status["attempts"], status["error"]) == ("done", 2, None)
    await _object_is_the_export(client, gcs_emulator, bucket, who, day)


async def test_no_service_account_is_reported(
    client: AppClient,
    gcs_emulator: GcsEmulator,  # noqa: F811
) -> None:
    bucket = await asyncio.to_thread(gcs_emulator.make_bucket, f"arch-{uuid.uuid4().hex[:10]}")
    who, day = await account_with_day(client, _body(bucket), days_ago=6, lines=10)
    assert await write(client, who, day, settings=_settings(client, gcs_emulator, "")) == 0
    status = (await day_statuses(client, who))[day_name(day)]
    assert status["status"] == "retrying"
    assert "TIDEGATE_ARCHIVE_GCS_CREDENTIALS_FILE" in status["error"]
    assert await asyncio.to_thread(gcs_emulator.names, bucket) == []
