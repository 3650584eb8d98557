"""The log store on both backends: lines and usage move together."""

from __future__ import annotations

from sqlalchemy import func, select
from tests.conftest import AppClient
from tests.factories import make_account, make_tenant

from tidegate.db.engine import Database
from tidegate.logs.store import NewLine, store_lines, utc_day
from tidegate.models import AccountUsage, LogLine


async def test_lines_and_usage_are_stored_together(client: AppClient) -> None:
    account = await make_account(client, await make_tenant(client.database_url))
    db = Database.connect(client.database_url)
    now = 1_763_800_000_000
    try:
        async with db.write_sessions() as session:
            await store_lines(
                session=session,
                account_id=account.account_id,
                lines=[
                    NewLine(line="héllo", ts=now, host="h1", app="a"),
                    NewLine(line="two", ts=now, host="h1"),
                ],
                received_ms=now,
                excluded_lines=3,
                excluded_bytes=30,
            )
            await store_lines(
                session=session,
                account_id=account.account_id,
                lines=[NewLine(line="x", ts=now, host="h")],
                received_ms=now,
            )
            await session.commit()
        async with db.read_sessions() as session:
            count = (
                await session.execute(
                    select(func.count()).where(LogLine.account_id == account.account_id)
                )
            ).scalar_one()
            usage = (
                await session.execute(
                    select(AccountUsage).where(AccountUsage.account_id == account.account_id)
                )
            ).scalar_one()
    finally:
        await db.dispose()
    assert count == 3
    assert usage.day == utc_day(now)
    assert (usage.lines_stored, usage.bytes_stored) == (3, len("héllo".encode()) + 3 + 1)
    assert (usage.lines_excluded, usage.bytes_excluded) == (3, 30)


async def test_repaired_lines_are_counted_as_fallbacks(client: AppClient) -> None:
    """Issue 7: usage shows how many lines needed a fallback (stored or excluded)."""
    account = await make_account(client, await make_tenant(client.database_url))
    db = Database.connect(client.database_url)
    now = 1_763_800_000_000
    try:
        async with db.write_sessions() as session:
            await store_lines(
                session=session,
                account_id=account.account_id,
                lines=[
                    NewLine(line="fixed", ts=now, host="h", repaired=True),
                    NewLine(line="fine", ts=now, host="h"),
                ],
                received_ms=now,
                excluded_lines=2,
                excluded_bytes=2,
                excluded_repaired=1,
            )
            await store_lines(
                session=session,
                account_id=account.account_id,
                lines=[NewLine(line="again", ts=now, host="h", repaired=True)],
                received_ms=now,
            )
            await session.commit()
        async with db.read_sessions() as session:
            usage = (
                await session.execute(
                    select(AccountUsage).where(AccountUsage.account_id == account.account_id)
                )
            ).scalar_one()
    finally:
        await db.dispose()
    assert (usage.lines_stored, usage.lines_excluded, usage.lines_fallback) == (3, 2, 3)
