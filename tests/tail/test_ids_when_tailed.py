"""Whether a write learns its rows' ids (so live lines carry ``_id``): SQLite's writer
numbers every line anyway; PostgreSQL takes them from the sequence first (one more
statement, about a microsecond a row), only for an account someone tails, here or,
with Redis, in any other process (tidegate.logs.intake.LineIntake.commit)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from redis.asyncio import Redis
from tests.conftest import REDIS_PREFIX, REDIS_URL, make_settings, running_client
from tests.ingest.factories import ingest, make_ingestor

from tidegate.logs.store import StoreBatch

pytestmark = pytest.mark.redis


async def test_a_write_learns_ids_only_for_an_account_tailed_somewhere(
    database_url: str, tmp_path: Path
) -> None:
    settings = make_settings(database_url, tmp_path, redis_url=REDIS_URL)
    async with running_client(settings) as http:
        intake = http._transport.app.state.tidegate.intake  # type: ignore[attr-defined]
        written: list[StoreBatch] = []
        write = intake.writer.write

        async def seen(batches: Sequence[StoreBatch]) -> None:
            await write(batches)
            written.extend(batches)

        intake.writer.write = seen
        who = await make_ingestor(http)
        sqlite = database_url.startswith("sqlite")

        assert (await ingest(http, who, [{"line": "nobody tails"}])).status_code == 200
        (alone,) = written
        assert (alone.ids is not None) == sqlite

        # Another process's tail is a subscription to the account's channel.
        other_process = Redis.from_url(REDIS_URL)
        pubsub = other_process.pubsub()
        try:
            await pubsub.subscribe(f"{REDIS_PREFIX}tail:{who.account_id}")
            assert (await ingest(http, who, [{"line": "a"}, {"line": "b"}])).status_code == 200
            tailed = written[1]
            assert tailed.ids is not None
            assert len(tailed.ids) == 2
        finally:
            await pubsub.aclose()
            await other_process.aclose()
