"""Archiving end to end against moto in server mode (a real S3 API process): a day of
stored lines written as one gzip NDJSON object, read back byte for byte against the
export of the same day; streamed in many parts; a failed upload retried and reported;
one writer across several runners; the SSRF guard on a tenant's endpoint. Both backends.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from prometheus_client import REGISTRY
from tests.archive.helpers import (
    configure,
    day_statuses,
    exported_day,
    gunzip,
    lines_of_day,
    ndjson,
    past_day,
    request_run,
    runner_for,
    state_of,
    write,
)
from tests.conftest import AppClient
from tests.ingest.factories import Ingestor, make_ingestor
from tests.objectstore.moto_server import (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    MotoServer,
)

from tidegate.archive.writer import day_name, object_key
from tidegate.clock import now_ms
from tidegate.logs.compactor import CompactorConfig, compact_round, release
from tidegate.logs.store import DAY_MS


def _attempts(outcome: str) -> float:
    """``tidegate_archive_attempts_total`` of this test process (docs/metrics.md)."""
    value = REGISTRY.get_sample_value("tidegate_archive_attempts_total", {"outcome": outcome})
    return value or 0.0


async def _archived_account(
    client: AppClient,
    moto_server: MotoServer,
    *,
    days_ago: int,
    lines: int,
    make_bucket: bool = True,
) -> tuple[Ingestor, int, str]:
    """An account with ``lines`` in a past day, archiving to a bucket (made, or not yet),
    and that day asked for on demand."""
    bucket = f"arch-{uuid.uuid4().hex[:10]}"
    if make_bucket:
        await asyncio.to_thread(moto_server.make_bucket, bucket)
    who = await make_ingestor(client)
    day = past_day(days_ago)
    if lines:
        await lines_of_day(client, who, day, lines)
    await configure(client, who, {"integration": "s3", "bucket": bucket})
    assert (await request_run(client, who, day))["status"] == "pending"
    return who, day, bucket


async def _object_is_the_export(
    client: AppClient, moto_server: MotoServer, bucket: str, who: Ingestor, day: int
) -> dict[str, Any]:
    """The day's object, gunzipped, is the NDJSON of the day's export, byte for byte."""
    stored, meta = await asyncio.to_thread(
        moto_server.read, bucket, object_key(who.account_id, day)
    )
    assert gunzip(stored) == ndjson(await exported_day(client, who.account.headers, day))
    return {"size": len(stored), **meta}


async def test_a_day_is_archived_byte_for_byte(client: AppClient, moto_server: MotoServer) -> None:
    who, day, bucket = await _archived_account(client, moto_server, days_ago=3, lines=300)
    assert await write(client, who, day) == 1
    key = object_key(who.account_id, day)
    name = day_name(day)
    assert key == f"{who.account_id}/{name.replace('-', '/')}/{who.account_id}.{name}.json.gz"
    assert await asyncio.to_thread(moto_server.keys, bucket) == [key]
    stored = await _object_is_the_export(client, moto_server, bucket, who, day)
    assert len(await exported_day(client, who.account.headers, day)) == 300
    status = (await day_statuses(client, who))[name]
    assert status["status"] == "done"
    assert (status["object"], status["lines"], status["bytes"]) == (key, 300, stored["size"])
    assert status["attempts"] == 1
    assert status["error"] is None


async def test_a_large_day_streams_in_many_parts(
    client: AppClient, moto_server: MotoServer
) -> None:
    """Small chunks and parts (moto's part minimum lowered for the test server): the
    writer never holds more than a part, and the parts make the whole day."""
    who, day, bucket = await _archived_account(client, moto_server, days_ago=4, lines=1_200)
    assert await write(client, who, day, chunk_lines=100, part_bytes=8 * 1024) == 1
    meta = await _object_is_the_export(client, moto_server, bucket, who, day)
    # A multipart object's ETag ends in "-<number of parts>".
    assert int(meta["ETag"].strip('"').rsplit("-", 1)[1]) >= 3, meta["ETag"]


async def test_a_failed_upload_is_reported_and_retried(
    client: AppClient, moto_server: MotoServer
) -> None:
    who, day, bucket = await _archived_account(
        client, moto_server, days_ago=5, lines=20, make_bucket=False
    )
    clock = [now_ms()]
    runner = runner_for(client, clock=lambda: clock[0])
    before = {outcome: _attempts(outcome) for outcome in ("retried", "written")}
    try:
        assert await runner.write(who.account_id, day) == 0
        assert _attempts("retried") == before["retried"] + 1
        status = (await day_statuses(client, who))[day_name(day)]
        assert status["status"] == "retrying"
        assert "NoSuchBucket" in status["error"]
        assert status["attempts"] == 1
        assert status["object"] is None
        # Not due before its backoff: nothing happens.
        assert await runner.write(who.account_id, day) == 0
        assert (await day_statuses(client, who))[day_name(day)]["attempts"] == 1

        await asyncio.to_thread(moto_server.make_bucket, bucket)
        clock[0] += 31_000  # past the first backoff (30 s in these settings)
        assert await runner.write(who.account_id, day) == 1
    finally:
        await runner.close()
    status = (await day_statuses(client, who))[day_name(day)]
    assert (status["status"], status["attempts"], status["error"]) == ("done", 2, None)
    assert _attempts("written") == before["written"] + 1
    await _object_is_the_export(client, moto_server, bucket, who, day)


async def test_several_runners_write_a_day_once(client: AppClient, moto_server: MotoServer) -> None:
    who, day, _bucket = await _archived_account(client, moto_server, days_ago=6, lines=50)
    runners = [runner_for(client) for _ in range(3)]
    try:
        written = await asyncio.gather(*(r.write(who.account_id, day) for r in runners))
        assert sorted(written) == [0, 0, 1]
        # Done: no runner writes it again.
        assert [await r.write(who.account_id, day) for r in runners] == [0, 0, 0]
    finally:
        for runner in runners:
            await runner.close()
    assert (await day_statuses(client, who))[day_name(day)]["attempts"] == 1


async def test_the_daily_round_schedules_yesterday(
    client: AppClient, moto_server: MotoServer
) -> None:
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"arch-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    yesterday = past_day(1)
    await lines_of_day(client, who, yesterday, 30)
    await configure(client, who, {"integration": "s3", "bucket": bucket})
    # Just after midnight plus the settle delay (15 min by default).
    clock = (yesterday + 1) * DAY_MS + 16 * 60_000
    runner = runner_for(client, clock=lambda: clock)
    try:
        await runner.schedule()
        assert (await day_statuses(client, who))[day_name(yesterday)]["status"] == "pending"
        assert await runner.write(who.account_id, yesterday) == 1
        # The next rounds of the day find it scheduled: nothing is made again.
        await runner.schedule()
        assert (await day_statuses(client, who))[day_name(yesterday)]["status"] == "done"
    finally:
        await runner.close()
    assert await asyncio.to_thread(moto_server.keys, bucket) == [
        object_key(who.account_id, yesterday)
    ]


async def test_a_day_without_lines_writes_no_object(
    client: AppClient, moto_server: MotoServer
) -> None:
    who, day, bucket = await _archived_account(client, moto_server, days_ago=8, lines=0)
    assert await write(client, who, day) == 1
    status = (await day_statuses(client, who))[day_name(day)]
    assert (status["status"], status["lines"], status["object"]) == ("done", 0, None)
    assert await asyncio.to_thread(moto_server.keys, bucket) == []


async def test_digitalocean_spaces_through_the_s3_api(
    client: AppClient, moto_server: MotoServer
) -> None:
    """``dos``: the account's own endpoint and keys (loopback is allowed here)."""
    space = await asyncio.to_thread(moto_server.make_bucket, f"space-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    day = past_day(3)
    await lines_of_day(client, who, day, 40)
    await configure(
        client,
        who,
        {
            "integration": "dos",
            "space": space,
            "endpoint": moto_server.endpoint,
            "accesskey": ACCESS_KEY_ID,
            "secretkey": SECRET_ACCESS_KEY,
        },
    )
    await request_run(client, who, day)
    assert await write(client, who, day) == 1
    await _object_is_the_export(client, moto_server, space, who, day)


async def test_a_day_in_both_tiers_is_archived_once_in_order(
    client: AppClient, moto_server: MotoServer
) -> None:
    """Lines moved into segments (docs/log-store.md, "Segments") are archived with
    those still in the row store: each once, in the export's order and form."""
    who, day, bucket = await _archived_account(client, moto_server, days_ago=7, lines=300)
    exported = await exported_day(client, who.account.headers, day)
    assert len(exported) == 300
    # The oldest 120 lines into segments (windows of a millisecond: the lines just
    # stored are old enough), the rest stays in the row store.
    db = state_of(client).db
    cfg = CompactorConfig(
        root=client.settings.segment_directory,
        after_ms=0,
        window_ms=1,
        max_lines=40,
        lease_ms=60_000,
    )
    owner = uuid.uuid4().hex
    moved = await compact_round(db, cfg, owner=owner, limit=3, accounts=[who.account_id])
    await release(db, owner=owner)
    assert (moved.segments, moved.lines) == (3, 120)
    assert await exported_day(client, who.account.headers, day) == exported
    # Chunks of 50 cross the tiers' boundary.
    assert await write(client, who, day, chunk_lines=50) == 1
    stored, _meta = await asyncio.to_thread(
        moto_server.read, bucket, object_key(who.account_id, day)
    )
    assert gunzip(stored) == ndjson(exported)
    assert (await day_statuses(client, who))[day_name(day)]["lines"] == 300
