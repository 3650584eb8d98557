"""Helpers shared by the export and live tail tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import httpx

from tidegate.app_state import AppState
from tidegate.db.engine import Database
from tidegate.logs.reading import PageReader, run_off_loop
from tidegate.logs.store import NewLine, store_lines

T = TypeVar("T")

BASE_MS = 1_763_800_000_000  # 2025-11-22, whole second: the lines' own times (``ts``)


def on_event_loop() -> bool:
    """Whether the calling thread is running an event loop (the server's, in tests)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def insert_lines(
    database_url: str,
    account_id: str,
    lines: Sequence[NewLine],
    *,
    received_ms: int | None = None,
) -> None:
    """Stores ``lines`` as received now (by default).

    Not at ``BASE_MS``: retention counts from when a line was received, and the app's
    retention job (first sweep 1-30 s after start) deletes lines received more than 30
    days ago, so lines "received" at BASE_MS could vanish in the middle of a test.
    """
    if received_ms is None:
        received_ms = now_ms()
    db = Database.connect(database_url)
    try:
        async with db.write_sessions() as session:
            await store_lines(
                session=session, account_id=account_id, lines=lines, received_ms=received_ms
            )
            await session.commit()
    finally:
        await db.dispose()


async def read_off_loop(db: Database, account_id: str, page: Callable[[PageReader], T]) -> T:
    """``page(reader)`` run as the server runs a read of the account's lines (in an
    export thread, tidegate.logs.reading), then ``db`` disposed of."""
    try:
        async with db.read_sessions() as session:
            return await run_off_loop(
                database=db, session=session, account_id=account_id, page=page
            )
    finally:
        await db.dispose()


async def export(
    client: httpx.AsyncClient, headers: dict[str, str], **params: Any
) -> httpx.Response:
    params.setdefault("from", BASE_MS // 1000 - 3600)
    params.setdefault("to", BASE_MS // 1000 + 3600)
    clean = {name: value for name, value in params.items() if value is not None}
    return await client.get("/v2/export", params=clean, headers=headers)


async def export_all(
    client: httpx.AsyncClient, headers: dict[str, str], **params: Any
) -> tuple[list[dict[str, Any]], int]:
    """Every page's lines, and how many pages it took."""
    lines: list[dict[str, Any]] = []
    pages = 0
    cursor: str | None = None
    while True:
        response = await export(client, headers, pagination_id=cursor, **params)
        assert response.status_code == 200, response.text
        body = response.json()
        lines.extend(body["lines"])
        pages += 1
        cursor = body["pagination_id"]
        if cursor is None:
            return lines, pages
        assert pages < 10_000


def app_state_of(client: httpx.AsyncClient) -> AppState:
    """The state of the in-process app behind ``client`` (the ``client`` fixture)."""
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    state: AppState = transport.app.state.tidegate  # type: ignore[attr-defined]
    return state
