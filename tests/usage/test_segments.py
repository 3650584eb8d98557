"""Usage by app, host and tag counts the lines the compactor moved into segments
(docs/log-store.md, "Usage from segments"): every breakdown (v1 shares, v2 bytes, per
name, a scoped member's) is the same with the lines all in the row store, split across
both tiers and all in segments, on SQLite and PostgreSQL; a segment written before
segments kept ``size_bytes`` is read with the size of its stored lines."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, insert_lines, now_ms
from tests.factories import AccountCtx, make_account, make_tenant
from tests.logs.test_segments import DAY_MS, compact, config, segment_paths, tier_counts
from tests.users.factories import person_in_group

from tidegate.logs.store import NewLine

HOUR_MS = 3_600_000
# Spellings of one host or app across the tiers: a group is named by its smallest.
HOSTS = ["web-1", "WEB-1", "db-1", "straße", "STRASSE", "cache"]
APPS = ["api", "API", "web", "worker", None]
TAGS = [None, ["blue"], ["red", "prod"], ["prod"], ["ünïcode", "blue"], ["red", "red"]]
TEXTS = ["GET /health 200", "connection reset by peer", "naïve café ☕", "x"]
KINDS = ("apps", "hosts", "tags")
# Lines an hour either side of BASE_MS (one UTC day: 2025-11-22, 07:26 to 09:26).
FROM_MS = BASE_MS - HOUR_MS
TO_MS = BASE_MS + HOUR_MS
DAY = datetime.fromtimestamp(BASE_MS / 1000, tz=UTC).date().isoformat()
NAMES = {
    "apps": ["API", "worker", "nope"],
    "hosts": ["Strasse", "web-1"],
    "tags": ["red", "ünïcode"],
}


def generated(count: int, seed: int, *, sized: bool) -> list[NewLine]:
    """Lines of known sizes: ``sized``, sizes unlike their text's (what the sender sent,
    which a segment must keep); else the store's own (the text's UTF-8 length)."""
    rng = random.Random(seed)
    return [
        NewLine(
            line=rng.choice(TEXTS),
            ts=FROM_MS + rng.randrange(0, 2 * HOUR_MS, 1_000),
            host=rng.choice(HOSTS),
            app=rng.choice(APPS),
            tags=rng.choice(TAGS),
            **({"size_bytes": rng.randrange(1, 5_000)} if sized else {}),
        )
        for _ in range(count)
    ]


async def _get(client: AppClient, headers: dict[str, str], path: str, **params: Any) -> Any:
    response = await client.get(path, params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def breakdowns(client: AppClient, headers: dict[str, str]) -> dict[str, Any]:
    """Every usage breakdown by app, host and tag: v1 shares (whole range, a part of it
    that cuts through segments, the top two), v2 bytes (the day, the top two), and
    single names."""
    whole = {"from": FROM_MS, "to": TO_MS}
    part = {"from": BASE_MS - HOUR_MS // 3, "to": BASE_MS + HOUR_MS // 2}
    day = {"from": DAY, "to": DAY}
    found: dict[str, Any] = {}
    for kind in KINDS:
        found[f"v1 {kind}"] = await _get(client, headers, f"/v1/usage/{kind}", **whole)
        found[f"v1 {kind} part"] = await _get(client, headers, f"/v1/usage/{kind}", **part)
        found[f"v1 {kind} top 2"] = await _get(
            client, headers, f"/v1/usage/{kind}", limit=2, **whole
        )
        found[f"v2 {kind}"] = await _get(client, headers, f"/v2/usage/{kind}", **day)
        found[f"v2 {kind} top 2"] = await _get(client, headers, f"/v2/usage/{kind}", limit=2, **day)
        for name in NAMES[kind]:
            found[f"v1 {kind}/{name}"] = await _get(
                client, headers, f"/v1/usage/{kind}/{name}", **part
            )
            found[f"v2 {kind}/{name}"] = await _get(
                client, headers, f"/v2/usage/{kind}/{name}", **day
            )
    return found


def expected(lines: Sequence[NewLine], kind: str, *, by_bytes: bool) -> list[tuple[str, int, int]]:
    """(name, lines, bytes) of each app, host or tag over the whole range, most first:
    the definition the answers are held to."""
    groups: dict[str, tuple[str, int, int]] = {}
    for line in lines:
        if kind == "tags":
            names = [(tag, tag) for tag in line.tags or ()]
        else:
            value = line.app if kind == "apps" else line.host
            names = [] if value is None else [(value.casefold(), value)]
        for key, name in names:
            label, count, size = groups.get(key, (name, 0, 0))
            groups[key] = (min(label, name), count + 1, size + line.size_bytes)
    return sorted(groups.values(), key=lambda item: (-item[2 if by_bytes else 1], item[0]))


async def _seed(client: AppClient, lines: list[NewLine]) -> AccountCtx:
    """Half the lines received ten days ago (old enough to move), half two hours ago."""
    url = client.database_url
    account = await make_account(client, await make_tenant(url))
    now = now_ms()
    half = len(lines) // 2
    await insert_lines(url, account.account_id, lines[:half], received_ms=now - 10 * DAY_MS)
    await insert_lines(url, account.account_id, lines[half:], received_ms=now - 2 * HOUR_MS)
    return account


async def test_usage_counts_the_lines_in_segments(isolated_client: AppClient) -> None:
    client = isolated_client
    url = client.database_url
    lines = generated(240, seed=19, sized=True)
    account = await _seed(client, lines)
    scoped = (
        await person_in_group(
            client,
            account_id=account.account_id,
            headers=account.headers,
            group={"name": "api", "apps": ["api"]},
        )
    ).headers

    hot = await breakdowns(client, account.headers)
    hot_scoped = await breakdowns(client, scoped)
    # The row store's answers are the right ones.
    for kind in KINDS:
        want = expected(lines, kind, by_bytes=False)
        total = len(lines)
        assert [(row["name"], row["lines"]) for row in hot[f"v1 {kind}"]] == [
            (name, count) for name, count, _ in want
        ], kind
        assert [row["percentage"] for row in hot[f"v1 {kind}"]] == [
            round(100.0 * count / total, 4) for _, count, _ in want
        ], kind
        assert hot[f"v2 {kind}"]["results"] == [
            {"name": name, "total_bytes": size}
            for name, _, size in expected(lines, kind, by_bytes=True)
        ], kind
    api = [line for line in lines if line.app is not None and line.app.casefold() == "api"]
    assert sum(row["lines"] for row in hot_scoped["v1 apps"]) == len(api)

    root = client.settings.segment_directory
    # Split: the old half into segments of at most 29 lines (several per window).
    moved = await compact(url, config(root, after_ms=DAY_MS, window_ms=HOUR_MS, max_lines=29))
    assert moved >= 4
    assert await tier_counts(url, account.account_id) == (120, 120)
    assert await breakdowns(client, account.headers) == hot
    assert await breakdowns(client, scoped) == hot_scoped

    # All of them in segments.
    await compact(url, config(root, after_ms=0, window_ms=HOUR_MS, max_lines=1_000))
    assert await tier_counts(url, account.account_id) == (0, 240)
    assert await breakdowns(client, account.headers) == hot
    assert await breakdowns(client, scoped) == hot_scoped
    for path in await segment_files(url, root, account.account_id):
        assert "size_bytes" in pq.read_schema(path).names


async def segment_files(url: str, root: Path, account_id: str) -> list[Path]:
    return [root / path for path in await segment_paths(url, account_id)]


async def test_segments_written_without_size_bytes_count_their_lines_size(
    isolated_client: AppClient,
) -> None:
    client = isolated_client
    url = client.database_url
    # The store's own sizes (every line stored before segments kept them), non-ASCII
    # text among them: a size is the text's UTF-8 bytes, not its characters.
    lines = generated(160, seed=5, sized=False)
    assert any(line.size_bytes != len(line.line) for line in lines)
    account = await _seed(client, lines)
    hot = await breakdowns(client, account.headers)

    root = client.settings.segment_directory
    await compact(url, config(root, after_ms=0, window_ms=HOUR_MS, max_lines=23))
    assert await tier_counts(url, account.account_id) == (0, 160)
    files = await segment_files(url, root, account.account_id)
    assert len(files) >= 4
    # Every other segment as written before the column was added: one read sees both.
    for path in files[::2]:
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["size_bytes"]), path, compression="zstd")
        assert "size_bytes" not in pq.read_schema(path).names
    assert await breakdowns(client, account.headers) == hot
    # Every one of them.
    for path in files[1::2]:
        pq.write_table(pq.read_table(path).drop_columns(["size_bytes"]), path)
    assert await breakdowns(client, account.headers) == hot
