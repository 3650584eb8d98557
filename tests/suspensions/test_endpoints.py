"""Ingestion suspensions over HTTP, on SQLite and on PostgreSQL: the two-step suspend,
what ingestion answers and stores while suspended, resume, tenancy."""

from __future__ import annotations

import re
import time
from datetime import timedelta

from tests.conftest import AppClient
from tests.factories import make_account, make_tenant
from tests.ingest.factories import Ingestor, ingest, make_ingestor, stored_lines, usage_rows

from tidegate.db.engine import Database
from tidegate.models.base import utcnow
from tidegate.suspensions import service

BASE = "/v1/config/ingestion"
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


async def suspend(client: AppClient, who: Ingestor) -> dict[str, object]:
    asked = await client.post(f"{BASE}/suspend", headers=who.account.headers)
    assert asked.status_code == 200, asked.text
    assert set(asked.json()) == {"token"}
    token = asked.json()["token"]
    assert UUID4.fullmatch(token)
    confirmed = await client.post(
        f"{BASE}/suspend/confirm", json={"token": token}, headers=who.account.headers
    )
    assert confirmed.status_code == 200, confirmed.text
    body: dict[str, object] = confirmed.json()
    return body


async def test_suspend_confirm_refuses_ingestion_and_resume_restores_it(
    client: AppClient,
) -> None:
    who = await make_ingestor(client)
    status = await client.get(f"{BASE}/status", headers=who.account.headers)
    assert status.status_code == 200
    assert status.json() == {"status": "active", "suspended": False, "suspended_at": None}
    assert (await ingest(client, who, [{"line": "before"}])).status_code == 200

    before = time.time_ns() // 1_000_000
    confirmed = await suspend(client, who)
    assert confirmed["status"] == "suspended"
    assert confirmed["suspended"] is True
    assert isinstance(confirmed["suspended_at"], int)
    assert before - 1000 <= confirmed["suspended_at"] <= time.time_ns() // 1_000_000 + 1000
    status = await client.get(f"{BASE}/status", headers=who.account.headers)
    assert status.json() == confirmed

    usage_before = [
        (row.day, row.lines_stored) for row in await usage_rows(client.database_url, who.account_id)
    ]
    for path in ("/logs/ingest", "/logs/agent"):
        refused = await client.post(
            path,
            params={"hostname": "web-1"},
            json={"lines": [{"line": "while suspended"}]},
            headers=who.headers,
        )
        assert refused.status_code == 403, refused.text
        assert refused.json() == {
            "error": "Ingestion is suspended for this account",
            "code": "Forbidden",
            "status": "error",
        }
    # Every credential form is refused alike, and nothing was stored or counted.
    assert (
        await client.post(
            "/logs/ingest",
            params={"hostname": "h", "apikey": who.key},
            json={"lines": [{"line": "q"}]},
        )
    ).status_code == 403
    assert (
        await client.post(
            "/logs/ingest",
            params={"hostname": "h"},
            json={"lines": [{"line": "b"}]},
            headers=who.basic,
        )
    ).status_code == 403
    assert [line.line for line in await stored_lines(client.database_url, who.account_id)] == [
        "before"
    ]
    usage_after = [
        (row.day, row.lines_stored) for row in await usage_rows(client.database_url, who.account_id)
    ]
    assert usage_after == usage_before

    resumed = await client.post(f"{BASE}/resume", headers=who.account.headers)
    assert resumed.status_code == 200
    assert resumed.json() == {"status": "active", "suspended": False, "suspended_at": None}
    assert (await ingest(client, who, [{"line": "after"}])).status_code == 200
    assert [line.line for line in await stored_lines(client.database_url, who.account_id)] == [
        "before",
        "after",
    ]


async def test_a_token_works_once_and_a_wrong_one_never(client: AppClient) -> None:
    who = await make_ingestor(client)
    headers = who.account.headers
    token = (await client.post(f"{BASE}/suspend", headers=headers)).json()["token"]
    for bad in ({"token": "00000000-0000-4000-8000-000000000000"}, {"token": ""}, {}):
        wrong = await client.post(f"{BASE}/suspend/confirm", json=bad, headers=headers)
        assert wrong.status_code == 400, wrong.text
        assert wrong.json()["code"] == "BadRequest"
    assert (await client.get(f"{BASE}/status", headers=headers)).json()["suspended"] is False

    ok = await client.post(f"{BASE}/suspend/confirm", json={"token": token}, headers=headers)
    assert ok.status_code == 200
    again = await client.post(f"{BASE}/suspend/confirm", json={"token": token}, headers=headers)
    assert again.status_code == 400
    # A newer token replaces an older one.
    await client.post(f"{BASE}/resume", headers=headers)
    first = (await client.post(f"{BASE}/suspend", headers=headers)).json()["token"]
    second = (await client.post(f"{BASE}/suspend", headers=headers)).json()["token"]
    stale = await client.post(f"{BASE}/suspend/confirm", json={"token": first}, headers=headers)
    assert stale.status_code == 400
    # Resume forgets a pending token.
    await client.post(f"{BASE}/resume", headers=headers)
    forgotten = await client.post(
        f"{BASE}/suspend/confirm", json={"token": second}, headers=headers
    )
    assert forgotten.status_code == 400


async def test_an_expired_token_is_refused(client: AppClient) -> None:
    who = await make_ingestor(client)
    db = Database.connect(client.database_url)
    try:
        async with db.write_sessions() as session:
            token = await service.request_suspension(
                session=session,
                account_id=who.account_id,
                now=utcnow() - service.TOKEN_TTL - timedelta(seconds=1),
            )
            await session.commit()
    finally:
        await db.dispose()
    late = await client.post(
        f"{BASE}/suspend/confirm", json={"token": token.token}, headers=who.account.headers
    )
    assert late.status_code == 400
    assert (await ingest(client, who, [{"line": "still on"}])).status_code == 200


async def test_one_account_suspended_leaves_the_others_alone(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    first = await make_ingestor(client)
    other = await make_ingestor(client)
    await suspend(client, first)
    assert (await ingest(client, first, [{"line": "x"}])).status_code == 403
    assert (await ingest(client, other, [{"line": "y"}])).status_code == 200
    assert (await client.get(f"{BASE}/status", headers=other.account.headers)).json()[
        "suspended"
    ] is False
    # A token of one account cannot confirm another's suspension.
    token = (await client.post(f"{BASE}/suspend", headers=first.account.headers)).json()["token"]
    foreign = await client.post(
        f"{BASE}/suspend/confirm", json={"token": token}, headers=other.account.headers
    )
    assert foreign.status_code == 400
    # An enterprise key without delegation is not an account.
    stranger = await make_account(client, tenant)
    assert stranger.account_id
    assert (await client.get(f"{BASE}/status", headers=tenant.headers)).status_code == 403
    assert (await client.get(f"{BASE}/status")).status_code == 401
