"""Rotating the server secret (README, "Rotating the server secret"), on
SQLite and PostgreSQL: a server given the new secret and the old one reads everything
sealed under the old one; ``tidegate secrets rotate`` reseals every stored value under
the new one (a signing key's fingerprint with it), after which the new secret alone
reads them all; a value no secret opens is reported, never changed."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Text, select, text
from sqlalchemy.ext.asyncio import create_async_engine
from tests.conftest import AppClient, DatabaseTemplates, make_settings, running_client
from tests.factories import AccountCtx, make_account, make_tenant
from tests.gateway.factories import add_signing_key
from tests.pipelines.factories import add_node, make_pipeline, source_with_route

from tidegate.auth.rotation import SEALED_COLUMNS, rotate_sealed
from tidegate.auth.secrets import Sealer, previous_secrets, secret_bytes
from tidegate.cli import main
from tidegate.db.engine import Database
from tidegate.models.base import Base

OLD, NEW = "the-old-secret", "the-new-secret"
API_KEY = "dd-0123456789abcdef-rotated-api-key"
SIGNING_KEY = "a-signing-key-of-the-route-0123456789"
PD_KEY = "pd-routing-key-rotated"


def sealer(current: str, *previous: str) -> Sealer:
    return Sealer(secret_bytes(current), [secret_bytes(item) for item in previous])


def test_a_sealer_opens_what_its_previous_secrets_sealed_and_reseals_it() -> None:
    old, new = sealer(OLD), sealer(NEW, OLD)
    sealed = old.seal("s3cr3t")
    assert new.open(sealed) == "s3cr3t"
    assert sealer(NEW).open(sealed) is None
    resealed = new.reseal(sealed)
    assert resealed is not None
    assert resealed != sealed
    assert sealer(NEW).open(resealed) == "s3cr3t"
    assert old.open(resealed) is None  # sealed under the new secret only
    assert new.reseal(resealed) == resealed  # already current: unchanged
    assert new.reseal(sealer("another").seal("x")) is None
    assert new.seal("y") != new.seal("y")  # Fernet: a fresh IV each time
    assert sealer(NEW).open(new.seal("y")) == "y"  # sealed under the current one
    # Fingerprints: the current secret's first, then the previous ones'.
    assert new.fingerprints("k") == [sealer(NEW).fingerprint("k"), old.fingerprint("k")]


def test_previous_secrets_setting() -> None:
    assert previous_secrets("") == []
    assert previous_secrets(" a , b,,") == [secret_bytes("a"), secret_bytes("b")]
    # The secret file's text is hashed as a configured secret is.
    assert secret_bytes("abc") == hashlib.sha256(b"abc").digest()
    # The current secret among the previous ones changes nothing.
    assert sealer(NEW, NEW).fingerprints("k") == sealer(NEW).fingerprints("k")


def test_every_sealed_column_is_rotated() -> None:
    named = {
        f"{table.name}.{column.name}"
        for table in Base.metadata.tables.values()
        for column in table.columns
        if "sealed" in column.name or column.name.startswith("encrypted")
    }
    assert named == {f"{column.table.name}.{column.name}" for column in SEALED_COLUMNS}  # type: ignore[attr-defined]


async def _sealed_values(url: str) -> list[str]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            values: list[str] = []
            for column in SEALED_COLUMNS:
                query = select(column.cast(Text)).where(column.is_not(None))
                values += [row[0] for row in (await connection.execute(query)).all()]
            return values
    finally:
        await engine.dispose()


async def _fill(client: AppClient) -> tuple[AccountCtx, str, str, str, str]:
    """A published pipeline with a credential, a route with a signing key, a view with a
    PagerDuty channel: ``(account, pipeline, destination, route, view)``."""
    account = await make_account(client, await make_tenant(client.database_url))
    pipeline_id = await make_pipeline(client, account)
    route_id, source_id = await source_with_route(client, account, pipeline_id)
    config = {"api_key": API_KEY, "site": "eu1", "compression": "gzip", "ack_enabled": True}
    sink_id = await add_node(
        client,
        account,
        pipeline_id,
        "destination",
        {"type": "datadog-logs", "inputs": [source_id], "user_config": config},
    )
    published = await client.post(f"/v3/pipeline/{pipeline_id}/publish", headers=account.headers)
    assert published.status_code == 200, published.text
    await add_signing_key(client, account, route_id, SIGNING_KEY)
    channel = {"integration": "pagerduty", "key": PD_KEY, "triggerlimit": 5}
    view = await client.post(
        "/v1/config/view",
        json={"name": "v", "query": "error", "channels": [channel]},
        headers=account.headers,
    )
    assert view.status_code == 200, view.text
    return account, pipeline_id, sink_id, route_id, view.json()["viewID"]


async def _reads_everything(
    client: AppClient, filled: tuple[AccountCtx, str, str, str, str]
) -> None:
    account, pipeline_id, sink_id, route_id, view_id = filled
    node = await client.get(
        f"/v3/pipeline/{pipeline_id}/destination/{sink_id}", headers=account.headers
    )
    assert node.status_code == 200, node.text
    assert node.json()["data"]["user_config"]["api_key"] == API_KEY
    view = await client.get(f"/v1/config/view/{view_id}", headers=account.headers)
    assert view.status_code == 200, view.text
    assert PD_KEY in view.text
    # The same signing key again is the one the route holds (found by fingerprint).
    again = await client.put(
        f"/v3/pipeline/gateway-route/{route_id}/signing-key",
        json={"key": SIGNING_KEY},
        headers=account.headers,
    )
    assert again.status_code == 200, again.text


async def _rotate(url: str, rotating: Sealer) -> dict[str, int]:
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            return (await rotate_sealed(session, rotating, batch=2)).summary()
    finally:
        await db.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_rotated_secret_reads_everything_sealed_before(
    backend: str, database_templates: DatabaseTemplates, tmp_path: Path
) -> None:
    url = await database_templates.fresh(backend)
    data = tmp_path / "data"
    try:
        async with running_client(make_settings(url, data, secret_key=OLD)) as client:
            filled = await _fill(client)
        before = await _sealed_values(url)
        assert len(before) >= 4  # two node tables, the signing key, the view
        assert all(API_KEY not in value and PD_KEY not in value for value in before)

        # Both secrets: everything reads while the values are still under the old one.
        both = make_settings(url, data, secret_key=NEW, previous_secret_keys=OLD)
        async with running_client(both) as client:
            await _reads_everything(client, filled)

        summary = await _rotate(url, sealer(NEW, OLD))
        assert summary == {"resealed": len(before), "current": 0, "unopened": 0}
        after = await _sealed_values(url)
        assert not set(after) & set(before)
        assert await _rotate(url, sealer(NEW, OLD)) == {
            "resealed": 0,
            "current": len(before),
            "unopened": 0,
        }

        # The new secret alone now reads everything; the old one nothing.
        async with running_client(make_settings(url, data, secret_key=NEW)) as client:
            await _reads_everything(client, filled)
        assert all(sealer(OLD).open(value) is None for value in after)
    finally:
        await database_templates.drop(url)


async def test_the_command_reports_values_no_secret_opens(
    database_templates: DatabaseTemplates,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = await database_templates.fresh("sqlite")
    data = tmp_path / "data"
    async with running_client(make_settings(url, data, secret_key="a-lost-secret")) as client:
        await _fill(client)
    async with running_client(make_settings(url, data, secret_key=OLD)) as client:
        await _fill(client)
    lost = await _sealed_values(url)
    env: dict[str, Any] = {
        "TIDEGATE_DATABASE_URL": url,
        "TIDEGATE_DATA_DIR": str(data),
        "TIDEGATE_SECRET_KEY": NEW,
        "TIDEGATE_PREVIOUS_SECRET_KEYS": OLD,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # The command runs its own event loop: off this test's.
    code = await asyncio.to_thread(main, ["secrets", "rotate"])
    out, err = capsys.readouterr()
    assert code == 1
    half = len(lost) // 2
    assert out.strip() == f'{{"resealed": {half}, "current": 0, "unopened": {half}}}'
    assert "open with none of the server secrets" in err
    # The values sealed under the lost secret are left as they were.
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            views = (await connection.execute(text("SELECT channels_sealed FROM views"))).all()
    finally:
        await engine.dispose()
    assert sum(row[0] in lost for row in views) == 1
