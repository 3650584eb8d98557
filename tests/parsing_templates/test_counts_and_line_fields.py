"""Templates count the lines they parse (in memory per worker, added to the database in
batches, summed across workers) and can set the line's own app, host, level and time
from named captures; on both backends, through ingestion, search and export."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.conftest import AppClient, make_settings, running_client
from tests.export.helpers import export_all
from tests.ingest.factories import ingest, make_ingestor, stored_lines
from tests.waiting import eventually

from tidegate.db.engine import Database
from tidegate.logs.template_counts import TemplateCounts

TEMPLATES = "/v1/config/parsing/templates"


async def _template(client: AppClient, headers: dict[str, str], pattern: str) -> dict[str, Any]:
    response = await client.post(
        TEMPLATES, json={"name": "t", "pattern": pattern, "state": "active"}, headers=headers
    )
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


async def _read(client: AppClient, headers: dict[str, str], template_id: str) -> dict[str, Any]:
    response = await client.get(f"{TEMPLATES}/{template_id}", headers=headers)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


async def test_counts_from_several_workers_add_up_when_they_flush(
    client: AppClient, tmp_path: Path
) -> None:
    """Two workers that flush only when they stop (no timer): each line is counted once,
    the latest ingestion time kept, and the template's ``updated_at`` (the rule caches'
    fingerprint) does not move."""
    who = await make_ingestor(client)
    headers = who.account.headers
    first = await _template(client, headers, r"^job=(?P<job>\w+)")
    second = await _template(client, headers, r"^task=(?P<task>\w+)")
    assert (first["matched_lines"], first["last_matched_at"]) == (0, None)
    before = int(time.time() * 1000)
    settings = [
        make_settings(client.database_url, tmp_path / name, template_counts_flush_s=0)
        for name in ("a", "b")
    ]
    async with running_client(settings[0]) as one, running_client(settings[1]) as two:
        lines = [{"line": f"job=j{i}"} for i in range(5)] + [{"line": "task=t1"}]
        assert (await ingest(one, who, lines)).status_code == 200
        assert (await ingest(two, who, [*lines[:3], {"line": "plain"}])).status_code == 200
        assert (await ingest(two, who, [{"line": "job=last"}])).status_code == 200
        # Nothing written yet: counted in memory only.
        assert (await _read(client, headers, first["id"]))["matched_lines"] == 0
    after = int(time.time() * 1000)
    counted = await _read(client, headers, first["id"])
    assert counted["matched_lines"] == 5 + 3 + 1
    assert before <= counted["last_matched_at"] <= after
    assert counted["updated_at"] == first["updated_at"]
    assert (await _read(client, headers, second["id"]))["matched_lines"] == 1
    listed = (await client.get(TEMPLATES, headers=headers)).json()
    assert [item["matched_lines"] for item in listed] == [9, 1]
    assert len(await stored_lines(client.database_url, who.account_id)) == 11

    # A new pattern starts its own count.
    changed = await client.patch(
        f"{TEMPLATES}/{first['id']}", json={"pattern": r"^job=(?P<name>\w+)"}, headers=headers
    )
    assert (changed.json()["matched_lines"], changed.json()["last_matched_at"]) == (0, None)


async def test_a_worker_flushes_on_its_timer_while_it_runs(
    client: AppClient, tmp_path: Path
) -> None:
    who = await make_ingestor(client)
    headers = who.account.headers
    template = await _template(client, headers, r"^k=(?P<k>\d+)")
    settings = make_settings(client.database_url, tmp_path, template_counts_flush_s=0.05)
    async with running_client(settings) as worker:
        for batch in range(3):
            sent = [{"line": f"k={batch}{i}"} for i in range(4)] + [{"line": "no"}]
            assert (await ingest(worker, who, sent)).status_code == 200

        async def counted() -> int | None:
            found = (await _read(client, headers, template["id"]))["matched_lines"]
            return found if found == 12 else None

        assert await eventually(counted, what="the worker's counts in the database") == 12


async def test_counts_kept_when_a_flush_fails_are_written_by_the_next(
    client: AppClient, tmp_path: Path
) -> None:
    who = await make_ingestor(client)
    template = await _template(client, who.account.headers, r"^z=(?P<z>\d+)")
    counts = TemplateCounts(flush_s=0)
    counts.add({template["id"]: 3}, at_ms=1_700_000_000_000)
    counts.add({template["id"]: 2}, at_ms=1_600_000_000_000)  # an earlier batch: kept later
    broken = Database.connect(f"sqlite+aiosqlite:///{tmp_path}/missing/dir/x.sqlite3")
    try:
        assert await counts.flush(broken) == 0  # the database cannot be written
    finally:
        await broken.dispose()
    assert len(counts) == 1
    found = await _read(client, who.account.headers, template["id"])
    assert (found["matched_lines"], found["last_matched_at"]) == (0, None)
    db = Database.connect(client.database_url)
    try:
        assert await counts.flush(db) == 1
    finally:
        await db.dispose()
    found = await _read(client, who.account.headers, template["id"])
    assert (found["matched_lines"], found["last_matched_at"]) == (5, 1_700_000_000_000)


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


async def test_captures_set_the_lines_app_host_level_and_time(client: AppClient) -> None:
    who = await make_ingestor(client)
    headers = who.account.headers
    await _template(
        client,
        headers,
        r"^\[(?P<_ts>[^\]]+)\] %{HOSTNAME:_host} (?P<_app>[\w-]+)\[\d+\] %{LOGLEVEL:level}: "
        r"%{GREEDYDATA:message}",
    )
    now = datetime.now(UTC)
    iso = now.replace(microsecond=123000).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    syslog_time = f"{now:%b} {now.day:2d} {now:%H:%M:%S}"  # "Nov  5", "Nov 28 00:23:46"
    lines = [
        {"line": f"[{iso}] db-7 billing[42] err: card declined", "app": "sent-app"},
        {"line": f"[{syslog_time}] edge-2 cdn[1] WARN: slow origin"},
        {"line": "[not a time] edge-3 cdn[1] info: kept at its own time", "timestamp": 1_700_000},
        {"line": "nothing to see", "app": "sent-app"},
    ]
    assert (await ingest(client, who, lines, hostname="sender-host")).status_code == 200
    rows = {row.line: row for row in await stored_lines(client.database_url, who.account_id)}
    first = rows[lines[0]["line"]]
    assert (first.app, first.host, first.level) == ("billing", "db-7", "ERROR")
    assert first.meta == {"message": "card declined", "level": "err"}  # no _app, _host, _ts
    assert first.ts == _ms(iso.removesuffix("Z"))
    second = rows[lines[1]["line"]]
    assert (second.app, second.host, second.level) == ("cdn", "edge-2", "WARN")
    assert second.ts == _ms(now.replace(microsecond=0).isoformat().split("+")[0])
    third = rows[lines[2]["line"]]
    assert (third.host, third.ts) == ("edge-3", 1_700_000_000)  # the sender's time stays
    plain = rows["nothing to see"]
    assert (plain.app, plain.host) == ("sent-app", "sender-host")

    window = {"from": int(time.time()) - 3600, "to": int(time.time()) + 3600}
    for query, expected in (
        ("app:billing", [lines[0]["line"]]),
        ("host:edge-2", [lines[1]["line"]]),
        ("level:error message:card", [lines[0]["line"]]),
    ):
        found, _ = await export_all(client, headers, query=query, **window)
        assert [item["_line"] for item in found] == expected, query
    found, _ = await export_all(client, headers, apps="billing", **window)
    assert [(item["_app"], item["_host"], item["_ts"]) for item in found] == [
        ("billing", "db-7", _ms(iso.removesuffix("Z")))
    ]


async def test_the_preview_shows_what_a_template_would_set(client: AppClient) -> None:
    who = await make_ingestor(client)
    response = await client.post(
        f"{TEMPLATES}/preview",
        json={
            "pattern": r"^%{TIMESTAMP_ISO8601:_ts} %{NOTSPACE:_host} %{WORD:_app} %{GREEDYDATA:msg}",
            "lines": ["2025-11-22 08:00:01.250 web-9 shop paid", "other"],
        },
        headers=who.account.headers,
    )
    assert response.status_code == 200, response.text
    found = response.json()
    assert found["fields"] == ["_ts", "_host", "_app", "msg"]
    assert found["lines"][0]["fields"] == {"msg": "paid"}
    assert found["lines"][0]["sets"] == {
        "app": "shop",
        "host": "web-9",
        "ts": _ms("2025-11-22T08:00:01.250"),
    }
    assert found["lines"][1]["sets"] is None
