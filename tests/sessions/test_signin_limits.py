"""Sign-in limits that cannot be turned into a lock-out and fail safe (issue 21,
findings 3 and 4; docs/isolation.md, "Sign-in limits"): failures count per (e-mail,
client address), so ten wrong passwords from one address do not stop the right one
from another; past a threshold across addresses each attempt waits a back-off (429 with
Retry-After); X-Forwarded-For counts only from a configured trusted proxy; with Redis
configured but unreachable the counts fall back to the process (never to none); with
several workers and no Redis the counts and signed-query signatures are shared through
the database."""

from __future__ import annotations

import base64
import logging
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError
from tests.cli_auth.test_logdna_cli import signed_query
from tests.conftest import AppClient, make_settings, open_client
from tests.factories import make_account, make_tenant
from tests.hand_clock import HandClock
from tests.users.factories import Person, add_person
from tests.waiting import eventually

SIGN_IN = "/v1/auth/session"
WRONG = "wrong password"


@asynccontextmanager
async def _app(database_url: str, data_dir: Any, **overrides: Any) -> AsyncIterator[AppClient]:
    http, lifespan = await open_client(make_settings(database_url, data_dir, **overrides))
    try:
        yield http
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


def hold_clock(http: AppClient) -> HandClock:
    """Stop the app's sign-in clock (a failure's time, a delay's end) at now: a delay
    then lasts until the test moves the clock, however slow the machine is."""
    clock = HandClock()
    http._transport.app.state.tidegate.signin_failures.clock = clock  # type: ignore[attr-defined]
    return clock


def _from(http: AppClient, address: str) -> httpx.AsyncClient:
    """A client of the same app whose TCP peer is ``address``."""
    app = http._transport.app  # type: ignore[attr-defined]
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://tidegate.test")


async def _person(http: AppClient) -> Person:
    account = await make_account(http, await make_tenant(http.database_url))
    return await add_person(http.database_url, account_id=account.account_id)


async def _try(
    client: httpx.AsyncClient, person: Person, password: str, **headers: str
) -> httpx.Response:
    response = await client.post(
        SIGN_IN, json={"email": person.email, "password": password}, headers=headers
    )
    client.cookies.clear()
    return response


async def test_wrong_passwords_from_one_address_do_not_lock_out_another(
    database_url: str, tmp_path: Any
) -> None:
    async with _app(database_url, tmp_path) as http:
        person = await _person(http)
        limit = http.settings.signin_max_failures
        async with _from(http, "198.51.100.7") as stranger, _from(http, "203.0.113.9") as own:
            for _ in range(limit):
                assert (await _try(stranger, person, WRONG)).status_code == 401
            refused = await _try(stranger, person, person.password)
            assert refused.status_code == 429
            assert int(refused.headers["retry-after"]) > 0
            assert (await _try(own, person, person.password)).status_code == 200


async def test_failures_across_addresses_back_off_with_retry_after(
    database_url: str, tmp_path: Any
) -> None:
    async with _app(database_url, tmp_path, signin_backoff_after=3) as http:
        hold_clock(http)
        person = await _person(http)
        for index in range(3):
            async with _from(http, f"198.51.100.{index + 1}") as guesser:
                assert (await _try(guesser, person, WRONG)).status_code == 401
        async with _from(http, "203.0.113.9") as own:
            waited = await _try(own, person, person.password)
        assert waited.status_code == 429
        assert waited.headers["retry-after"] == "1"  # 2**0 s after the last failure


async def test_failures_from_one_address_back_off_rather_than_lock_everyone_there_out(
    database_url: str, tmp_path: Any
) -> None:
    """Spraying wrong passwords over many e-mails from one address slows that address
    down; it does not lock out for the whole window everyone who shares it (a NAT, a
    proxy not named in TIDEGATE_TRUSTED_PROXIES)."""
    async with _app(database_url, tmp_path, signin_address_max_failures=3) as http:
        clock = hold_clock(http)
        sprayed = [await _person(http) for _ in range(3)]
        bystander = await _person(http)
        async with _from(http, "198.51.100.7") as shared:
            for person in sprayed:
                assert (await _try(shared, person, WRONG)).status_code == 401
            waited = await _try(shared, bystander, bystander.password)
            assert waited.status_code == 429
            wait_s = int(waited.headers["retry-after"])
            assert wait_s <= http.settings.signin_backoff_max_s
            clock.move(wait_s - 0.001)
            assert (await _try(shared, bystander, bystander.password)).status_code == 429
            clock.move(0.001)
            assert (await _try(shared, bystander, bystander.password)).status_code == 200


async def test_forwarded_for_counts_only_from_a_trusted_proxy(
    database_url: str, tmp_path: Any
) -> None:
    async with _app(database_url, tmp_path) as http:
        person = await _person(http)
        limit = http.settings.signin_max_failures
        async with _from(http, "198.51.100.7") as forger:
            for index in range(limit):
                forged = {"X-Forwarded-For": f"192.0.2.{index}"}
                assert (await _try(forger, person, WRONG, **forged)).status_code == 401
            # Each forged header was ignored: all the failures counted for the peer.
            fresh = {"X-Forwarded-For": "192.0.2.200"}
            assert (await _try(forger, person, person.password, **fresh)).status_code == 429
    async with _app(database_url, tmp_path, trusted_proxies="10.0.0.0/8") as http:
        person = await _person(http)
        limit = http.settings.signin_max_failures
        async with _from(http, "10.1.2.3") as proxy:
            for _ in range(limit):
                # A client left of the proxy's entry cannot choose its own address.
                hops = {"X-Forwarded-For": "192.0.2.1, 198.51.100.7"}
                assert (await _try(proxy, person, WRONG, **hops)).status_code == 401
            blocked = {"X-Forwarded-For": "192.0.2.99, 198.51.100.7"}
            assert (await _try(proxy, person, person.password, **blocked)).status_code == 429
            other = {"X-Forwarded-For": "203.0.113.9"}
            assert (await _try(proxy, person, person.password, **other)).status_code == 200


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound by the test and not listening: connections to it are refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]


async def test_unreachable_redis_falls_back_to_counting_in_the_process(
    database_url: str, tmp_path: Any, closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    redis_url = f"redis://127.0.0.1:{closed_port}/0"
    async with _app(database_url, tmp_path, redis_url=redis_url) as http:
        person = await _person(http)
        limit = http.settings.signin_max_failures
        with caplog.at_level(logging.WARNING, logger="tidegate.auth.signin_limit"):
            for _ in range(limit):
                assert (await _try(http, person, WRONG)).status_code == 401
            assert (await _try(http, person, person.password)).status_code == 429
        warnings = [r.getMessage() for r in caplog.records if r.name.endswith("signin_limit")]
        assert len(warnings) == 1
        assert "counted in this process" in warnings[0]


@pytest.fixture
def own_redis(tmp_path: Any) -> Iterator[subprocess.Popen[bytes]]:
    """A Redis server of this test's own (the shared one must stay up for the others),
    on a free port, with nothing saved; killed at the end if the test has not."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
    )
    server.port = port  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        server.kill()
        server.wait()


async def test_redis_killed_during_sign_ins_keeps_the_failures_this_process_counted(
    database_url: str, tmp_path: Any, own_redis: subprocess.Popen[bytes]
) -> None:
    """Redis answers while a guesser fails, then dies: the pair it refused stays refused
    (the process keeps its own count beside Redis), and guessing goes on counted."""
    redis_url = f"redis://127.0.0.1:{own_redis.port}/0"  # type: ignore[attr-defined]
    probe = Redis.from_url(redis_url)
    try:
        await eventually(_answers(probe), what="the test's Redis answering")
        async with _app(database_url, tmp_path, redis_url=redis_url) as http:
            person = await _person(http)
            limit = http.settings.signin_max_failures
            for _ in range(limit):
                assert (await _try(http, person, WRONG)).status_code == 401
            assert await probe.keys("*signin:pair:*"), "the failures were counted in Redis"
            assert (await _try(http, person, person.password)).status_code == 429
            own_redis.kill()
            own_redis.wait()
            assert (await _try(http, person, person.password)).status_code == 429
            for _ in range(limit):
                assert (await _try(http, person, WRONG)).status_code == 429
    finally:
        await probe.aclose()


def _answers(redis: Redis) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        try:
            return bool(await redis.ping())
        except (RedisError, OSError):
            return False

    return check


async def test_two_workers_without_redis_share_the_limits_and_the_signatures(
    database_url: str, tmp_path: Any
) -> None:
    """Two app instances on one database, as two workers of ``tidegate serve --workers
    2`` without Redis: a failure counted by one refuses at the other, and a signed query
    used at one is a replay at the other."""
    async with (
        _app(database_url, tmp_path / "one", workers=2) as one,
        _app(database_url, tmp_path / "two", workers=2) as two,
    ):
        person = await _person(one)
        limit = one.settings.signin_max_failures
        for index in range(limit):
            worker = one if index % 2 == 0 else two
            assert (await _try(worker, person, WRONG)).status_code == 401
        for worker in (one, two):
            assert (await _try(worker, person, person.password)).status_code == 429

        other = await _person(one)
        basic = base64.b64encode(f"{other.email}:{other.password}".encode()).decode()
        login = await two.post("/login", content=b"{}", headers={"Authorization": f"Basic {basic}"})
        assert login.status_code == 200, login.text
        account_id, token = login.json()["accounts"][0], login.json()["token"]
        query = signed_query(other.email, account_id, token, int(time.time() * 1000))
        assert (await one.get("/info", params=query)).status_code == 200
        replayed = await two.get("/info", params=query)
        assert replayed.status_code == 401, replayed.text
