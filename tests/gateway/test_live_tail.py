"""Lines the log_analysis destination stores reach live tail once committed."""

from __future__ import annotations

import httpx
from tests.conftest import AppClient
from tests.gateway.factories import new_account, wire
from tests.gateway.test_body_forms import LOG

from tidegate.logs.filtering import LineFilter


async def test_stored_lines_reach_live_tail(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    broker = transport.app.state.tidegate.tail  # type: ignore[attr-defined]
    async with broker.subscribe(account.account_id, LineFilter()) as subscription:
        response = await client.post(
            wired.url, json=[{"line": "live one", "host": "h1"}], headers=wired.auth
        )
        assert response.status_code == 200
        batch = await subscription.next_batch(timeout=30)
    assert [(line.line, line.host) for line in batch.lines] == [("live one", "h1")]
