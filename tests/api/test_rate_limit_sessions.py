"""A signed-in person's browser session has a rate budget of its own (docs/web.md,
"Rate limits"): the web app's calls never count against the key's documented 50 a
minute, and a key used by a script is still limited at 50. In memory and in Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import REDIS_URL, AppClient, make_settings
from tests.factories import make_account, make_tenant
from tests.keys.factories import with_service_key
from tests.users.factories import add_person, sign_in, sign_in_person

from tidegate.app import create_app
from tidegate.config import Settings
from tidegate.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter

DOCUMENTED_PER_MINUTE = 50  # the platform's configuration API (spec/public-behaviour.md)


HELD_NS = 10**18  # the limiters' clock, held still: no refill while a test sends


def _held(limiter: RateLimiter) -> RateLimiter:
    """The same limiter with its clock held (the clocks are injected for tests), so a
    budget is exactly its size however slowly the requests go."""
    if isinstance(limiter, MemoryRateLimiter):
        return MemoryRateLimiter(limiter.per_minute, clock=lambda: HELD_NS)
    if isinstance(limiter, RedisRateLimiter):
        return RedisRateLimiter(
            limiter.redis,
            limiter.per_minute,
            prefix=limiter.prefix,
            timeout_s=limiter.timeout_s,
            clock_us=lambda: HELD_NS // 1000,
        )
    return limiter


async def _open(settings: Settings) -> tuple[AppClient, Any]:
    app = create_app(settings)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    state = app.state.tidegate
    state.limiter, state.session_limiter = _held(state.limiter), _held(state.session_limiter)
    http = AppClient(transport=httpx.ASGITransport(app=app), base_url="http://tidegate.test")
    http.database_url, http.settings = settings.database_url, settings
    return http, lifespan


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def limiter_store(request: pytest.FixtureRequest) -> dict[str, object]:
    if request.param == "memory":
        return {}
    return {"redis_url": REDIS_URL}  # with make_settings' generous limiter timeout


@pytest.fixture
async def limited(
    limiter_store: dict[str, object], database_url: str, tmp_path: Path
) -> AsyncIterator[AppClient]:
    """An app with the default limits (Settings' own defaults, not the tests' zero)."""
    defaults = Settings.model_fields
    overrides: dict[str, object] = {
        "rate_limit_per_minute": defaults["rate_limit_per_minute"].default,
        "session_rate_limit_per_minute": defaults["session_rate_limit_per_minute"].default,
        **limiter_store,
    }
    http, lifespan = await _open(make_settings(database_url, tmp_path, **overrides))
    try:
        yield http
    finally:
        http.cookies.clear()
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_a_keys_session_has_its_own_budget_and_the_key_keeps_fifty(
    limited: AppClient,
) -> None:
    assert limited.settings.rate_limit_per_minute == DOCUMENTED_PER_MINUTE
    tenant = await make_tenant(limited.database_url)
    account = await with_service_key(limited, await make_account(limited, tenant))
    assert account.service_key is not None
    browser = await sign_in(limited, {"key": account.service_key})

    # More than the key's budget through the session signed in with that key: a page
    # costs several calls per search.
    for _ in range(DOCUMENTED_PER_MINUTE + 20):
        answer = await limited.get("/v1/config/board", headers=browser.cookies_only)
        assert answer.status_code == 200, answer.text

    # The same key from a script: exactly 50, then the platform's 429.
    script = {"Authorization": f"Token {account.service_key}"}
    statuses = [
        (await limited.get("/v1/config/board", headers=script)).status_code
        for _ in range(DOCUMENTED_PER_MINUTE + 1)
    ]
    assert statuses == [200] * DOCUMENTED_PER_MINUTE + [429]
    refused = await limited.get("/v1/config/board", headers=script)
    assert refused.status_code == 429
    assert refused.json()["code"] == "TooManyRequests"
    assert int(refused.headers["retry-after"]) >= 1

    # The script's exhausted budget does not block the person.
    assert (await limited.get("/v1/config/board", headers=browser.cookies_only)).status_code == 200


async def test_the_session_budget_is_enforced_per_person(
    limiter_store: dict[str, object], database_url: str, tmp_path: Path
) -> None:
    http, lifespan = await _open(
        make_settings(
            database_url,
            tmp_path,
            rate_limit_per_minute=50,
            session_rate_limit_per_minute=5,
            **limiter_store,
        )
    )
    try:
        account = await make_account(http, await make_tenant(database_url))
        one = await add_person(database_url, account_id=account.account_id)
        two = await add_person(database_url, account_id=account.account_id)
        first = await sign_in_person(http, one)
        # A second session of the same person shares the person's budget.
        again = await sign_in_person(http, one)
        other = await sign_in_person(http, two)
        statuses = [
            (await http.get("/v1/config/board", headers=session.cookies_only)).status_code
            for session in (first, again, first, again, first, again)
        ]
        assert statuses == [200] * 5 + [429]
        refused = await http.get("/v1/config/board", headers=first.cookies_only)
        assert int(refused.headers["retry-after"]) >= 1
        assert refused.json()["code"] == "TooManyRequests"
        # Another person has a budget of their own; the account's key keeps its 50.
        assert (await http.get("/v1/config/board", headers=other.cookies_only)).status_code == 200
        assert (await http.get("/v1/config/board", headers=account.headers)).status_code == 200
    finally:
        http.cookies.clear()
        await http.aclose()
        await lifespan.__aexit__(None, None, None)
