"""The archiving tests' app: loopback allowed as a destination, the S3 API at the
session's moto server (tests/objectstore/moto_server.py), on each backend, on a
database of the module's own: archiving's rounds are database-wide (every account's
due days), and a live server of another test sharing the session's database would
otherwise run them too."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.archive.helpers import archive_overrides
from tests.conftest import (
    BACKENDS,
    AppClient,
    DatabaseTemplates,
    make_settings,
    running_client,
)
from tests.objectstore.moto_server import MotoServer, moto_server

__all__ = ["client", "moto_server"]


@pytest.fixture(scope="module", params=BACKENDS)
async def client(
    request: pytest.FixtureRequest,
    database_templates: DatabaseTemplates,
    tmp_path_factory: pytest.TempPathFactory,
    moto_server: MotoServer,
) -> AsyncIterator[AppClient]:
    url = await database_templates.fresh(request.param)
    settings = make_settings(url, tmp_path_factory.mktemp("data"), **archive_overrides(moto_server))
    try:
        async with running_client(settings) as http:
            yield http
    finally:
        await database_templates.drop(url)
