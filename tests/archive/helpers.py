"""Archiving test helpers: an app whose operator allow-listed loopback and pointed the
S3 API at the session's moto server, a runner on that app's database, and the lines
of a day read back through the export API; a day of lines stored, archiving
configured, a day asked for and the days' status, through the API."""

from __future__ import annotations

import gzip
import uuid
from typing import Any

from sqlalchemy import select
from tests.conftest import AppClient
from tests.ingest.factories import Ingestor, ingest, make_ingestor
from tests.objectstore.moto_server import ACCESS_KEY_ID, SECRET_ACCESS_KEY, MotoServer

from tidegate import json_codec
from tidegate.app_state import AppState
from tidegate.archive.runner import ArchiveRunner
from tidegate.archive.writer import day_name
from tidegate.clock import now_ms
from tidegate.config import Settings
from tidegate.logs.store import DAY_MS
from tidegate.models import ArchiveConfig

# The provider's swift example (examples/archive_swift.tf, docs/resources/logdna_archive.md).
SWIFT_EXAMPLE: dict[str, Any] = {
    "integration": "swift",
    "authurl": "example.com",
    "expires": 5,
    "username": "example user",
    "password": "password",
    "tenantname": "example",
}


def archive_overrides(moto: MotoServer) -> dict[str, Any]:
    return {
        "destination_allow": "127.0.0.1/32",
        "s3_endpoint": moto.endpoint,
        "archive_s3_access_key_id": ACCESS_KEY_ID,
        "archive_s3_secret_access_key": SECRET_ACCESS_KEY,
        "archive_backoff_s": 30.0,
    }


def state_of(client: AppClient) -> AppState:
    state: AppState = client._transport.app.state.tidegate  # type: ignore[attr-defined]
    return state


def runner_for(
    client: AppClient, *, settings: Settings | None = None, **options: Any
) -> ArchiveRunner:
    state = state_of(client)
    return ArchiveRunner(state.db, state.sealer, settings or client.settings, **options)


async def exported_day(
    client: AppClient, headers: dict[str, str], day: int
) -> list[dict[str, Any]]:
    """Every line of the day through ``/v2/export`` (oldest first), page by page."""
    lines: list[dict[str, Any]] = []
    params: dict[str, Any] = {
        "from": day * DAY_MS,
        "to": (day + 1) * DAY_MS - 1,
        "prefer": "head",
        "size": 10_000,
    }
    while True:
        page = await client.get("/v2/export", params=params, headers=headers)
        assert page.status_code == 200, page.text
        body = page.json()
        lines += body["lines"]
        if not body.get("pagination_id"):
            return lines
        params["pagination_id"] = body["pagination_id"]


def ndjson(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json_codec.dumps(record) + b"\n" for record in records)


def gunzip(data: bytes) -> bytes:
    return gzip.decompress(data)


def past_day(days_ago: int) -> int:
    return now_ms() // DAY_MS - days_ago


async def lines_of_day(client: AppClient, who: Ingestor, day: int, count: int) -> None:
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


async def configure(client: AppClient, who: Ingestor, body: dict[str, Any]) -> None:
    response = await client.post("/v1/config/archiving", json=body, headers=who.account.headers)
    assert response.status_code == 200, response.text


async def day_statuses(client: AppClient, who: Ingestor) -> dict[str, Any]:
    response = await client.get("/v1/config/archiving/status", headers=who.account.headers)
    assert response.status_code == 200, response.text
    days: dict[str, Any] = {item["day"]: item for item in response.json()["days"]}
    return days


async def request_run(client: AppClient, who: Ingestor, day: int) -> dict[str, Any]:
    run = await client.post(
        "/v1/config/archiving/run", json={"day": day_name(day)}, headers=who.account.headers
    )
    assert run.status_code == 200, run.text
    body: dict[str, Any] = run.json()
    return body


async def write(
    client: AppClient, who: Ingestor, day: int, *, settings: Settings | None = None, **options: Any
) -> int:
    """One attempt at the day by a runner of its own (1: written)."""
    runner = runner_for(client, settings=settings, **options)
    try:
        return await runner.write(who.account_id, day)
    finally:
        await runner.close()


async def account_with_day(
    client: AppClient, body: dict[str, Any], *, days_ago: int, lines: int
) -> tuple[Ingestor, int]:
    """A new account with ``lines`` in a past day, archiving configured with ``body``,
    and that day asked for on demand (pending)."""
    who = await make_ingestor(client)
    day = past_day(days_ago)
    await lines_of_day(client, who, day, lines)
    await configure(client, who, body)
    assert (await request_run(client, who, day))["status"] == "pending"
    return who, day


async def stored_config(client: AppClient, account_id: str) -> ArchiveConfig:
    """The account's configuration row as stored (sealed)."""
    async with state_of(client).db.read_sessions() as session:
        row = await session.scalar(
            select(ArchiveConfig).where(ArchiveConfig.account_id == account_id)
        )
    assert row is not None
    return row


async def written_after_backoff(
    client: AppClient, runner: ArchiveRunner, clock: list[int], who: Ingestor, day: int
) -> None:
    """The day's second attempt, past its first backoff (30 s in these settings), writes
    it."""
    clock[0] += 31_000
    assert await runner.write(who.account_id, day) == 1
    status = (await day_statuses(client, who))[day_name(day)]
    assert (status["status"], status["attempts"], status["error"]) == ("done", 2, None)
