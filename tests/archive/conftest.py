"""The archiving tests' app: loopback allowed as a destination, the S3 API at the
session's moto server (tests/objectstore/moto_server.py), on each backend."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.archive.helpers import archive_overrides
from tests.conftest import AppClient, make_settings, running_client
from tests.objectstore.moto_server import MotoServer, moto_server

__all__ = ["client", "moto_server"]


@pytest.fixture(scope="module")
async def client(
    database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    moto_server: MotoServer,
) -> AsyncIterator[AppClient]:
    settings = make_settings(
        database_url, tmp_path_factory.mktemp("data"), **archive_overrides(moto_server)
    )
    async with running_client(settings) as http:
        yield http
