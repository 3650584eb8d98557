"""The app in process with its syslog listener on a free port, on each backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import AppClient, make_settings, open_client


@asynccontextmanager
async def syslog_app(
    database_url: str, data_dir: Path, **settings: Any
) -> AsyncIterator[AppClient]:
    """The app in process with ``TIDEGATE_SYSLOG_PORT=0`` (a free port:
    ``helpers.syslog_port(client)``) and ``settings``."""
    http, lifespan = await open_client(
        make_settings(database_url, data_dir, syslog_port=0, **settings)
    )
    try:
        yield http
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


@pytest.fixture(scope="session")
async def syslog_client(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AppClient]:
    """As ``client``, with the listener, and a small line limit for the framing tests."""
    async with syslog_app(
        database_url, tmp_path_factory.mktemp("data"), syslog_max_line_bytes=4096
    ) as http:
        yield http
