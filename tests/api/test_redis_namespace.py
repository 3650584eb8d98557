"""One Redis namespace: every key and pub/sub channel the server names starts with its
``TIDEGATE_REDIS_PREFIX`` (docs/decisions.md, "One Redis namespace"), so deployments
and test suites sharing a Redis server never meet. Pub/sub channels are global across
Redis's numbered databases, so a database number alone would not keep them apart."""

from __future__ import annotations

import base64
import time
import uuid
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis
from sqlalchemy import select
from tests.conftest import REDIS_URL, AppClient, make_settings
from tests.factories import insert_key, make_account, make_tenant
from tests.users.factories import add_person
from tests.waiting import eventually

from tidegate.app import create_app
from tidegate.app_state import AppState
from tidegate.auth.signed_query import signature, signed_text
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.logs.filtering import LineFilter
from tidegate.models import ApiKey


def _names(raw: list[bytes]) -> list[str]:
    return [name.decode() for name in raw]


async def _service_key_id(database_url: str, account_id: str) -> str:
    db = Database.connect(database_url)
    try:
        async with db.read_sessions() as session:
            found = await session.execute(
                select(ApiKey.id).where(ApiKey.account_id == account_id, ApiKey.kind == "service")
            )
            return str(found.scalar_one())
    finally:
        await db.dispose()


@pytest.mark.parametrize("bad", ["", " ", "tide gate:", "tidegate:\n", "tide{gate}:", "{x}", "a}"])
def test_a_prefix_that_cannot_start_every_name_fails_start(bad: str) -> None:
    with pytest.raises(ValueError, match="redis_prefix"):
        Settings(redis_prefix=bad)


def test_the_default_prefix_keeps_the_names_of_before() -> None:
    assert Settings().redis_prefix == "tidegate:"


@pytest.mark.redis
async def test_every_redis_name_the_server_uses_starts_with_its_prefix(
    database_url: str, tmp_path: Path
) -> None:
    prefix = f"t{uuid.uuid4().hex}:"
    settings = make_settings(
        database_url,
        tmp_path,
        redis_url=REDIS_URL,
        redis_prefix=prefix,
        # Each credential below is used once or twice: a slow limit keeps its key alive
        # (for about a minute) until the names are listed.
        rate_limit_per_minute=2,
        signin_max_failures=50,
    )
    app = create_app(settings)
    probe = Redis.from_url(REDIS_URL)
    try:
        async with (
            app.router.lifespan_context(app),
            AppClient(
                transport=httpx.ASGITransport(app=app), base_url="http://tidegate.test"
            ) as http,
        ):
            http.database_url = settings.database_url
            http.settings = settings
            state: AppState = app.state.tidegate
            account = await make_account(http, await make_tenant(database_url))
            account_id = account.account_id

            # Rate limit: a request with a service key.
            service_key = await insert_key(database_url, kind="service", account_id=account_id)
            limited = await http.get(
                "/v1/config/board", headers={"Authorization": f"Token {service_key}"}
            )
            assert limited.status_code == 200, limited.text
            key_id = await _service_key_id(database_url, account_id)

            person = await add_person(database_url, account_id=account_id)

            # A signed query (logdna-cli): its hmac is remembered against replays.
            basic = base64.b64encode(f"{person.email}:{person.password}".encode()).decode()
            login = await http.post(
                "/login",
                content=b"{}",
                headers={"content-type": "application/json", "authorization": f"Basic {basic}"},
            )
            assert login.status_code == 200, login.text
            ts = str(int(time.time() * 1000))
            hmac_hex = signature(
                login.json()["token"], signed_text(email=person.email, account_id=account_id, ts=ts)
            )
            info = await http.get(
                "/info",
                params={"email": person.email, "id": account_id, "ts": ts, "hmac": hmac_hex},
            )
            assert info.status_code == 200, info.text

            # Sign-in failures: a wrong password, counted per e-mail and per address (a
            # success forgets the e-mail's count, so this comes after the sign-in above).
            wrong = await http.post(
                "/v1/auth/session", json={"email": person.email, "password": "not it at all"}
            )
            assert wrong.status_code == 401
            http.cookies.clear()

            # Live tail: a subscriber on the account's channel, a line through it.
            ingestion_key = await insert_key(database_url, kind="ingestion", account_id=account_id)
            async with state.tail.subscribe(account_id, LineFilter()) as subscription:
                ingested = await http.post(
                    "/logs/ingest",
                    params={"hostname": "web-1"},
                    json={"lines": [{"line": "through the namespace"}]},
                    headers={"apikey": ingestion_key},
                )
                assert ingested.status_code == 200, ingested.text
                batch = await subscription.next_batch(timeout=30)
                assert [line.line for line in batch.lines] == ["through the namespace"]
                channels = _names(await probe.pubsub_channels())

            # Demo logs: the worker takes the leader lease on its first tick.
            leader = prefix + "demo-logs:leader"
            await eventually(lambda: probe.exists(leader), what="the demo-logs leader lease")
            keys = _names(await probe.keys("*"))
    finally:
        await probe.aclose()

    expected_keys = {
        f"{prefix}rl:{key_id}",
        f"{prefix}signin:email:{person.email.lower()}",
        f"{prefix}signin:address:127.0.0.1",
        f"{prefix}signed:{hmac_hex}",
        leader,
    }
    assert expected_keys <= set(keys), sorted(expected_keys - set(keys))
    expected_channels = {
        f"{prefix}tail:{account_id}",
        f"{prefix}tail:_control",
        f"{prefix}tap:control",
    }
    assert expected_channels <= set(channels), sorted(expected_channels - set(channels))
    # Nothing of this test's outside its namespace (other suites may share the server,
    # so only the names carrying this test's ids are looked at).
    ours = (account_id, key_id, person.email.lower(), hmac_hex)
    strays = [
        name
        for name in keys + channels
        if any(mark in name for mark in ours) and not name.startswith(prefix)
    ]
    assert strays == []
