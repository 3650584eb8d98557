"""The app's shutdown always completes: every close step is bounded, and one that
hangs is named in a warning and left behind."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import REDIS_URL, make_settings, open_client

# Generous: only a hang (the bug) takes longer; never a measure of speed.
HANG_S = 30.0


async def _finishes(awaitable: Any) -> bool:
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=HANG_S)
    if not done:
        return False
    task.result()
    return True


@pytest.mark.redis
async def test_a_hanging_close_step_is_named_and_skipped(
    database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    http, lifespan = await open_client(
        make_settings(database_url, tmp_path, redis_url=REDIS_URL, shutdown_step_timeout_s=0.5)
    )
    state = http._transport.app.state.tidegate  # type: ignore[attr-defined]
    real_close = state.tail.close
    release = asyncio.Event()

    async def hanging_close() -> None:
        # Ignores cancellation, as a reader that swallows it did, until released.
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                pass

    state.tail.close = hanging_close
    try:
        assert (await http.get("/v3/enterprise")).status_code in (401, 403)
        with caplog.at_level(logging.WARNING, logger="tidegate.shutdown"):
            assert await _finishes(lifespan.__aexit__(None, None, None)), "shutdown hung"
        warnings = [r.getMessage() for r in caplog.records if r.name == "tidegate.shutdown"]
        assert any("live tail broker" in message for message in warnings), warnings
    finally:
        release.set()
        await real_close()
        await http.aclose()
