"""The log store's two tiers (docs/log-store.md, "Segments"): the same queries give the
same answers with the lines in the row store, in segments, and split across both;
export paging stays exactly-once while the compactor moves lines; an account's reads
never open another account's segments."""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update
from tests.aggregate.helpers import HOUR_MS, HOUR_START, expected
from tests.conftest import AppClient
from tests.export.helpers import insert_lines, now_ms
from tests.factories import AccountCtx, make_account, make_tenant
from tests.waiting import eventually

from tidegate.db.engine import Database
from tidegate.ingest.retention import run_retention, sweep
from tidegate.logs.compactor import CompactorConfig, SegmentRunner, compact_round, release
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.segments import AccountSegments, SegmentError, account_segments
from tidegate.logs.store import NewLine
from tidegate.models import LogLine, LogSegment, SegmentLease

DAY_MS = 86_400_000
WORDS = ["error", "err", "warning", "disk", "full", "quarantined", "unquarantined", "peer"]
HOSTS = ["web-1", "WEB-2", "db-1", "straße"]
APPS = ["web", "webhooks", "api", None]
LEVELS = ["error", "ERROR", "warn", "info", None]
QUERIES = [
    None,
    "quarantined",
    "level:error app:web",
    "meta.error.code:ECONNRESET",
    '"connection reset by peer"',
    "err",
    "-level:error",
    "host:web*",
    "app:[web,api] OR disk",
    "status:>=500",
    "STRASSE",
    "host:straße",
    "_account:*",
]


def generated_lines(count: int, seed: int) -> list[NewLine]:
    rng = random.Random(seed)
    lines = []
    for index in range(count):
        words = rng.sample(WORDS, 3)
        text = " ".join(words)
        if rng.random() < 0.2:
            text += " connection reset by peer"
        meta: dict[str, Any] | None = None
        if rng.random() < 0.7:
            meta = {"status": rng.choice([200, 404, 500, 503, "500"]), "n": index}
            if rng.random() < 0.3:
                meta["error"] = {"code": rng.choice(["ECONNRESET", "ETIMEDOUT"])}
        lines.append(
            NewLine(
                line=text,
                # Many lines share a millisecond: the (ts, id) order must hold across tiers.
                ts=HOUR_START + rng.randrange(0, HOUR_MS, 50_000),
                host=rng.choice(HOSTS),
                app=rng.choice(APPS),
                level=rng.choice(LEVELS),
                file=rng.choice(["/var/log/a.log", None]),
                tags=rng.choice([["blue"], None]),
                meta=meta,
            )
        )
    return lines


def config(root: Path, *, after_ms: int, window_ms: int, max_lines: int) -> CompactorConfig:
    # Row groups of 7 lines: reads with a literal go through the segment index, which
    # leaves some of them out.
    return CompactorConfig(
        root=root,
        after_ms=after_ms,
        window_ms=window_ms,
        max_lines=max_lines,
        lease_ms=60_000,
        row_group_lines=7,
    )


async def compact(url: str, cfg: CompactorConfig) -> int:
    """Rounds until nothing is left to move; the segments written."""
    db = Database.connect(url)
    owner = uuid.uuid4().hex
    written = 0
    try:
        while True:
            result = await compact_round(db, cfg, owner=owner)
            assert result.claimed
            written += result.segments
            if result.segments == 0:
                await release(db, owner=owner)
                return written
    finally:
        await db.dispose()


async def tier_counts(url: str, account_id: str) -> tuple[int, int]:
    """(lines in the row store, lines in segments) of the account."""
    db = Database.connect(url)
    try:
        async with db.read_sessions() as session:
            hot = (
                await session.execute(select(func.count()).where(LogLine.account_id == account_id))
            ).scalar_one()
            cold = (
                await session.execute(
                    select(func.coalesce(func.sum(LogSegment.lines), 0)).where(
                        LogSegment.account_id == account_id
                    )
                )
            ).scalar_one()
            return int(hot), int(cold)
    finally:
        await db.dispose()


async def walk(client: AppClient, account: AccountCtx, **params: Any) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {"from": HOUR_START, "to": HOUR_START + HOUR_MS - 1, **params}
        if cursor is not None:
            query["pagination_id"] = cursor
        response = await client.get(
            "/v2/export",
            params={k: v for k, v in query.items() if v is not None},
            headers=account.headers,
        )
        assert response.status_code == 200, response.text
        body = response.json()
        lines.extend(body["lines"])
        cursor = body["pagination_id"]
        if cursor is None:
            return lines


def matching_ids(
    stored: Sequence[tuple[int, NewLine]], account_id: str, query: str | None
) -> list[int]:
    line_filter = parse_line_filter(
        hosts=None, apps=None, levels=None, query=query, account_id=account_id
    )
    return [
        line_id
        for line_id, line in stored
        if line_filter.matches(
            line=line.line,
            host=line.host,
            app=line.app,
            level=line.level,
            file=line.file,
            meta=line.meta,
            tags=line.tags,
        )
    ]


async def store(url: str, account_id: str, lines: list[NewLine], received_ms: int) -> None:
    await insert_lines(url, account_id, lines, received_ms=received_ms)


async def stored_ids(url: str, account_id: str) -> list[tuple[int, str]]:
    db = Database.connect(url)
    try:
        async with db.read_sessions() as session:
            rows = await session.execute(
                select(LogLine.id, LogLine.line)
                .where(LogLine.account_id == account_id)
                .order_by(LogLine.id)
            )
            return [(int(a), str(b)) for a, b in rows]
    finally:
        await db.dispose()


async def answers(client: AppClient, account: AccountCtx) -> dict[str, Any]:
    """Every query's export walks (both orders, small pages) and aggregation."""
    found: dict[str, Any] = {}
    for query in QUERIES:
        head = await walk(client, account, query=query, prefer="head", size=61)
        tail = await walk(client, account, query=query, prefer="tail", size=97)
        response = await client.get(
            "/v1/aggregate",
            params={
                k: v
                for k, v in {
                    "from": HOUR_START,
                    "to": HOUR_START + HOUR_MS - 1,
                    "query": query,
                    "top": 5,
                }.items()
                if v is not None
            },
            headers=account.headers,
        )
        assert response.status_code == 200, response.text
        v1 = await client.get(
            "/v1/export",
            params={
                k: v
                for k, v in {
                    "from": HOUR_START,
                    "to": HOUR_START + HOUR_MS - 1,
                    "q": query,
                    "prefer": "tail",
                    "size": 100,
                    "json": "true",
                }.items()
                if v is not None
            },
            headers=account.headers,
        )
        assert v1.status_code == 200, v1.text
        found[str(query)] = {
            "v1": [line["_id"] for line in v1.json()],
            "head": [line["_id"] for line in head],
            "tail": [line["_id"] for line in tail],
            "records": sorted(head, key=lambda line: line["_id"]),
            "aggregate": response.json(),
        }
    return found


async def test_the_same_answers_from_either_tier_and_both(isolated_client: AppClient) -> None:
    client = isolated_client
    url = client.database_url
    account = await make_account(client, await make_tenant(url))
    # 13 queries, each walked in pages both ways in three states: 300 lines make each
    # walk several pages (600 cost the suite a minute and a half of CPU for no more cases).
    lines = generated_lines(300, seed=19)
    now = now_ms()
    # Half received ten days ago (old enough), half two hours ago (not yet).
    await store(url, account.account_id, lines[:150], now - 10 * DAY_MS)
    await store(url, account.account_id, lines[150:], now - 2 * 3_600_000)
    ids = await stored_ids(url, account.account_id)
    assert [text for _, text in ids] == [line.line for line in lines]
    by_id = [(line_id, line) for (line_id, _), line in zip(ids, lines, strict=True)]

    hot = await answers(client, account)
    # The expected answers, from the matcher (the definition of a query).
    for query in QUERIES:
        want = matching_ids(by_id, account.account_id, query)
        ts_of = {line_id: line.ts for line_id, line in by_id}
        order = sorted(want, key=lambda line_id: (ts_of[line_id], line_id))
        assert [int(i) for i in hot[str(query)]["head"]] == order, query
        assert [int(i) for i in hot[str(query)]["tail"]] == order[::-1], query
        aggregation = hot[str(query)]["aggregate"]
        assert aggregation["exact"] is True
        want_aggregate = expected(
            lines,
            from_ms=HOUR_START,
            to_ms=HOUR_START + HOUR_MS - 1,
            top=5,
            line_filter=parse_line_filter(
                hosts=None, apps=None, levels=None, query=query, account_id=account.account_id
            ),
        )
        assert aggregation["histogram"] == want_aggregate["histogram"], query
        assert aggregation["top"] == want_aggregate["top"], query

    root = client.settings.segment_directory
    # Split: the old half into segments (several per window), the rest stays.
    moved = await compact(url, config(root, after_ms=DAY_MS, window_ms=3_600_000, max_lines=29))
    assert moved >= 5
    assert await tier_counts(url, account.account_id) == (150, 150)
    assert await answers(client, account) == hot

    # All of them in segments.
    await compact(url, config(root, after_ms=0, window_ms=3_600_000, max_lines=1_000))
    assert await tier_counts(url, account.account_id) == (0, 300)
    assert await answers(client, account) == hot


async def test_a_message_sent_with_unicode_escapes_is_found_in_either_tier(
    isolated_client: AppClient,
) -> None:
    """``café`` finds ``{"message":"caf\\u00e9 opened"}`` (the message is searched as it
    reads, docs/line-parsing.md), and ``CAF\\u00C9`` as .NET escapes it. A segment
    searches the line's text, which holds the escapes, not the meta: its filter looks
    for any escape where the term has a character beyond ASCII."""
    client = isolated_client
    url = client.database_url
    account = await make_account(client, await make_tenant(url))
    sent = [
        ('{"message":"caf\\u00e9 opened"}', {"message": "café opened"}),
        ('{"message":"CAF\\u00C9 CLOSED"}', {"message": "CAFÉ CLOSED"}),
        ('{"message":"cafe plain"}', {"message": "cafe plain"}),
        ("café crème", None),
        ('{"message":"\\ud83d\\ude00 smile"}', {"message": "\U0001f600 smile"}),
    ]
    lines = [
        NewLine(line=text, ts=HOUR_START + index, host="h", meta=meta)
        for index, (text, meta) in enumerate(sent)
    ]
    await store(url, account.account_id, lines, now_ms() - 10 * DAY_MS)
    queries = {"café": [0, 1, 3], '"café opened"': [0], "\U0001f600": [4], "cafe": [2]}

    async def found() -> dict[str, list[str]]:
        return {
            query: sorted(line["_line"] for line in await walk(client, account, query=query))
            for query in queries
        }

    want = {query: sorted(sent[i][0] for i in indexes) for query, indexes in queries.items()}
    assert await found() == want
    await compact(
        url,
        config(client.settings.segment_directory, after_ms=0, window_ms=DAY_MS, max_lines=100),
    )
    assert await tier_counts(url, account.account_id) == (0, len(sent))
    assert await found() == want


async def test_paging_is_exactly_once_while_lines_move(isolated_client: AppClient) -> None:
    client = isolated_client
    url = client.database_url
    account = await make_account(client, await make_tenant(url))
    lines = generated_lines(400, seed=7)
    await store(url, account.account_id, lines, now_ms() - 10 * DAY_MS)
    ids = await stored_ids(url, account.account_id)
    by_id = [(line_id, line) for (line_id, _), line in zip(ids, lines, strict=True)]
    root = client.settings.segment_directory
    one_at_a_time = config(root, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=23)
    db = Database.connect(url)
    try:
        for query, prefer in ((None, "head"), ("err", "tail"), ("level:error", "head")):
            want = {str(line_id) for line_id in matching_ids(by_id, account.account_id, query)}
            seen: list[str] = []
            cursor = None
            while True:
                params = {
                    "from": HOUR_START,
                    "to": HOUR_START + HOUR_MS - 1,
                    "size": 17,
                    "prefer": prefer,
                    "query": query,
                    "pagination_id": cursor,
                }
                response = await client.get(
                    "/v2/export",
                    params={k: v for k, v in params.items() if v is not None},
                    headers=account.headers,
                )
                assert response.status_code == 200, response.text
                body = response.json()
                seen.extend(line["_id"] for line in body["lines"])
                cursor = body["pagination_id"]
                # Between pages, the compactor moves one segment's worth of lines.
                assert (await compact_round(db, one_at_a_time, owner="pager", limit=1)).claimed
                if cursor is None:
                    break
            assert len(seen) == len(set(seen)), query
            assert set(seen) == want, query
        # The store was moved while paged: every line is in exactly one tier.
        hot, cold = await tier_counts(url, account.account_id)
        assert hot + cold == 400
        assert cold > 0
    finally:
        await db.dispose()


async def test_an_account_never_opens_another_accounts_segments(
    isolated_client: AppClient,
) -> None:
    client = isolated_client
    url = client.database_url
    tenant = await make_tenant(url)
    first = await make_account(client, tenant)
    second = await make_account(client, tenant)
    old = now_ms() - 10 * DAY_MS
    await store(url, first.account_id, generated_lines(120, seed=1), old)
    await store(url, second.account_id, generated_lines(80, seed=2), old)
    root = client.settings.segment_directory
    await compact(url, config(root, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=50))
    assert await tier_counts(url, first.account_id) == (0, 120)
    assert await tier_counts(url, second.account_id) == (0, 80)
    for account, count in ((first, 120), (second, 80)):
        lines = await walk(client, account, prefer="head")
        assert len(lines) == count
        response = await client.get(
            "/v1/aggregate",
            params={"from": HOUR_START, "to": HOUR_START + HOUR_MS - 1},
            headers=account.headers,
        )
        assert response.json()["total"] == count
    # A registry row of the second account naming the first's file is refused, never read.
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            path = (
                (
                    await session.execute(
                        select(LogSegment.path).where(LogSegment.account_id == first.account_id)
                    )
                )
                .scalars()
                .first()
            )
            victim = (
                (
                    await session.execute(
                        select(LogSegment.id).where(LogSegment.account_id == second.account_id)
                    )
                )
                .scalars()
                .first()
            )
            await session.execute(
                update(LogSegment)
                .where(LogSegment.id == victim)
                .values(path=f"{second.account_id}/../{path}")
            )
            await session.commit()
        async with db.read_sessions() as session:
            rows = (await session.execute(account_segments(account_id=second.account_id))).all()
        segments = AccountSegments.of(root, second.account_id, rows)
        with pytest.raises(SegmentError):
            segments.files(from_ms=0, to_ms=2**62, max_id=2**62)
    finally:
        await db.dispose()


def window_around(edge: int) -> int:
    """A window length (1-1.5 days) putting ``edge`` in the middle half of its window:
    lines an hour either side of it land in one segment, whatever the time of day."""
    for width in range(DAY_MS, DAY_MS * 3 // 2, 60_000):
        if width // 4 < edge % width < width * 3 // 4:
            return width
    raise AssertionError("no window fits")


async def segment_paths(url: str, account_id: str) -> list[str]:
    db = Database.connect(url)
    try:
        async with db.read_sessions() as session:
            rows = await session.execute(
                select(LogSegment.path)
                .where(LogSegment.account_id == account_id)
                .order_by(LogSegment.id)
            )
            return [str(path) for path in rows.scalars()]
    finally:
        await db.dispose()


async def test_retention_drops_whole_segments_and_reads_leave_out_lines_past_it(
    isolated_client: AppClient,
) -> None:
    client = isolated_client
    url = client.database_url
    account = await make_account(client, await make_tenant(url), retention=3)
    now = now_ms()
    edge = now - 3 * DAY_MS
    lines = generated_lines(110, seed=3)
    await store(url, account.account_id, lines[:50], now - 10 * DAY_MS)  # wholly past
    await store(url, account.account_id, lines[50:80], edge - 3_600_000)  # past, straddling
    await store(url, account.account_id, lines[80:], edge + 3_600_000)  # kept, straddling
    ids = await stored_ids(url, account.account_id)
    kept = [line_id for line_id, _ in ids[80:]]
    root = client.settings.segment_directory
    await compact(url, config(root, after_ms=0, window_ms=window_around(edge), max_lines=1_000))
    assert await tier_counts(url, account.account_id) == (0, 110)
    old, straddling = await segment_paths(url, account.account_id)

    async def visible() -> tuple[list[int], int, int]:
        head = await walk(client, account, prefer="head", size=13)
        tail = await walk(client, account, prefer="tail", size=13)
        assert [line["_id"] for line in tail] == [line["_id"] for line in head][::-1]
        aggregation = await client.get(
            "/v1/aggregate",
            params={"from": HOUR_START, "to": HOUR_START + HOUR_MS - 1, "top": 3},
            headers=account.headers,
        )
        assert aggregation.status_code == 200, aggregation.text
        v1 = await client.get(
            "/v1/export",
            params={"from": HOUR_START, "to": HOUR_START + HOUR_MS - 1, "json": "true"},
            headers=account.headers,
        )
        assert v1.status_code == 200, v1.text
        return (
            sorted(int(line["_id"]) for line in head),
            aggregation.json()["total"],
            len(v1.json()),
        )

    # Before any sweep: no read returns a line past retention (filtered at read time).
    assert await visible() == (kept, 30, 30)

    # The retention job: the wholly past segment goes (row, then file), the straddling
    # one stays.
    db = Database.connect(url)
    db.segment_dir = root
    swept = asyncio.Event()
    calls = 0

    def clock() -> int:
        nonlocal calls
        calls += 1
        if calls > 1:
            swept.set()
        return now

    job = asyncio.create_task(run_retention(db=db, interval_s=0.01, clock=clock, first_delay_s=0))
    try:
        await asyncio.wait_for(swept.wait(), 120)
    finally:
        job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job
    try:
        assert await segment_paths(url, account.account_id) == [straddling]
        assert not (root / old).exists()
        assert (root / straddling).exists()
        assert await visible() == (kept, 30, 30)

        # Once its youngest line is past retention, the straddling segment goes too. A
        # sweep without the directory stands for a crash between the commit and the
        # file's removal: the compactor's next round removes the file no row names.
        db.segment_dir = None
        # (An hour's grace after its youngest line, edge + 1 h, passed retention.)
        assert await sweep(db=db, now_ms=now + 2 * 3_600_000, account_ids=[account.account_id]) == 0
        assert await segment_paths(url, account.account_id) == [straddling]
        later = now + 2 * 3_600_000 + 1
        assert await sweep(db=db, now_ms=later, account_ids=[account.account_id]) == 60
        assert await segment_paths(url, account.account_id) == []
        assert (root / straddling).exists()
        result = await compact_round(
            db, config(root, after_ms=0, window_ms=DAY_MS, max_lines=9), owner="x"
        )
        assert result.orphans_removed == 1
        assert not (root / straddling).exists()
        await release(db, owner="x")
    finally:
        await db.dispose()


async def lease_owner(db: Database) -> str | None:
    async with db.read_sessions() as session:
        owner = await session.scalar(select(SegmentLease.lease_owner))
        return None if owner is None else str(owner)


async def test_a_stopping_worker_gives_the_lease_to_the_next(isolated_client: AppClient) -> None:
    client = isolated_client
    db = Database.connect(client.database_url)
    first, second = SegmentRunner(db, client.settings), SegmentRunner(db, client.settings)
    try:
        first.start()
        await eventually(lambda: first.rounds >= 1, what="the first runner's round")
        second.start()
        await eventually(lambda: second.rounds >= 1, what="the second runner's round")
        assert await lease_owner(db) == first.owner
        # The second's rounds find the lease held (for three ticks, a minute at least).
        assert not (await compact_round(db, second.config, owner=second.owner)).claimed
        await first.close()
        assert await lease_owner(db) is None
        # Its next round takes over at once.
        assert (await compact_round(db, second.config, owner=second.owner)).claimed
        assert await lease_owner(db) == second.owner
    finally:
        await first.close()
        await second.close()
        await db.dispose()


async def test_a_lines_context_is_the_same_from_either_tier(isolated_client: AppClient) -> None:
    client = isolated_client
    url = client.database_url
    account = await make_account(client, await make_tenant(url))
    lines = [
        NewLine(
            line=f"line {index}",
            # Interleaved in time across the two halves, some sharing a millisecond.
            ts=HOUR_START + (index % 30) * 1_000 + index // 30,
            host=("web-1", "db-1")[index % 2],
            app=("web", None)[index % 3 == 0],
        )
        for index in range(60)
    ]
    now = now_ms()
    await store(url, account.account_id, lines[:30], now - 10 * DAY_MS)
    await store(url, account.account_id, lines[30:], now - 2 * 3_600_000)
    ids = [line_id for line_id, _ in await stored_ids(url, account.account_id)]
    anchors = [ids[0], ids[7], ids[29], ids[31], ids[59]]

    async def contexts() -> list[Any]:
        found = []
        for line_id in anchors:
            for around in ("source", "host", "account"):
                response = await client.get(
                    "/v1/export/context",
                    params={"line": line_id, "before": 3, "after": 3, "around": around},
                    headers=account.headers,
                )
                assert response.status_code == 200, response.text
                found.append(response.json())
        return found

    hot = await contexts()
    assert (hot[3]["more_before"], hot[3]["more_after"]) == (True, True)  # ids[7], source
    root = client.settings.segment_directory
    await compact(url, config(root, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=11))
    assert await tier_counts(url, account.account_id) == (30, 30)
    assert await contexts() == hot
    await compact(url, config(root, after_ms=0, window_ms=3_600_000, max_lines=1_000))
    assert await tier_counts(url, account.account_id) == (0, 60)
    assert await contexts() == hot


async def test_a_capped_aggregation_opens_no_segment_older_than_its_count(
    isolated_client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the row store's cap an aggregation counts from ``counted_from`` on (newest
    first): segments wholly older than that count nothing and are not opened. They were
    (every segment of the request's range scanned with a ``ts`` bound excluding all its
    rows): at 20M lines the common word's aggregation answered 422 for the row store's
    count alone (docs/log-store.md, "Scaling with what is stored"). Their files removed
    here: opening one fails."""
    monkeypatch.setattr("tidegate.aggregate.service.MAX_CANDIDATES", 3)
    client = isolated_client
    url = client.database_url
    account = await make_account(client, await make_tenant(url))
    await store(url, account.account_id, generated_lines(40, seed=5), now_ms() - 10 * DAY_MS)
    root = client.settings.segment_directory
    await compact(url, config(root, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=20))
    assert await tier_counts(url, account.account_id) == (0, 40)
    recent = [
        NewLine(line=f"disk full {index}", ts=HOUR_START + 2 * HOUR_MS + index * 1_000, host="h")
        for index in range(6)
    ]
    await store(url, account.account_id, recent, now_ms())
    for path in await segment_paths(url, account.account_id):
        (root / path).unlink()
    response = await client.get(
        "/v1/aggregate",
        params={"from": HOUR_START, "to": HOUR_START + 3 * HOUR_MS, "query": "disk"},
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["total"] == 3  # the 3 newest, past the cap of 3 candidates
    assert body["exact"] is False
