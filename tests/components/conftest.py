"""An app whose operator allow-listed loopback, for tests whose destinations deliver to
a receiver on 127.0.0.1 (which tidegate refuses by default)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.conftest import AppClient, make_settings, running_client


@pytest.fixture(scope="module")
async def loopback_client(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AppClient]:
    settings = make_settings(
        database_url, tmp_path_factory.mktemp("data"), destination_allow="127.0.0.1/32"
    )
    async with running_client(settings) as http:
        yield http
