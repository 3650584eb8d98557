"""Fixtures of the pipelines' tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.conftest import AppClient, make_settings, open_client


@pytest.fixture
async def two_workers(
    database_url: str, tmp_path: Path
) -> AsyncIterator[tuple[AppClient, AppClient]]:
    """Two app instances (as two workers) on one database and one real Redis."""
    settings = make_settings(database_url, tmp_path, redis_url="redis://127.0.0.1:6379/0")
    first, first_life = await open_client(settings)
    second, second_life = await open_client(settings)
    try:
        yield first, second
    finally:
        for http, life in ((first, first_life), (second, second_life)):
            await http.aclose()
            await life.__aexit__(None, None, None)
