"""POST /logs/ingest on both backends: credentials, body forms, encodings, limits and
every documented answer."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.conftest import AppClient, make_settings, open_client
from tests.ingest.factories import Ingestor, ingest, make_ingestor, stored_lines, usage_rows

from tidegate.clock import now_ms
from tidegate.logs.timestamps import CLOCK_TOLERANCE_MS

INGEST = "/logs/ingest"
OK = {"status": "ok"}
FORBIDDEN = {"error": "Account not found or inactive", "code": "Forbidden", "status": "error"}
MISSING = {"error": "Missing Credentials", "code": "Unauthorized", "status": "error"}


async def _texts(client: AppClient, who: Ingestor) -> list[str]:
    return [row.line for row in await stored_lines(client.database_url, who.account_id)]


async def test_lines_are_stored_with_every_field(client: AppClient) -> None:
    who = await make_ingestor(client)
    response = await client.post(
        INGEST,
        params={"hostname": "web-1", "mac": "aa:bb", "ip": "10.0.0.1", "tags": "a, b,,c"},
        json={
            "lines": [
                {
                    "line": "GET / 200",
                    "timestamp": 1_700_000_000_123,
                    "app": "nginx",
                    "level": "INFO",
                    "env": "prod",
                    "meta": {"user": {"id": 7}},
                },
                {"line": "second", "hostname": "web-2", "file": "/var/log/x"},
            ]
        },
        headers=who.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json() == OK
    first, second = await stored_lines(client.database_url, who.account_id)
    assert (first.line, first.ts, first.host, first.app, first.level, first.env) == (
        "GET / 200", 1_700_000_000_123, "web-1", "nginx", "INFO", "prod",
    )  # fmt: skip
    assert (first.ip, first.mac, first.tags, first.meta) == (
        "10.0.0.1", "aa:bb", ["a", "b", "c"], {"user": {"id": 7}},
    )  # fmt: skip
    # A line naming its file but no app is filed under the file's base name.
    assert (second.host, second.file, second.app, second.meta) == (
        "web-2",
        "/var/log/x",
        "x",
        None,
    )
    assert abs(second.ts - second.received_ms) < 5_000


async def test_handler_body_form_and_json_string_meta(client: AppClient) -> None:
    who = await make_ingestor(client)
    body = {"e": "ls", "ls": [{"line": "from handler", "meta": '{"lineno": 12}', "level": "WARN"}]}
    response = await client.post(
        INGEST, params={"hostname": "h"}, json=body, headers={"apikey": who.key}
    )
    assert response.status_code == 200, response.text
    (row,) = await stored_lines(client.database_url, who.account_id)
    # A string holding an object: meta sent unindexed (the handler's default
    # index_meta=False), kept and shown, not searchable.
    assert (row.line, row.meta, row.meta_unindexed, row.level) == (
        "from handler",
        None,
        {"lineno": 12},
        "WARN",
    )


@pytest.mark.parametrize("form", ["basic", "header", "query"])
async def test_every_credential_form(client: AppClient, form: str) -> None:
    who = await make_ingestor(client)
    params: dict[str, str] = {"hostname": "h"}
    headers: dict[str, str] = {}
    if form == "basic":
        headers = who.basic
    elif form == "header":
        headers = who.headers
    else:
        params["apikey"] = who.key
    response = await client.post(
        INGEST, params=params, json={"lines": [{"line": form}]}, headers=headers
    )
    assert response.status_code == 200, response.text
    assert await _texts(client, who) == [form]


async def test_missing_credentials_is_401(client: AppClient) -> None:
    for headers in ({}, {"Authorization": "Basic !!!"}, {"apikey": "  "}):
        response = await client.post(
            INGEST, params={"hostname": "h"}, json={"lines": []}, headers=headers
        )
        assert response.status_code == 401
        assert response.json() == MISSING


async def test_management_credentials_do_not_ingest(client: AppClient) -> None:
    who = await make_ingestor(client)
    for headers in (who.account.headers, who.account.tenant.headers):
        response = await client.post(
            INGEST, params={"hostname": "h"}, json={"lines": [{"line": "x"}]}, headers=headers
        )
        assert response.status_code == 401
    service_key = who.account.tenant.token
    response = await client.post(
        INGEST,
        params={"hostname": "h"},
        json={"lines": [{"line": "x"}]},
        headers={"apikey": service_key},
    )
    assert response.status_code == 403
    assert response.json() == FORBIDDEN


async def test_unknown_and_deleted_keys_are_403(client: AppClient) -> None:
    who = await make_ingestor(client)
    unknown = await client.post(
        INGEST, params={"hostname": "h"}, json={"lines": []}, headers={"apikey": "0" * 32}
    )
    assert (unknown.status_code, unknown.json()) == (403, FORBIDDEN)
    keys = (await client.get("/v1/config/keys", headers=who.account.headers)).json()
    key_id = next(key["id"] for key in keys if key["type"] == "ingestion")
    deleted = await client.delete(f"/v1/config/keys/{key_id}", headers=who.account.headers)
    assert deleted.status_code == 200
    response = await ingest(client, who, [{"line": "after delete"}])
    assert (response.status_code, response.json()) == (403, FORBIDDEN)
    assert await _texts(client, who) == []


async def test_deactivated_account_is_403_until_reactivated(client: AppClient) -> None:
    who = await make_ingestor(client)
    path = f"/v3/enterprise/account/{who.account_id}"
    tenant = who.account.tenant.headers
    changed = await client.patch(path, json={"status": "deactivated"}, headers=tenant)
    assert changed.status_code == 200, changed.text
    response = await ingest(client, who, [{"line": "while deactivated"}])
    assert (response.status_code, response.json()) == (403, FORBIDDEN)
    await client.patch(path, json={"status": "active"}, headers=tenant)
    assert (await ingest(client, who, [{"line": "back"}])).status_code == 200
    assert await _texts(client, who) == ["back"]


async def test_missing_hostname(client: AppClient) -> None:
    who = await make_ingestor(client)
    for params in ({}, {"hostname": ""}, {"hostname": "   "}):
        response = await client.post(
            INGEST, params=params, json={"lines": [{"line": "x"}]}, headers=who.headers
        )
        assert response.status_code == 400
        assert response.json() == {
            "error": "Missing param hostname.",
            "code": "BadRequest",
            "status": "error",
        }


# Only a body that is not the protocol at all is a 400; odd lines are repaired
# (tests/ingest/test_lenient_lines.py).
BAD_BODIES: list[Any] = [
    b"{not json",
    b"",
    b"[]",
    b"{}",
    b'{"lines": "x"}',
    b'{"lines": {"line": "x"}}',
    b'{"lines": [{"line": "x"}], "ls": [{"line": "y"}]}',
    b'{"lines": [' + b"[" * 2000 + b"]" * 2000 + b"]}",
]


@pytest.mark.parametrize("body", BAD_BODIES)
async def test_bad_bodies_are_400_and_store_nothing(client: AppClient, body: bytes) -> None:
    who = await make_ingestor(client)
    response = await client.post(
        INGEST,
        params={"hostname": "h"},
        content=body,
        headers={**who.headers, "content-type": "application/json"},
    )
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["code"] == "BadRequest"
    assert answer["status"] == "error"
    assert answer["error"].startswith("Bad or missing parameters.")
    assert await _texts(client, who) == []


@pytest.mark.parametrize(
    "params",
    [
        {"now": "soon"},
        {"now": "-5"},
        {"ip": "x" * 65},
        {"hostname": "h" * 257},
        {"tags": "t" * 300},
    ],
)
async def test_bad_parameters_are_400(client: AppClient, params: dict[str, str]) -> None:
    who = await make_ingestor(client)
    response = await client.post(
        INGEST,
        params={"hostname": "h", **params},
        json={"lines": [{"line": "x"}]},
        headers=who.headers,
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "BadRequest"


async def test_timestamps(client: AppClient) -> None:
    who = await make_ingestor(client)
    now = now_ms()
    lines = [
        {"line": "s", "timestamp": 1_700_000_000},
        {"line": "s float", "timestamp": 1_700_000_000.25},
        {"line": "s digits", "timestamp": "1700000000.125"},
        {"line": "us", "timestamp": 1_700_000_000_123_456},
        {"line": "ns", "timestamp": 1_700_000_000_123_456_789},
        {"line": "ns digits", "timestamp": "1700000000123456789"},
        {"line": "ms", "timestamp": 1_700_000_000_000},
        {"line": "float", "timestamp": 1_700_000_000_000.9},
        {"line": "digits", "timestamp": "1700000000001"},
        {"line": "rfc3339", "timestamp": "2023-11-14T22:13:20.5Z"},
        {"line": "offset", "timestamp": "2023-11-15T00:13:20+02:00"},
        {"line": "default"},
    ]
    response = await ingest(client, who, lines, now=str(now))
    assert response.status_code == 200, response.text
    got = {row.line: row.ts for row in await stored_lines(client.database_url, who.account_id)}
    assert got == {
        "s": 1_700_000_000_000,
        "s float": 1_700_000_000_250,
        "s digits": 1_700_000_000_125,
        "us": 1_700_000_000_123,
        "ns": 1_700_000_000_123,
        "ns digits": 1_700_000_000_123,
        "ms": 1_700_000_000_000,
        "float": 1_700_000_000_000,
        "digits": 1_700_000_000_001,
        "rfc3339": 1_700_000_000_500,
        "offset": 1_700_000_000_000,
        "default": now,
    }


async def test_a_sender_clock_that_is_off_is_corrected_by_its_now(client: AppClient) -> None:
    """A sender whose clock runs an hour behind sends ``now`` an hour behind too: its
    lines are moved by the difference, so they land at the time they really happened."""
    who = await make_ingestor(client)
    hour = 3_600_000
    before = now_ms()
    sender_now = before - hour
    lines = [
        {"line": "ten seconds earlier", "timestamp": sender_now - 10_000},
        {"line": "in seconds", "timestamp": (sender_now - 10_000) // 1000},
        {"line": "no time"},
    ]
    response = await ingest(client, who, lines, now=str(sender_now))
    assert response.status_code == 200, response.text
    after = now_ms()
    got = {row.line: row.ts for row in await stored_lines(client.database_url, who.account_id)}
    # The correction is the receive time minus the sender's now: between before and after.
    assert before - 10_000 <= got["ten seconds earlier"] <= after - 10_000
    assert got["in seconds"] == got["ten seconds earlier"] - (sender_now - 10_000) % 1000
    assert before <= got["no time"] <= after


async def test_a_sender_clock_within_the_tolerance_is_trusted(client: AppClient) -> None:
    who = await make_ingestor(client)
    sender_now = now_ms() - CLOCK_TOLERANCE_MS // 2
    lines = [{"line": "exact", "timestamp": 1_700_000_000_123}, {"line": "no time"}]
    response = await ingest(client, who, lines, now=str(sender_now))
    assert response.status_code == 200, response.text
    got = {row.line: row.ts for row in await stored_lines(client.database_url, who.account_id)}
    assert got == {"exact": 1_700_000_000_123, "no time": sender_now}


async def test_repeated_tags_and_nul_text(client: AppClient) -> None:
    who = await make_ingestor(client)
    response = await client.post(
        f"{INGEST}?hostname=h&tags=a,b&tags=c",
        json={"lines": [{"line": "nul\u0000here", "app": "a\u0000"}]},
        headers=who.headers,
    )
    assert response.status_code == 200, response.text
    (row,) = await stored_lines(client.database_url, who.account_id)
    assert row.tags == ["a", "b", "c"]
    assert (row.line, row.app) == ("nul\ufffdhere", "a\ufffd")


async def test_unknown_line_fields_are_ignored_and_empty_batches_are_ok(client: AppClient) -> None:
    who = await make_ingestor(client)
    response = await ingest(client, who, [{"line": "x", "category": "c", "extra": {"a": 1}}])
    assert response.status_code == 200
    assert (await ingest(client, who, [])).json() == OK
    assert await _texts(client, who) == ["x"]


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_compressed_bodies(client: AppClient, encoding: str) -> None:
    who = await make_ingestor(client)
    raw = orjson.dumps({"lines": [{"line": f"zipped {i}"} for i in range(3)]})
    body = gzip.compress(raw) if encoding == "gzip" else zlib.compress(raw)
    response = await client.post(
        INGEST,
        params={"hostname": "h"},
        content=body,
        headers={**who.headers, "content-encoding": encoding, "content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert await _texts(client, who) == ["zipped 0", "zipped 1", "zipped 2"]


async def test_concatenated_gzip_members_are_one_body(client: AppClient) -> None:
    who = await make_ingestor(client)
    raw = orjson.dumps({"lines": [{"line": "two members"}]})
    body = gzip.compress(raw[:10]) + gzip.compress(raw[10:])
    response = await client.post(
        INGEST,
        params={"hostname": "h"},
        content=body,
        headers={**who.headers, "content-encoding": "gzip"},
    )
    assert response.status_code == 200, response.text


async def test_bad_encodings(client: AppClient) -> None:
    who = await make_ingestor(client)
    raw = gzip.compress(orjson.dumps({"lines": [{"line": "x"}]}))
    for body, encoding, status in (
        (b"not gzip", "gzip", 400),
        (raw[:-8], "gzip", 400),
        (raw, "br", 415),
    ):
        response = await client.post(
            INGEST,
            params={"hostname": "h"},
            content=body,
            headers={**who.headers, "content-encoding": encoding},
        )
        assert response.status_code == status, response.text
        assert response.json()["status"] == "error"


async def test_decompression_bomb_is_413(client: AppClient) -> None:
    who = await make_ingestor(client)
    line = "x" * 1000
    # About 11 MB of JSON that compresses to a few kilobytes.
    raw = b'{"lines": [' + b",".join([orjson.dumps({"line": line})] * 11_000) + b"]}"
    bomb = gzip.compress(raw)
    assert len(bomb) < 200_000
    response = await client.post(
        INGEST,
        params={"hostname": "h"},
        content=bomb,
        headers={**who.headers, "content-encoding": "gzip"},
    )
    assert response.status_code == 413
    assert response.json()["code"] == "PayloadTooLarge"
    assert await _texts(client, who) == []


async def test_body_over_10_mb_is_413_and_just_under_is_stored(client: AppClient) -> None:
    who = await make_ingestor(client)
    over = b'{"lines": [{"line": "' + b"y" * (10 * 1024 * 1024) + b'"}]}'
    response = await client.post(
        INGEST, params={"hostname": "h"}, content=over, headers=who.headers
    )
    assert response.status_code == 413
    assert response.json()["status"] == "error"
    under = orjson.dumps({"lines": [{"line": "z" * 1000} for _ in range(10_000)]})
    assert 9 * 1024 * 1024 < len(under) < 10 * 1024 * 1024
    response = await client.post(
        INGEST, params={"hostname": "h"}, content=under, headers=who.headers
    )
    assert response.status_code == 200, response.text
    assert len(await stored_lines(client.database_url, who.account_id)) == 10_000


async def test_usage_counts_stored_lines_and_bytes(client: AppClient) -> None:
    who = await make_ingestor(client)
    await ingest(client, who, [{"line": "héllo"}, {"line": "abc"}])
    (row,) = await usage_rows(client.database_url, who.account_id)
    assert (row.lines_stored, row.bytes_stored, row.lines_excluded) == (2, 6 + 3, 0)


async def test_saturated_worker_answers_503_with_retry_after(client: AppClient) -> None:
    who = await make_ingestor(client)
    limit = client._transport.app.state.tidegate.ingest.limit  # type: ignore[attr-defined]
    saved = limit.in_flight
    limit.in_flight = limit.limit
    try:
        response = await ingest(client, who, [{"line": "refused"}])
    finally:
        limit.in_flight = saved
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert response.json()["code"] == "ServiceUnavailable"
    assert (await ingest(client, who, [{"line": "accepted"}])).status_code == 200
    assert await _texts(client, who) == ["accepted"]
    assert limit.in_flight == saved


async def test_ingest_is_documented(client: AppClient) -> None:
    document = (await client.get("/openapi.json")).json()
    operation = document["paths"]["/logs/ingest"]["post"]
    assert {"200", "400", "401", "403", "413", "415", "503"} <= set(operation["responses"])
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert "line" in body["properties"]["lines"]["anyOf"][0]["items"]["properties"]
    names = {param["name"] for param in operation["parameters"]}
    assert {"hostname", "mac", "ip", "now", "tags"} <= names


async def test_unreachable_store_is_503_not_500(tmp_path: Path) -> None:
    settings = make_settings("postgresql+asyncpg://postgres@127.0.0.1:9/none", tmp_path)
    http, lifespan = await open_client(settings)
    try:
        response = await http.post(
            INGEST,
            params={"hostname": "h"},
            json={"lines": [{"line": "x"}]},
            headers={"apikey": "k"},
        )
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "1"
    assert response.json()["status"] == "error"
