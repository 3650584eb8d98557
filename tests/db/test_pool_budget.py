"""PostgreSQL connections: each worker's pools are its share of the server's
max_connections (less the superuser-reserved ones and other clients' headroom); a
start with more workers than the budget allows is refused with a clear message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest
from tests.conftest import PG_ADMIN_DSN, make_settings, open_client

from tidegate.db.engine import (
    DEFAULT_POOL_PLAN,
    MIN_CONNECTIONS_PER_WORKER,
    PoolBudgetError,
    PoolPlan,
    other_clients_headroom,
    pg_connection_limits,
    plan_pools,
)


async def _server_limits() -> tuple[int, int]:
    connection = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        max_connections = int(await connection.fetchval("SHOW max_connections"))
        reserved = int(await connection.fetchval("SHOW superuser_reserved_connections"))
    finally:
        await connection.close()
    return max_connections, reserved


@pytest.mark.parametrize(
    ("max_connections", "reserved", "workers"),
    [(100, 3, 1), (100, 3, 4), (100, 3, 8), (100, 3, 20), (500, 3, 4), (30, 3, 5)],
)
def test_the_workers_together_stay_within_the_budget(
    max_connections: int, reserved: int, workers: int
) -> None:
    plan = plan_pools(max_connections=max_connections, reserved=reserved, workers=workers)
    budget = max_connections - reserved - other_clients_headroom(max_connections)
    assert plan.per_worker * workers <= budget
    assert MIN_CONNECTIONS_PER_WORKER <= plan.per_worker <= DEFAULT_POOL_PLAN.per_worker
    assert min(plan.pool_size, plan.max_overflow, plan.fetch_pool) >= 1


def test_the_default_shape_and_the_computed_sizes() -> None:
    assert PoolPlan.of(DEFAULT_POOL_PLAN.per_worker) == DEFAULT_POOL_PLAN  # 10 + 20 + 10 + 1
    # PostgreSQL's default 100 (3 reserved, 10 for other clients) over four workers.
    assert plan_pools(max_connections=100, reserved=3, workers=4) == PoolPlan(
        pool_size=5, max_overflow=10, fetch_pool=5
    )


def test_too_many_workers_are_refused_with_the_numbers() -> None:
    with pytest.raises(PoolBudgetError, match=r"max_connections is 100.*30 workers"):
        plan_pools(max_connections=100, reserved=3, workers=30)


async def test_the_server_limits_are_read_from_postgresql() -> None:
    url = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
    assert await pg_connection_limits(url) == await _server_limits()


async def test_four_workers_pools_fit_the_real_server(fresh_pg_url: str, tmp_path: Path) -> None:
    """A worker of four sizes its pools to a quarter of the real server's budget (each
    used to open up to 41: four workers alone could exceed a default max_connections)."""
    from tidegate.db.migrate import upgrade_database

    await upgrade_database(fresh_pg_url)
    max_connections, reserved = await _server_limits()
    http, lifespan = await open_client(
        make_settings(fresh_pg_url, tmp_path, workers=4, alerts_enabled=False, db_pool_size=None)
    )
    try:
        db = http._transport.app.state.tidegate.db  # type: ignore[attr-defined]
        pool = db.read_engine.pool
        per_worker = pool.size() + pool._max_overflow + db.pool_plan.fetch_pool + 1
        assert per_worker * 4 <= max_connections - reserved - other_clients_headroom(
            max_connections
        )
        # The hot-read pool honours the plan too.
        assert (await http.get("/healthz")).status_code == 200
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


def test_serve_refuses_more_workers_than_the_budget(fresh_pg_url: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tidegate", "serve", "--port", "9", "--workers", "200"],
        env={
            **os.environ,
            "TIDEGATE_DATABASE_URL": fresh_pg_url,
            "TIDEGATE_DATA_DIR": str(tmp_path / "var"),
            "TIDEGATE_BOOTSTRAP": "0",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "cannot start" in result.stderr
    assert "200 workers" in result.stderr
    assert "max_connections" in result.stderr
