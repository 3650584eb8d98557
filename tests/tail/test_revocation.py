"""A live tail stream ends within seconds of its key being deleted or its account
deactivated (issue 7, item 15): the stream re-checks its credential in the database,
so a revocation made through any worker or host reaches it.

No timing is asserted: the old behaviour is a stream that never ends, so each test
waits with a generous bound (30 s) for the stream to end with an ``error`` event.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from tests.conftest import AppClient
from tests.export.helpers import app_state_of
from tests.factories import AccountCtx, make_account, make_tenant
from tests.tail.test_live import _env, tail
from tests.waiting import eventually

GENEROUS_S = 30.0


async def _service_key(client: AppClient, account: AccountCtx) -> tuple[str, str]:
    """A service key made through the keys API: (id, secret)."""
    made = await client.post(
        "/v1/config/keys", params={"type": "service"}, json={}, headers=account.headers
    )
    assert made.status_code in (200, 201), made.text
    return made.json()["id"], made.json()["key"]


def _events(body: str) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    for block in body.split("\n\n"):
        name, data = "message", None
        for raw in block.splitlines():
            if raw.startswith("event: "):
                name = raw.removeprefix("event: ")
            elif raw.startswith("data: "):
                data = json.loads(raw.removeprefix("data: "))
        if data is not None:
            events.append((name, data))
    return events


async def _stream_in_process(
    client: AppClient, account_id: str, headers: dict[str, str]
) -> asyncio.Task[httpx.Response]:
    """Opens a stream over in-process ASGI (which hands back the body only once the
    stream ends) and returns once the stream is subscribed."""
    broker = app_state_of(client).tail
    before = broker.subscriber_count(account_id)
    task = asyncio.create_task(client.get("/v1/tail", headers=headers, timeout=GENEROUS_S))
    await eventually(
        lambda: broker.subscriber_count(account_id) > before or task.done(),
        every=0.01,
        what="the stream subscribed",
    )
    assert not task.done(), task.result().text
    return task


async def _ended(task: asyncio.Task[httpx.Response]) -> list[tuple[str, Any]]:
    try:
        response = await asyncio.wait_for(task, GENEROUS_S)
    except TimeoutError:
        raise AssertionError("the stream was still open after the revocation") from None
    assert response.status_code == 200
    return _events(response.text)


async def test_deleting_the_key_ends_the_stream(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    key_id, secret = await _service_key(client, account)
    headers = {"Authorization": f"Token {secret}"}
    task = await _stream_in_process(client, account.account_id, headers)
    deleted = await client.delete(f"/v1/config/keys/{key_id}", headers=account.headers)
    assert deleted.status_code == 200, deleted.text
    events = await _ended(task)
    assert events[0] == ("ready", {})
    assert events[-1] == ("error", {"error": "The key was deleted"})
    # The deleted key opens nothing new either.
    assert (await client.get("/v1/tail", headers=headers)).status_code == 401


async def test_deactivating_the_account_ends_delegated_and_service_streams(
    client: AppClient,
) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant)
    _key_id, secret = await _service_key(client, account)
    delegated = await _stream_in_process(client, account.account_id, account.headers)
    own = await _stream_in_process(client, account.account_id, {"Authorization": f"Token {secret}"})
    # A stream of another account of the same enterprise is not touched.
    sibling = await make_account(client, tenant)
    untouched = await _stream_in_process(client, sibling.account_id, sibling.headers)

    patched = await client.patch(
        f"/v3/enterprise/account/{account.account_id}",
        json={"status": "deactivated"},
        headers=tenant.headers,
    )
    assert patched.status_code == 200, patched.text
    for task in (delegated, own):
        assert (await _ended(task))[-1] == ("error", {"error": "The account was deactivated"})
    assert not untouched.done()
    untouched.cancel()
    with pytest.raises(asyncio.CancelledError):
        await untouched


async def test_a_live_server_ends_the_stream_when_another_process_deletes_the_key(
    client: AppClient, live_server_factory: Any
) -> None:
    """Real HTTP: the stream is served by a ``tidegate serve`` process; the key is
    deleted through another process (this one's in-process app) sharing the database."""
    server = live_server_factory(env=_env(client, TIDEGATE_TAIL_RECHECK_S="1"))
    account = await make_account(client, await make_tenant(client.database_url))
    key_id, secret = await _service_key(client, account)
    async with tail(server.base_url, {"Authorization": f"Token {secret}"}) as stream:
        deleted = await client.delete(f"/v1/config/keys/{key_id}", headers=account.headers)
        assert deleted.status_code == 200, deleted.text
        await eventually(
            lambda: any(name == "error" for name, _data in stream.events),
            timeout=GENEROUS_S,
            what=lambda: f"the stream's error event, got {stream.events}",
        )
        assert stream.events[-1] == ("error", {"error": "The key was deleted"}), stream.events
