"""Each alert test gets a store of its own, on each backend: the evaluator's cursor is
one per store, so tests sharing a store would evaluate each other's lines."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.alerts.harness import Harness, open_harness
from tests.conftest import _create_pg_database, _drop_pg_database, pg_url

from tidegate.db.migrate import upgrade_database


@pytest.fixture(params=["sqlite", "postgres"])
async def own_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'alerts.sqlite3'}"
        await upgrade_database(url)
        yield url
        return
    name = await _create_pg_database()
    try:
        url = pg_url(name)
        await upgrade_database(url)
        yield url
    finally:
        await _drop_pg_database(name)


@pytest.fixture
async def harness(own_database: str, tmp_path: Path) -> AsyncIterator[Harness]:
    opened = await open_harness(own_database, tmp_path / "data")
    try:
        yield opened
    finally:
        await opened.close()
