"""Archiving test helpers: an app whose operator allow-listed loopback and pointed the
S3 API at the session's moto server, a runner on that app's database, and the lines
of a day read back through the export API."""

from __future__ import annotations

import gzip
from typing import Any

from tests.conftest import AppClient
from tests.objectstore.moto_server import ACCESS_KEY_ID, SECRET_ACCESS_KEY, MotoServer

from tidegate import json_codec
from tidegate.app_state import AppState
from tidegate.archive.runner import ArchiveRunner
from tidegate.config import Settings
from tidegate.logs.store import DAY_MS


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
