"""Exclusion rules apply to lines a pipeline stores, exactly as to /logs/ingest."""

from __future__ import annotations

from sqlalchemy import select
from tests.conftest import AppClient
from tests.gateway.factories import new_account, stored_lines, wire

from tidegate.db.engine import Database
from tidegate.models import AccountUsage

LOG = [("store", "destination", "log_analysis", {}, ["source"])]


async def test_excluded_events_are_not_stored_and_are_counted(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    rule = {"title": "noise", "apps": ["noisy*"], "active": True, "indexonly": False}
    created = await client.post(
        "/v1/config/ingestion/exclusions", json=rule, headers=account.headers
    )
    assert created.status_code == 200, created.text
    events = [
        {"line": "keep me", "app": "web"},
        {"line": "drop me", "app": "noisy-worker"},
        {"line": "keep me too", "app": "api"},
    ]
    response = await client.post(wired.url, json=events, headers=wired.auth)
    assert response.status_code == 200, response.text
    assert [line.line for line in await stored_lines(client.database_url, account.account_id)] == [
        "keep me",
        "keep me too",
    ]
    db = Database.connect(client.database_url)
    try:
        async with db.read_sessions() as session:
            usage = (
                await session.execute(
                    select(AccountUsage).where(AccountUsage.account_id == account.account_id)
                )
            ).scalar_one()
    finally:
        await db.dispose()
    assert (usage.lines_stored, usage.lines_excluded) == (2, 1)

    # A rule change applies to the next request.
    rule_id = created.json()["id"]
    off = await client.patch(
        f"/v1/config/ingestion/exclusions/{rule_id}",
        json={"active": False},
        headers=account.headers,
    )
    assert off.status_code == 200
    await client.post(
        wired.url, json=[{"line": "now kept", "app": "noisy-worker"}], headers=wired.auth
    )
    assert (await stored_lines(client.database_url, account.account_id))[-1].line == "now kept"
