"""Archiving in a real ``tidegate serve``: its lifespan runs the archive runner, which
writes a day asked for through the API to moto, as every worker would (real HTTP
throughout: the API, the S3 API, the status read back)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.archive.helpers import exported_day, gunzip, ndjson
from tests.conftest import AppClient
from tests.ingest.factories import ingest, make_ingestor
from tests.objectstore.moto_server import ACCESS_KEY_ID, SECRET_ACCESS_KEY, MotoServer
from tests.waiting import eventually

from tidegate.archive.writer import day_name, object_key
from tidegate.clock import now_ms
from tidegate.logs.store import DAY_MS


async def test_a_live_server_archives_a_day_on_demand(
    client: AppClient, moto_server: MotoServer, live_server_factory: Any
) -> None:
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"live-{uuid.uuid4().hex[:10]}")
    who = await make_ingestor(client)
    day = now_ms() // DAY_MS - 2
    lines = [{"line": f"live {n}", "app": "a", "timestamp": day * DAY_MS + n} for n in range(60)]
    assert (await ingest(client, who, lines)).status_code == 200
    env = {
        "TIDEGATE_DATABASE_URL": client.database_url,
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_DESTINATION_ALLOW": "127.0.0.1/32",
        "TIDEGATE_S3_ENDPOINT": moto_server.endpoint,
        "TIDEGATE_ARCHIVE_S3_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "TIDEGATE_ARCHIVE_S3_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
        "TIDEGATE_ARCHIVE_TICK_S": "0.5",
    }
    server = await asyncio.to_thread(live_server_factory, env=env)
    headers = who.account.headers
    async with server.async_client() as http:
        configured = await http.post(
            "/v1/config/archiving", json={"integration": "s3", "bucket": bucket}, headers=headers
        )
        assert configured.status_code == 200, configured.text
        run = await http.post(
            "/v1/config/archiving/run", json={"day": day_name(day)}, headers=headers
        )
        assert run.status_code == 200, run.text

        async def done() -> dict[str, Any] | None:
            status = await http.get("/v1/config/archiving/status", headers=headers)
            days = {item["day"]: item for item in status.json()["days"]}
            item: dict[str, Any] = days.get(day_name(day), {})
            return item if item.get("status") == "done" else None

        finished = await eventually(done, timeout=120, what="the day archived by the server")
    key = object_key(who.account_id, day)
    assert (finished["object"], finished["lines"], finished["attempts"]) == (key, 60, 1)
    stored, _ = await asyncio.to_thread(moto_server.read, bucket, key)
    assert gunzip(stored) == ndjson(await exported_day(client, headers, day))
