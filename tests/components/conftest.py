"""An app whose operator allow-listed loopback, for tests whose destinations deliver to
a receiver on 127.0.0.1 (which tidegate refuses by default)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.conftest import (
    BACKENDS,
    AppClient,
    DatabaseTemplates,
    make_settings,
    running_client,
)
from tests.objectstore.moto_server import (
    MotoServer,
    moto_server,  # noqa: F401  (the session's server)
)


@pytest.fixture(scope="module")
async def loopback_client(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AppClient]:
    settings = make_settings(
        database_url, tmp_path_factory.mktemp("data"), destination_allow="127.0.0.1/32"
    )
    async with running_client(settings) as http:
        yield http


@pytest.fixture(params=BACKENDS)
async def pull_client(
    request: pytest.FixtureRequest,
    database_templates: DatabaseTemplates,
    tmp_path: Path,
    moto_server: MotoServer,  # noqa: F811
) -> AsyncIterator[AppClient]:
    """``loopback_client`` on a database of this test's own, its S3 at the session's moto:
    a pull scheduler's tick polls every account's sources in the database, so a source
    another test left (an unreadable queue) would count in this test's failures."""
    url = await database_templates.fresh(request.param)
    settings = make_settings(
        url, tmp_path / "data", destination_allow="127.0.0.1/32", s3_endpoint=moto_server.endpoint
    )
    try:
        async with running_client(settings) as http:
            yield http
    finally:
        await database_templates.drop(url)
