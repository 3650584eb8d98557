"""Queries of the data plane (queries only).

The credential lookup runs on every ingest request, so it is one prebuilt Core
statement run through ``Database.fetch`` (the raw driver, no ORM session): the key, its
account's status, and the fingerprint of the account's exclusion rules and parsing
templates (the count and latest ``updated_at`` of each), in a single round trip. The fingerprint of a writer that starts
from an account (the pipeline's log store) is read the same way (``logs.repository``),
so both give the driver's values and compare equal in the rule cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy import bindparam, delete, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery
from tidegate.logs import search_index
from tidegate.logs.repository import changes_of
from tidegate.logs.store import partition_day
from tidegate.models import Account, ApiKey, ExclusionRule, LogLine, ParsingTemplate

_keys = ApiKey.__table__
_accounts = Account.__table__
_rules = ExclusionRule.__table__
_templates = ParsingTemplate.__table__
_lines = LogLine.__table__


class IngestionKey(NamedTuple):
    kind: str
    account_id: str | None
    account_status: str | None
    rule_count: int
    rules_updated: object
    template_count: int
    templates_updated: object
    suspended: bool  # the account's ingestion is suspended (tidegate.suspensions)
    syslog_enabled: bool  # the account's ``enable_syslog`` (tidegate.syslog)


_KEY_BY_HASH = RawQuery(
    select(
        _keys.c.kind,
        _keys.c.account_id,
        _accounts.c.status,
        *changes_of(_rules, _keys.c.account_id),
        *changes_of(_templates, _keys.c.account_id),
        _accounts.c.ingestion_suspended_at.is_not(None),
        _accounts.c.enable_syslog,
    )
    .select_from(_keys.outerjoin(_accounts, _accounts.c.id == _keys.c.account_id))
    .where(_keys.c.key_hash == bindparam("key_hash"))
)


async def ingestion_key(*, db: Database, key_hash: str) -> IngestionKey | None:
    rows = await db.fetch(_KEY_BY_HASH, {"key_hash": key_hash})
    if not rows:
        return None
    kind, account_id, status, rules, rules_at, templates, templates_at, suspended, syslog = rows[0]
    return IngestionKey(
        kind,
        account_id,
        status,
        int(rules),
        rules_at,
        int(templates),
        templates_at,
        bool(suspended),
        bool(syslog),
    )


async def retention_policies(
    *, session: AsyncSession, account_ids: Sequence[str] | None = None
) -> list[tuple[str, int]]:
    """``(account_id, retention days)`` of every account with a retention limit."""
    query = select(Account.id, Account.retention).where(Account.retention > 0)
    if account_ids is not None:
        query = query.where(Account.id.in_(account_ids))
    result = await session.execute(query)
    return [(str(row[0]), int(row[1])) for row in result]


async def delete_received_before(
    *, session: AsyncSession, account_id: str, before_ms: int, batch: int
) -> int:
    """Delete those of the account's ``batch`` oldest lines (by id) that were received
    before ``before_ms``; how many went.

    Ids grow in the order lines are stored, so the oldest lines by id are the oldest
    received: each batch reads ``batch`` rows through the (account_id, id) index, never
    the whole account, and a caller stops at the first batch that is not all old. A
    concurrent sweep deleting the same rows only finds fewer. On SQLite the lines'
    entries in the search index go in the same transaction.
    """
    window = (
        select(_lines.c.id, _lines.c.received_ms)
        .where(_lines.c.account_id == account_id)
        .order_by(_lines.c.id)
        .limit(batch)
        .subquery()
    )
    doomed = select(window.c.id).where(window.c.received_ms < before_ms)
    return await search_index.delete_lines(session, delete(LogLine).where(LogLine.id.in_(doomed)))


_PARTITIONS = text(
    "SELECT child.relname FROM pg_inherits JOIN pg_class child ON child.oid = pg_inherits.inhrelid "
    "WHERE pg_inherits.inhparent = 'log_lines'::regclass"
)
# The distinct accounts of a partition, one index probe each (a loose index scan).
_PARTITION_ACCOUNTS = """
WITH RECURSIVE found(account_id) AS (
    (SELECT account_id FROM "{name}" ORDER BY account_id LIMIT 1)
    UNION ALL
    SELECT (SELECT account_id FROM "{name}" WHERE account_id > found.account_id
            ORDER BY account_id LIMIT 1)
    FROM found WHERE found.account_id IS NOT NULL
)
SELECT found.account_id, accounts.retention FROM found
LEFT JOIN accounts ON accounts.id = found.account_id
WHERE found.account_id IS NOT NULL
"""


async def partitions(*, session: AsyncSession) -> dict[int, str]:
    """PostgreSQL: the partitions of ``log_lines`` by day (days since the epoch)."""
    found = {}
    for (name,) in (await session.execute(_PARTITIONS)).all():
        day = partition_day(name)
        if day is not None:
            found[day] = name
    return found


async def partition_retentions(*, session: AsyncSession, name: str) -> list[int | None]:
    """The retention (days; 0 keeps forever, None for a deleted account) of every account
    with lines in the partition ``name``."""
    rows = await session.execute(text(_PARTITION_ACCOUNTS.format(name=name)))
    return [row[1] for row in rows.all()]


async def drop_partition(*, session: AsyncSession, name: str) -> int:
    """PostgreSQL: drop the partition ``name``; how many lines it held. Dropping locks
    the parent table: a short lock timeout gives up (for the next sweep) rather than
    queueing every reader behind a long export."""
    await session.execute(text("SET LOCAL lock_timeout = '2s'"))
    count = int((await session.execute(text(f'SELECT count(*) FROM "{name}"'))).scalar_one())
    await session.execute(text(f'DROP TABLE "{name}"'))
    return count
