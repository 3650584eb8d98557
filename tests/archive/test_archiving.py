"""Archiving end to end against moto in server mode (a real S3 API process): a day of
stored lines written as one gzip NDJSON object, read back byte for byte against the
export of the same day; streamed in many parts; a failed upload retried and reported;
one writer across several runners; the SSRF guard on a tenant's endpoint. Both backends.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.archive.helpers import (
    exported_day,
    gunzip,
    ndjson,
    runner_for,
)
from tests.conftest import AppClient
from tests.ingest.factories import Ingestor, ingest, make_ingestor
from tests.objectstore.moto_server import (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    MotoServer,
)

from tidegate.archive.writer import day_name, object_key
from tidegate.clock import now_ms
from tidegate.logs.store import DAY_MS


def _past_day(days_ago: int) -> int:
    return now_ms() // DAY_MS - days_ago


async def _lines_of_day(client: AppClient, who: Ingestor, day: int, count: int) -> None:
    """``count`` lines spread over the day (and one on each side of it, not archived)."""
    start = day * DAY_MS
    lines: list[dict[str, Any]] = [
        {
            "line": f"{index} GET /api/{index} status={200 + index % 3} é ✓ {uuid.uuid4().hex}",
            "app": f"app-{index % 4}",
            "level": ("INFO", "WARN", "ERROR")[index % 3],
            "timestamp": start + index * (DAY_MS // count),
            "meta": {"n": index, "nested": {"ok": index % 2 == 0}},
        }
        for index in range(count)
    ]
    lines += [
        {"line": "the day before", "timestamp": start - 1},
        {"line": "the day after", "timestamp": start + DAY_MS},
    ]
    for offset in range(0, len(lines), 500):
        response = await ingest(client, who, lines[offset : offset + 500])
        assert response.status_code == 200, response.text


async def _configure(client: AppClient, who: Ingestor, body: dict[str, Any]) -> None:
    response = await client.post("/v1/config/archiving", json=body, headers=who.account.headers)
    assert response.status_code == 200, response.text


async def _status(client: AppClient, who: Ingestor) -> dict[str, Any]:
    response = await client.get("/v1/config/archiving/status", headers=who.account.headers)
    assert response.status_code == 200, response.text
    days: dict[str, Any] = {item["day"]: item for item in response.json()["days"]}
    return days


async def test_a_day_is_archived_byte_for_byte(
    client: AppClient,
    moto_server: MotoServer,
) -> None:
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"arch-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    day = _past_day(3)
    await _lines_of_day(client, who, day, 300)
    await _configure(client, who, {"integration": "s3", "bucket": bucket})

    run = await client.post(
        "/v1/config/archiving/run", json={"day": day_name(day)}, headers=who.account.headers
    )
    assert run.status_code == 200, run.text
    assert run.json()["status"] == "pending"
    runner = runner_for(client)
    try:
        assert await runner.write(who.account_id, day) == 1
    finally:
        await runner.close()

    key = object_key(who.account_id, day)
    assert (
        key
        == f"{who.account_id}/{day_name(day).replace('-', '/')}/{who.account_id}.{day_name(day)}.json.gz"
    )
    assert await asyncio.to_thread(moto_server.keys, bucket) == [key]
    stored, _meta = await asyncio.to_thread(moto_server.read, bucket, key)
    exported = await exported_day(client, who.account.headers, day)
    assert len(exported) == 300
    assert gunzip(stored) == ndjson(exported)

    status = (await _status(client, who))[day_name(day)]
    assert status["status"] == "done"
    assert (status["object"], status["lines"], status["bytes"]) == (key, 300, len(stored))
    assert status["attempts"] == 1
    assert status["error"] is None


async def test_a_large_day_streams_in_many_parts(
    client: AppClient,
    moto_server: MotoServer,
) -> None:
    """Small chunks and parts (moto's part minimum lowered for the test server): the
    writer never holds more than a part, and the parts make the whole day."""
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"arch-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    day = _past_day(4)
    await _lines_of_day(client, who, day, 1_200)
    await _configure(client, who, {"integration": "s3", "bucket": bucket})
    runner = runner_for(client, chunk_lines=100, part_bytes=8 * 1024)
    try:
        await client.post(
            "/v1/config/archiving/run", json={"day": day_name(day)}, headers=who.account.headers
        )
        assert await runner.write(who.account_id, day) == 1
    finally:
        await runner.close()
    stored, meta = await asyncio.to_thread(
        moto_server.read, bucket, object_key(who.account_id, day)
    )
    # A multipart object's ETag ends in "-<number of parts>".
    assert int(meta["ETag"].strip('"').rsplit("-", 1)[1]) >= 3, meta["ETag"]
    assert gunzip(stored) == ndjson(await exported_day(client, who.account.headers, day))


async def test_a_failed_upload_is_reported_and_retried(
    client: AppClient,
    moto_server: MotoServer,
) -> None:
    bucket = f"later-{uuid.uuid4().hex[:10]}"  # not made yet: the upload fails
    who = await make_ingestor(client)
    day = _past_day(5)
    await _lines_of_day(client, who, day, 20)
    await _configure(client, who, {"integration": "s3", "bucket": bucket})
    await client.post(
        "/v1/config/archiving/run", json={"day": day_name(day)}, headers=who.account.headers
    )
    clock = [now_ms()]
    runner = runner_for(client, clock=lambda: clock[0])
    try:
        assert await runner.write(who.account_id, day) == 0
        status = (await _status(client, who))[day_name(day)]
        assert status["status"] == "retrying"
        assert "NoSuchBucket" in status["error"]
        assert status["attempts"] == 1
        assert status["object"] is None
        # Not due before its backoff: nothing happens.
        assert await runner.write(who.account_id, day) == 0
        assert (await _status(client, who))[day_name(day)]["attempts"] == 1

        await asyncio.to_thread(moto_server.make_bucket, bucket)
        clock[0] += 31_000  # past the first backoff (30 s in these settings)
        assert await runner.write(who.account_id, day) == 1
    finally:
        await runner.close()
    status = (await _status(client, who))[day_name(day)]
    assert (status["status"], status["attempts"], status["error"]) == ("done", 2, None)
    stored, _ = await asyncio.to_thread(moto_server.read, bucket, object_key(who.account_id, day))
    assert gunzip(stored) == ndjson(await exported_day(client, who.account.headers, day))


async def test_several_runners_write_a_day_once(
    client: AppClient,
    moto_server: MotoServer,
) -> None:
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"arch-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    day = _past_day(6)
    await _lines_of_day(client, who, day, 50)
    await _configure(client, who, {"integration": "s3", "bucket": bucket})
    await client.post(
        "/v1/config/archiving/run", json={"day": day_name(day)}, headers=who.account.headers
    )
    runners = [runner_for(client) for _ in range(3)]
    try:
        written = await asyncio.gather(*(r.write(who.account_id, day) for r in runners))
        assert sorted(written) == [0, 0, 1]
        # Done: no runner writes it again.
        assert [await r.write(who.account_id, day) for r in runners] == [0, 0, 0]
    finally:
        for runner in runners:
            await runner.close()
    assert (await _status(client, who))[day_name(day)]["attempts"] == 1


async def test_the_daily_round_schedules_yesterday(
    client: AppClient,
    moto_server: MotoServer,
) -> None:
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"arch-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    yesterday = _past_day(1)
    await _lines_of_day(client, who, yesterday, 30)
    await _configure(client, who, {"integration": "s3", "bucket": bucket})
    # Just after midnight plus the settle delay (15 min by default).
    clock = (yesterday + 1) * DAY_MS + 16 * 60_000
    runner = runner_for(client, clock=lambda: clock)
    try:
        await runner.schedule()
        assert (await _status(client, who))[day_name(yesterday)]["status"] == "pending"
        assert await runner.write(who.account_id, yesterday) == 1
    finally:
        await runner.close()
    assert await asyncio.to_thread(moto_server.keys, bucket) == [
        object_key(who.account_id, yesterday)
    ]


async def test_a_day_without_lines_writes_no_object(
    client: AppClient,
    moto_server: MotoServer,
) -> None:
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"arch-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    day = _past_day(8)
    await _configure(client, who, {"integration": "s3", "bucket": bucket})
    await client.post(
        "/v1/config/archiving/run", json={"day": day_name(day)}, headers=who.account.headers
    )
    runner = runner_for(client)
    try:
        assert await runner.write(who.account_id, day) == 1
    finally:
        await runner.close()
    status = (await _status(client, who))[day_name(day)]
    assert (status["status"], status["lines"], status["object"]) == ("done", 0, None)
    assert await asyncio.to_thread(moto_server.keys, bucket) == []


async def test_digitalocean_spaces_through_the_s3_api(
    client: AppClient,
    moto_server: MotoServer,
) -> None:
    """``dos``: the account's own endpoint and keys (loopback is allowed here)."""
    space = await asyncio.to_thread(moto_server.make_bucket, f"space-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    day = _past_day(3)
    await _lines_of_day(client, who, day, 40)
    await _configure(
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
    await client.post(
        "/v1/config/archiving/run", json={"day": day_name(day)}, headers=who.account.headers
    )
    runner = runner_for(client)
    try:
        assert await runner.write(who.account_id, day) == 1
    finally:
        await runner.close()
    stored, _ = await asyncio.to_thread(moto_server.read, space, object_key(who.account_id, day))
    assert gunzip(stored) == ndjson(await exported_day(client, who.account.headers, day))
