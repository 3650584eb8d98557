"""The parsing corpus through ingestion, then read back, on both backends: export shows
each line's parsed fields and level and finds it by them; aggregate counts the top
values of parsed fields; exclusion rules see parsed fields; the pipeline's log store
destination parses alike; an alert's view matches them in stored lines."""

from __future__ import annotations

import time

from sqlalchemy import select
from tests.alerts.specs import presence_view
from tests.conftest import AppClient
from tests.export.helpers import export_all
from tests.gateway.factories import new_account, wire
from tests.ingest.factories import add_rule, ingest, make_ingestor, stored_lines
from tests.logs.parsing_corpus import CORPUS

from tidegate.alerts import cursor as alert_cursor
from tidegate.alerts.matching import evaluate_batch
from tidegate.db.engine import Database
from tidegate.logs.filtering import parse_line_filter
from tidegate.models import LogLine


def _window() -> dict[str, int]:
    now = int(time.time())
    return {"from": now - 3600, "to": now + 3600}


async def test_the_corpus_is_stored_parsed_and_found_by_its_fields(client: AppClient) -> None:
    who = await make_ingestor(client)
    response = await ingest(client, who, [{"line": case.line} for case in CORPUS])
    assert response.status_code == 200, response.text
    window = _window()
    lines, _ = await export_all(client, who.account.headers, **window)
    by_text = {record["_line"]: record for record in lines}
    assert len(by_text) == len(CORPUS)
    for case in CORPUS:
        record = by_text[case.line]  # the text is stored as it was sent
        meta = record.get("_meta")
        if case.fields is None:
            assert meta is None, case.name
        else:
            assert {name: meta.get(name) for name in case.fields} == case.fields, case.name
        assert record.get("level") == case.level, case.name
        for query in case.finds:
            found, _ = await export_all(client, who.account.headers, query=query, **window)
            assert case.line in {item["_line"] for item in found}, (case.name, query)
    # A query finds only the lines that carry the field.
    found, _ = await export_all(client, who.account.headers, query="status:503", **window)
    assert sorted(item["_line"] for item in found) == sorted(
        case.line for case in CORPUS if case.name in ("json", "logfmt")
    )


async def test_aggregate_counts_top_values_of_parsed_fields(client: AppClient) -> None:
    who = await make_ingestor(client)
    sent = [
        {"line": '{"status":503,"user":{"id":42},"level":"error"}'},
        {"line": '{"status":503,"user":{"id":7}}'},
        {"line": "ts=1 status=200 msg=ok"},
        {"line": '1.2.3.4 - - [22/Nov/2025:08:00:01 +0000] "GET / HTTP/1.1" 503 1'},
        {"line": "plain text"},
    ]
    assert (await ingest(client, who, sent)).status_code == 200
    now = int(time.time() * 1000)
    params = {"from": now - 3_600_000, "to": now + 3_600_000, "fields": "status,user.id,response"}
    response = await client.get("/v1/aggregate", params=params, headers=who.account.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["total"] == 5
    assert body["top"]["fields"] == {
        "status": [{"value": "503", "count": 2}, {"value": "200", "count": 1}],
        "user.id": [{"value": "42", "count": 1}, {"value": "7", "count": 1}],
        "response": [{"value": "503", "count": 1}],
    }
    assert body["top"]["level"] == [{"value": "error", "count": 1}]
    # With a query, the same counts over the lines it selects.
    params["query"] = "status:503"
    response = await client.get("/v1/aggregate", params=params, headers=who.account.headers)
    assert response.json()["top"]["fields"]["user.id"] == [
        {"value": "42", "count": 1},
        {"value": "7", "count": 1},
    ]


async def test_aggregate_refuses_bad_field_lists(client: AppClient) -> None:
    who = await make_ingestor(client)
    now = int(time.time() * 1000)
    for fields in ("a,b,c,d,e,f", "file", "x" * 300):
        response = await client.get(
            "/v1/aggregate",
            params={"from": now - 1000, "to": now, "fields": fields},
            headers=who.account.headers,
        )
        assert response.status_code == 400, fields
        assert response.json()["error"].startswith("fields:")


async def test_exclusion_rules_see_parsed_fields(client: AppClient) -> None:
    who = await make_ingestor(client)
    await add_rule(client, who, query="status:>=500")
    sent = ['{"status":503}', "status=500 msg=down", '{"status":200}', "status 503 in text"]
    assert (await ingest(client, who, [{"line": text} for text in sent])).status_code == 200
    kept = [row.line for row in await stored_lines(client.database_url, who.account_id)]
    assert kept == ['{"status":200}', "status 503 in text"]


async def test_the_pipeline_log_store_destination_parses_alike(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, [("store", "destination", "mezmo", {}, ["source"])])
    events = [
        {"line": '{"status":503,"level":"error","user":{"id":42}}'},
        {"line": "2025-11-22 08:00:01 WARN slow"},
        {"line": "ts=1 status=200 msg=ok", "meta": {"status": "sent"}},
    ]
    response = await client.post(wired.url, json=events, headers=wired.auth)
    assert response.status_code == 200, response.text
    rows = await stored_lines(client.database_url, account.account_id)
    assert [(row.level, row.meta) for row in rows] == [
        ("error", {"_status": 503, "level": "error", "user": {"id": 42}}),
        ("WARN", None),
        (None, {"ts": "1", "_status": "200", "msg": "ok", "message": "ok", "status": "sent"}),
    ]
    found, _ = await export_all(client, account.headers, query="status:>=500", **_window())
    assert [item["_line"] for item in found] == [events[0]["line"]]


async def test_live_tail_filters_on_parsed_fields_and_shows_them(client: AppClient) -> None:
    who = await make_ingestor(client)
    tail = client._transport.app.state.tidegate.tail  # type: ignore[attr-defined]
    wanted = parse_line_filter(hosts=None, apps=None, levels=None, query="status:>=500 level:error")
    sent = [
        '{"status":503,"level":"error","user":{"id":42}}',
        '{"status":200,"level":"error"}',
        "ts=1 status=500 level=error msg=down",
        "2025-11-22 08:00:01 ERROR status 503 in plain text",
    ]
    async with tail.subscribe(who.account_id, wanted) as subscription:
        response = await ingest(client, who, [{"line": text} for text in sent])
        assert response.status_code == 200
        batch = await subscription.next_batch(timeout=30)
    assert [item.line for item in batch.lines] == [sent[0], sent[2]]
    record = batch.lines[0].record()
    assert record["level"] == "error"
    assert record["_meta"] == {"_status": 503, "level": "error", "user": {"id": 42}}


async def test_an_alert_view_matches_parsed_fields_of_stored_lines(client: AppClient) -> None:
    who = await make_ingestor(client)
    sent = ['{"status":503,"user":{"id":42}}', '{"status":200}', "status=502 msg=bad", "plain 503"]
    assert (await ingest(client, who, [{"line": text} for text in sent])).status_code == 200
    db = Database.connect(client.database_url)
    try:
        async with db.read_sessions() as session:
            statement = (
                select(*alert_cursor._COLUMNS)
                .where(LogLine.account_id == who.account_id)
                .order_by(LogLine.id)
            )
            rows = [tuple(row) for row in await session.execute(statement)]
    finally:
        await db.dispose()
    spec = presence_view(account_id=who.account_id, query="status:>=500", triggerlimit=2)
    outcome = evaluate_batch([spec], {}, rows, int(time.time() * 1000), None)
    [(_, _, firing)] = outcome.firings
    assert [match["_line"] for match in firing.matches] == [sent[0], sent[2]]
    assert firing.matches[0]["_meta"]["user"] == {"id": 42}
