"""Pipeline nodes' user_config is sealed at rest (docs/api-pipelines.md, "Node
configurations are sealed"), on SQLite and PostgreSQL: no credential is in the tables
in clear text after create, update and publish; the API answers what was sent; migration
0020 seals the rows of an older database; a server secret that cannot open a
configuration answers 503 without echoing it."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from tests.conftest import AppClient, make_settings, open_client, running_client
from tests.gateway.factories import new_account
from tests.pipelines.factories import add_node, make_pipeline, source_with_route
from tests.pipelines.test_migration_0008 import downgrade

from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.db.migrate import upgrade_database
from tidegate.errors import ServiceUnavailable
from tidegate.pipelines import dataplane
from tidegate.pipelines.sealed_config import bind_sealer

SEALER = Sealer(hashlib.sha256(b"test-secret").digest())  # make_settings' secret
FIRST_KEY = "dd-first-0123456789abcdef-api-key"
SECOND_KEY = "dd-second-fedcba9876543210-api-key"


@pytest.fixture(params=["sqlite", "postgres"])
def empty_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'sealed.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


async def raw_rows(url: str) -> str:
    """Every column of both node tables, as the database holds them, in one string."""
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            rows = [
                *(await connection.execute(text("SELECT * FROM pipeline_nodes"))).all(),
                *(await connection.execute(text("SELECT * FROM published_pipeline_nodes"))).all(),
            ]
    finally:
        await engine.dispose()
    assert rows
    return repr(rows)


def datadog(api_key: str) -> dict[str, Any]:
    return {"api_key": api_key, "site": "eu1", "compression": "gzip", "ack_enabled": True}


async def build(client: AppClient) -> tuple[Any, str, str, str]:
    """A published pipeline: HTTP source -> datadog-logs (``FIRST_KEY``), then the
    destination's key changed to ``SECOND_KEY`` (PATCH) and published again."""
    account = await new_account(client, throttle=False)
    pipeline_id = await make_pipeline(client, account)
    route_id, source_id = await source_with_route(client, account, pipeline_id)
    sink_id = await add_node(
        client,
        account,
        pipeline_id,
        "destination",
        {"type": "datadog-logs", "inputs": [source_id], "user_config": datadog(FIRST_KEY)},
    )
    publish = f"/v3/pipeline/{pipeline_id}/publish"
    assert (await client.post(publish, headers=account.headers)).status_code == 200
    patched = await client.patch(
        f"/v3/pipeline/{pipeline_id}/destination/{sink_id}",
        json={"user_config": datadog(SECOND_KEY)},
        headers=account.headers,
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"]["user_config"] == datadog(SECOND_KEY)
    assert (await client.post(publish, headers=account.headers)).status_code == 200
    return account, pipeline_id, route_id, sink_id


async def test_no_credential_is_stored_in_clear_and_reads_answer_what_was_sent(
    isolated_client: AppClient,
) -> None:
    client = isolated_client
    account, pipeline_id, route_id, sink_id = await build(client)
    stored = await raw_rows(client.database_url)
    assert FIRST_KEY not in stored
    assert SECOND_KEY not in stored
    assert "eu1" not in stored  # the whole configuration is sealed, not only its keys

    got = await client.get(
        f"/v3/pipeline/{pipeline_id}/destination/{sink_id}", headers=account.headers
    )
    assert got.status_code == 200, got.text
    assert got.json()["data"]["user_config"] == datadog(SECOND_KEY)

    # The data plane opens the published revision (what the runtime compiles).
    db = Database.connect(client.database_url)
    bind_sealer(db, SEALER)
    try:
        async with db.read_sessions() as session:
            [graph] = await dataplane.pipelines_for_route(
                session=session, gateway_route_id=route_id
            )
    finally:
        await db.dispose()
    [sink] = [node for node in graph.nodes if node.id == sink_id]
    assert sink.user_config == datadog(SECOND_KEY)


async def test_a_private_key_is_not_stored_in_clear(isolated_client: AppClient) -> None:
    client = isolated_client
    account = await new_account(client, throttle=False)
    pipeline_id = await make_pipeline(client, account)
    _, source_id = await source_with_route(client, account, pipeline_id)
    pem = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )
    secret_line = pem.splitlines()[5]
    credentials = json.dumps(
        {
            "type": "service_account",
            "project_id": "p",
            "client_email": "a@p.iam.gserviceaccount.com",
            "private_key": pem,
        }
    )
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/destination",
        json={
            "type": "gcp-cloud-storage",
            "inputs": [source_id],
            "user_config": {"bucket": "bucket-a", "credentials_json": credentials},
        },
        headers=account.headers,
    )
    assert response.status_code == 201, response.text
    stored = await raw_rows(client.database_url)
    assert secret_line not in stored
    assert response.json()["data"]["user_config"]["credentials_json"] == credentials


async def test_migration_0020_seals_the_rows_of_an_older_database(
    empty_db: str, tmp_path: Path
) -> None:
    await upgrade_database(empty_db, sealer=SEALER)
    async with running_client(make_settings(empty_db, tmp_path / "data")) as client:
        account, pipeline_id, _, sink_id = await build(client)

    # Back before sealing: the configurations are in clear, as older servers stored them.
    await downgrade(empty_db, "0019")
    assert SECOND_KEY in await raw_rows(empty_db)

    # Without the server secret, a database holding nodes is not migrated.
    with pytest.raises(RuntimeError, match="server secret"):
        await upgrade_database(empty_db)
    assert SECOND_KEY in await raw_rows(empty_db)

    await upgrade_database(empty_db, sealer=SEALER)
    assert SECOND_KEY not in await raw_rows(empty_db)
    async with running_client(make_settings(empty_db, tmp_path / "data")) as client:
        got = await client.get(
            f"/v3/pipeline/{pipeline_id}/destination/{sink_id}", headers=account.headers
        )
    assert got.status_code == 200, got.text
    assert got.json()["data"]["user_config"] == datadog(SECOND_KEY)


async def test_another_server_secret_answers_503_without_the_configuration(
    empty_db: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await upgrade_database(empty_db)
    async with running_client(make_settings(empty_db, tmp_path / "data")) as client:
        account, pipeline_id, route_id, sink_id = await build(client)

    caplog.set_level(logging.DEBUG)
    other, lifespan = await open_client(
        make_settings(empty_db, tmp_path / "data", secret_key="another-secret")
    )
    try:
        for path in (
            f"/v3/pipeline/{pipeline_id}",
            f"/v3/pipeline/{pipeline_id}/destination/{sink_id}",
            f"/v3/pipeline/{pipeline_id}/destination",
        ):
            response = await other.get(path, headers=account.headers)
            assert response.status_code == 503, response.text
            assert SECOND_KEY not in response.text
            assert "cannot be read" in response.json()["message"]
    finally:
        await other.aclose()
        await lifespan.__aexit__(None, None, None)

    db = Database.connect(empty_db)
    bind_sealer(db, Sealer(hashlib.sha256(b"another-secret").digest()))
    try:
        async with db.read_sessions() as session:
            with pytest.raises(ServiceUnavailable):
                await dataplane.pipelines_for_route(session=session, gateway_route_id=route_id)
    finally:
        await db.dispose()
    assert SECOND_KEY not in caplog.text
    assert "cannot be opened with this server secret" in caplog.text
