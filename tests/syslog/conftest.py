"""The app in process with its syslog listener on a free port, on each backend."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.conftest import AppClient, make_settings, open_client


@pytest.fixture(scope="session")
async def syslog_client(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AppClient]:
    """As ``client``, with ``TIDEGATE_SYSLOG_PORT=0`` (the listener picks a free port:
    ``syslog_port(client)``) and a small line limit for the framing tests."""
    settings = make_settings(
        database_url,
        tmp_path_factory.mktemp("data"),
        syslog_port=0,
        syslog_max_line_bytes=4096,
    )
    http, lifespan = await open_client(settings)
    try:
        yield http
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)
