"""Each alert test gets a store of its own, on each backend: the evaluator's cursor is
one per store, so tests sharing a store would evaluate each other's lines."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.alerts.harness import Harness, open_harness
from tests.conftest import DatabaseTemplates


@pytest.fixture(params=["sqlite", "postgres"])
async def own_database(
    request: pytest.FixtureRequest, database_templates: DatabaseTemplates
) -> AsyncIterator[str]:
    """A migrated database of this test's own: a copy of the test process's template
    (migrating a new one cost about 0.4 s of CPU a test)."""
    url = await database_templates.fresh(request.param)
    try:
        yield url
    finally:
        await database_templates.drop(url)


@pytest.fixture
async def harness(own_database: str, tmp_path: Path) -> AsyncIterator[Harness]:
    opened = await open_harness(own_database, tmp_path / "data")
    try:
        yield opened
    finally:
        await opened.close()
