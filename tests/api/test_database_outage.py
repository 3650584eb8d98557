"""Item 12: a PostgreSQL outage answers 503 with Retry-After in the family's error shape
on every path (management reads and writes, the gateway), as ingestion already did,
never a 500."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.conftest import (
    _create_pg_database,
    _drop_pg_database,
    free_port,
    make_settings,
    open_client,
    pg_url,
)
from tests.factories import make_tenant

from tidegate.api.error_handlers import store_unavailable
from tidegate.db.migrate import upgrade_database


def assert_v3_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) >= 1
    body = response.json()
    assert body["status"] == 503
    assert body["code"] == "EUNAVAILABLE"


def assert_legacy_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) >= 1
    body = response.json()
    assert body["code"] == "ServiceUnavailable"
    assert body["status"] == "error"
    assert set(body) == {"error", "code", "status"}


async def _requests(http: httpx.AsyncClient, headers: dict[str, str]) -> None:
    assert_v3_unavailable(await http.get("/v3/enterprise", headers=headers))
    assert_v3_unavailable(
        await http.post(
            "/v3/enterprise/account",
            json={"company": "Acme", "owneremail": "o@example.com"},
            headers=headers,
        )
    )
    assert_legacy_unavailable(await http.get("/v1/config/board", headers=headers))
    assert_legacy_unavailable(
        await http.post(
            "/gateway/00000000-0000-4000-8000-000000000000",
            json=[{"message": "hi"}],
            headers={"Authorization": "tga_" + "0" * 40},
        )
    )


async def test_nothing_listening_is_503_everywhere(tmp_path: Path) -> None:
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/tidegate"
    http, lifespan = await open_client(make_settings(url, tmp_path))
    try:
        await _requests(http, {"Authorization": "Token ste_" + "0" * 40})
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_database_dropped_under_a_running_server_is_503(tmp_path: Path) -> None:
    name = await _create_pg_database()
    url = pg_url(name)
    dropped = False
    try:
        await upgrade_database(url)
        tenant = await make_tenant(url)
        http, lifespan = await open_client(make_settings(url, tmp_path))
        try:
            # Working first: the pool holds live connections when the database goes.
            assert (await http.get("/v3/enterprise", headers=tenant.headers)).status_code == 200
            await _drop_pg_database(name)
            dropped = True
            await _requests(http, tenant.headers)
        finally:
            await http.aclose()
            await lifespan.__aexit__(None, None, None)
    finally:
        if not dropped:
            await _drop_pg_database(name)


async def test_statement_timeout_is_set_and_answers_503(tmp_path: Path) -> None:
    """A statement cut off by PostgreSQL's statement_timeout is a 503, not a 500."""
    from sqlalchemy import text

    from tidegate.db.engine import Database

    name = await _create_pg_database()
    try:
        db = Database.connect(pg_url(name), statement_timeout_s=0.2)
        try:
            async with db.read_engine.connect() as connection:
                shown = (await connection.execute(text("SHOW statement_timeout"))).scalar()
                assert shown == "200ms"
                with pytest.raises(Exception) as cut_off:  # noqa: PT011 - classified below
                    await connection.execute(text("SELECT pg_sleep(5)"))
            assert store_unavailable(cut_off.value), repr(cut_off.value)
        finally:
            await db.dispose()
    finally:
        await _drop_pg_database(name)


async def test_connections_killed_under_a_running_server_recover(tmp_path: Path) -> None:
    """Pooled connections cut by the server (a restart, pg_terminate_backend) are
    replaced: the next request succeeds instead of failing on a dead connection."""
    import asyncpg  # type: ignore[import-untyped]
    from tests.conftest import PG_ADMIN_DSN

    name = await _create_pg_database()
    try:
        url = pg_url(name)
        await upgrade_database(url)
        tenant = await make_tenant(url)
        http, lifespan = await open_client(make_settings(url, tmp_path))
        try:
            for _ in range(3):
                assert (await http.get("/v3/enterprise", headers=tenant.headers)).status_code == 200
            admin = await asyncpg.connect(PG_ADMIN_DSN)
            try:
                killed = await admin.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = $1",
                    name,
                )
            finally:
                await admin.close()
            assert killed >= 1
            for _ in range(3):
                assert (await http.get("/v3/enterprise", headers=tenant.headers)).status_code == 200
        finally:
            await http.aclose()
            await lifespan.__aexit__(None, None, None)
    finally:
        await _drop_pg_database(name)
