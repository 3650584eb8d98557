"""Templates at ingestion, on both backends: only active templates apply, in order, the
first that matches; lines that none matches fall through to the built-in parsing; a
template applies to lines ingested after it became active, never to lines stored
before; every worker sees a change on its next batch; the pipeline's log store
destination applies them too; captured fields are found with ``field:value``."""

from __future__ import annotations

import time
from typing import Any

from tests.conftest import AppClient, make_settings, running_client
from tests.export.helpers import export_all
from tests.gateway.factories import new_account, wire
from tests.ingest.factories import Ingestor, ingest, make_ingestor, stored_lines

TEMPLATES = "/v1/config/parsing/templates"
REQUEST = r"^%{WORD:method} %{URIPATH:path} took %{INT:duration_ms:int}ms status=%{INT:status:int}"


def _window() -> dict[str, int]:
    now = int(time.time())
    return {"from": now - 3600, "to": now + 3600}


async def _template(
    client: AppClient, headers: dict[str, str], pattern: str, **fields: Any
) -> dict[str, Any]:
    response = await client.post(
        TEMPLATES, json={"name": "t", "pattern": pattern, **fields}, headers=headers
    )
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


async def _metas(client: AppClient, who: Ingestor) -> dict[str, tuple[str | None, Any]]:
    rows = await stored_lines(client.database_url, who.account_id)
    return {row.line: (row.level, row.meta) for row in rows}


async def test_only_active_templates_apply_and_only_to_later_lines(client: AppClient) -> None:
    who = await make_ingestor(client)
    headers = who.account.headers
    draft = await _template(client, headers, REQUEST)
    inactive = await _template(client, headers, r"user=(?P<user>\w+)", state="inactive")
    before = "GET /a took 5ms status=503"
    assert (
        await ingest(client, who, [{"line": before}, {"line": "x user=bob"}])
    ).status_code == 200
    stored = await _metas(client, who)
    assert stored[before] == (None, None)  # a draft does nothing
    assert stored["x user=bob"] == (None, None)  # nor an inactive one

    response = await client.post(f"{TEMPLATES}/{draft['id']}/activate", headers=headers)
    assert response.status_code == 200, response.text
    after = "POST /b/c took 12ms status=502"
    assert (await ingest(client, who, [{"line": after}])).status_code == 200
    stored = await _metas(client, who)
    assert stored[after] == (
        None,
        {"method": "POST", "path": "/b/c", "duration_ms": 12, "_status": 502},
    )
    assert stored[before] == (None, None)  # not retroactive
    window = _window()
    for query in ("status:502", "status:>=500", "method:POST", "duration_ms:>10", "path:/b/c"):
        found, _ = await export_all(client, headers, query=query, **window)
        assert [item["_line"] for item in found] == [after], query
    # Made inactive again: later lines are plain again; the stored ones keep their fields.
    await client.patch(f"{TEMPLATES}/{draft['id']}", json={"state": "inactive"}, headers=headers)
    await client.patch(f"{TEMPLATES}/{inactive['id']}", json={"state": "active"}, headers=headers)
    later = "PUT /d took 1ms status=500"
    assert (await ingest(client, who, [{"line": later}, {"line": "y user=ann"}])).status_code == 200
    stored = await _metas(client, who)
    assert stored[later] == (None, None)
    assert stored["y user=ann"] == (None, {"user": "ann"})
    assert stored[after][1] is not None


async def test_the_first_active_match_wins_and_the_rest_fall_through(client: AppClient) -> None:
    who = await make_ingestor(client)
    headers = who.account.headers
    broad = await _template(client, headers, r"^(?P<word>\w+) ", state="active")
    narrow = await _template(
        client, headers, r"^%{LOGLEVEL:level} code=%{INT:code:int}", state="active"
    )
    lines = [
        {"line": "err code=7 failed"},
        {"line": '{"status":503,"level":"warn"}'},  # no template matches: JSON as ever
        {"line": "2025-11-22 08:00:01 ERROR plain"},  # plain text: level word only
    ]
    assert (await ingest(client, who, lines)).status_code == 200
    stored = await _metas(client, who)
    assert stored["err code=7 failed"] == (None, {"word": "err"})  # the first in order
    assert stored['{"status":503,"level":"warn"}'] == ("warn", {"_status": 503, "level": "warn"})
    assert stored["2025-11-22 08:00:01 ERROR plain"] == ("ERROR", None)

    order = await client.put(
        f"{TEMPLATES}/order", json={"ids": [narrow["id"], broad["id"]]}, headers=headers
    )
    assert order.status_code == 200, order.text
    again = "crit code=9 failed again"
    sent = [{"line": again, "level": "INFO"}]  # a template's level field overrides
    assert (await ingest(client, who, sent)).status_code == 200
    stored = await _metas(client, who)
    assert stored[again] == ("CRITICAL", {"level": "crit", "code": 9})
    found, _ = await export_all(client, headers, query="code:9 level:critical", **_window())
    assert [item["_line"] for item in found] == [again]
    # Deleting the template: the next lines fall back to the other one.
    await client.delete(f"{TEMPLATES}/{narrow['id']}", headers=headers)
    assert (await ingest(client, who, [{"line": "warn code=1 x"}])).status_code == 200
    assert (await _metas(client, who))["warn code=1 x"] == (None, {"word": "warn"})


async def test_a_second_worker_sees_a_change_on_its_next_batch(
    client: AppClient, tmp_path: Any
) -> None:
    who = await make_ingestor(client)
    headers = who.account.headers
    async with running_client(make_settings(client.database_url, tmp_path)) as other:
        # The other worker has the account's (empty) rules cached first.
        assert (await ingest(other, who, [{"line": "k=1 first"}])).status_code == 200
        template = await _template(client, headers, r"k=(?P<k>\d+)", state="active")
        assert (await ingest(other, who, [{"line": "k=2 second"}])).status_code == 200
        await client.patch(
            f"{TEMPLATES}/{template['id']}", json={"pattern": r"k=(?P<kay>\d+)"}, headers=headers
        )
        assert (await ingest(other, who, [{"line": "k=3 third"}])).status_code == 200
        await client.delete(f"{TEMPLATES}/{template['id']}", headers=headers)
        assert (await ingest(other, who, [{"line": "k=4 fourth"}])).status_code == 200
    stored = await _metas(client, who)
    assert stored["k=1 first"][1] is None
    assert stored["k=2 second"][1] == {"k": "2"}
    assert stored["k=3 third"][1] == {"kay": "3"}
    assert stored["k=4 fourth"][1] is None


async def test_the_pipeline_log_store_destination_applies_templates(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    await _template(client, account.headers, REQUEST, state="active")
    wired = await wire(client, account, [("store", "destination", "mezmo", {}, ["source"])])
    response = await client.post(
        wired.url, json=[{"line": "GET /x took 3ms status=404"}], headers=wired.auth
    )
    assert response.status_code == 200, response.text
    rows = await stored_lines(client.database_url, account.account_id)
    assert [row.meta for row in rows] == [
        {"method": "GET", "path": "/x", "duration_ms": 3, "_status": 404}
    ]
    found, _ = await export_all(client, account.headers, query="status:404", **_window())
    assert [item["_line"] for item in found] == ["GET /x took 3ms status=404"]


async def test_a_pathological_pattern_and_line_are_linear(client: AppClient) -> None:
    """``(a+)+$`` backtracks exponentially in Python's ``re``; on RE2 it is one pass."""
    who = await make_ingestor(client)
    await _template(client, who.account.headers, r"(?P<run>(a+)+)$", state="active")
    text = "a" * 30_000 + "!"
    assert (await ingest(client, who, [{"line": text}, {"line": "aaa"}])).status_code == 200
    stored = await _metas(client, who)
    assert stored[text] == (None, None)
    assert stored["aaa"] == (None, {"run": "aaa"})
