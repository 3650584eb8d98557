"""Migration 0008 on a database holding pipelines, on SQLite and PostgreSQL: pipelines
that ran before it still run after it (they are published as they stood), and it
downgrades with data too."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine
from tests.conftest import make_settings, open_client
from tests.gateway.factories import new_account
from tests.pipelines.factories import add_node, make_pipeline, source_with_route

from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.db.migrate import alembic_config, upgrade_database
from tidegate.pipelines import dataplane
from tidegate.pipelines.sealed_config import bind_sealer

# make_settings' server secret ("test-secret"), as load_server_secret derives it.
SEALER = Sealer(hashlib.sha256(b"test-secret").digest())


@pytest.fixture(params=["sqlite", "postgres"])
def empty_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'm.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


async def downgrade(url: str, revision: str, sealer: Sealer | None = SEALER) -> None:
    def run(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        if sealer is not None:  # 0020 opens the sealed node configurations
            config.attributes["open"] = sealer.open
        command.downgrade(config, revision)

    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(run)
    finally:
        await engine.dispose()


async def test_pipelines_running_before_0008_still_run(empty_db: str, tmp_path: Path) -> None:
    await upgrade_database(empty_db)
    client, lifespan = await open_client(make_settings(empty_db, tmp_path))
    try:
        account = await new_account(client, throttle=False)
        pipeline_id = await make_pipeline(client, account)
        route_id, source_id = await source_with_route(client, account, pipeline_id)
        sink_id = await add_node(
            client,
            account,
            pipeline_id,
            "destination",
            {"type": "blackhole", "inputs": [source_id]},
        )
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)

    # Back to the schema before drafts (the pipeline as it was then: saved, so running),
    # then forward again.
    await downgrade(empty_db, "0007")
    await upgrade_database(empty_db, sealer=SEALER)

    db = Database.connect(empty_db)
    bind_sealer(db, SEALER)
    try:
        async with db.read_sessions() as session:
            rows = (
                await session.execute(
                    text("SELECT revision, published_revision FROM pipelines WHERE id = :id"),
                    {"id": pipeline_id},
                )
            ).all()
            assert rows == [(3, 3)]
            [graph] = await dataplane.pipelines_for_route(
                session=session, gateway_route_id=route_id
            )
            assert [node.id for node in graph.nodes] == [source_id, sink_id]
            assert graph.revision == 3
            route_type = await session.scalar(
                text("SELECT type FROM gateway_routes WHERE id = :id"), {"id": route_id}
            )
            assert route_type == "http"
    finally:
        await db.dispose()
