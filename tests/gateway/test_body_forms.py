"""The body forms of POST /gateway/{id}, end to end into the log store, and the pure
parser's refusals."""

from __future__ import annotations

import gzip
from typing import Any

import cramjam
import orjson
import pytest
from tests.conftest import AppClient
from tests.gateway.factories import count_lines, new_account, stored_lines, wire

from tidegate.errors import BadRequest, PayloadTooLarge
from tidegate.kit.body import parse_events

LOG = [("store", "destination", "log_analysis", {}, ["source"])]


def legacy_error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"error", "code", "status"}
    assert body["status"] == "error"
    return body


@pytest.mark.parametrize(
    ("content", "content_type", "expected"),
    [
        (b'{"line": "one"}', "application/json", ["one"]),
        (b'[{"line": "one"}, {"line": "two"}]', "application/json", ["one", "two"]),
        (b'{"line": "one"}\n\n{"line": "two"}\r\n', "application/json", ["one", "two"]),
        (b'{"line": "one"}\n{"line": "two"}', "application/x-ndjson", ["one", "two"]),
        (b'{"line": "one"}', "application/x-ndjson", ["one"]),
        (b'{"line": "one"}\n{"line": "two"}', None, ["one", "two"]),
        (b"[]", "application/json", []),
    ],
)
async def test_body_forms_reach_the_log_store(
    client: AppClient, content: bytes, content_type: str | None, expected: list[str]
) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    headers = dict(wired.auth)
    if content_type:
        headers["Content-Type"] = content_type
    response = await client.post(wired.url, content=content, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "ok", "events": len(expected), "pipelines": 1}
    lines = await stored_lines(client.database_url, account.account_id)
    assert [line.line for line in lines] == expected


async def test_gzip_body(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    body = gzip.compress(orjson.dumps([{"line": "zipped"}] * 3))
    response = await client.post(
        wired.url,
        content=body,
        headers={**wired.auth, "Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert await count_lines(client.database_url, account.account_id) == 3


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "Empty body"),
        (b"   \n", "Empty body"),
        (b"[1, 2]", "Element 0"),
        (b'"text"', "a string"),
        (b"{nope", "not valid JSON"),
        (b'{"a": 1}\n[1]', "Line 2"),
        (b'{"a": 1}\n{bad', "Line 2"),
    ],
)
async def test_bad_bodies_are_400_in_the_legacy_shape_and_store_nothing(
    client: AppClient, content: bytes, fragment: str
) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    response = await client.post(
        wired.url, content=content, headers={**wired.auth, "Content-Type": "application/json"}
    )
    body = legacy_error(response, 400)
    assert fragment in body["error"]
    assert await count_lines(client.database_url, account.account_id) == 0


def test_parser_refuses_a_gzip_bomb() -> None:
    bomb = gzip.compress(b"[" + b" " * (11 * 1024 * 1024) + b"]")
    with pytest.raises(PayloadTooLarge):
        parse_events(bomb, content_encoding="gzip")


def test_parser_refuses_broken_gzip() -> None:
    with pytest.raises(BadRequest):
        parse_events(b"not gzip", content_encoding="gzip")


def test_zstd_bodies_are_read_within_the_limit() -> None:
    """The Datadog Agent's default encoding: one or more frames; a frame inflating past
    10 MB is a 413 whatever it declares, a body that is not zstd a 400."""
    two_frames = bytes(cramjam.zstd.compress(b'[{"line":"a"},')) + bytes(
        cramjam.zstd.compress(b'{"line":"b"}]')
    )
    assert parse_events(two_frames, content_encoding="zstd") == [{"line": "a"}, {"line": "b"}]
    bomb = bytes(cramjam.zstd.compress(b"[" + b" " * (11 * 1024 * 1024) + b"]"))
    with pytest.raises(PayloadTooLarge):
        parse_events(bomb, content_encoding="zstd")
    with pytest.raises(BadRequest):
        parse_events(b"not zstd", content_encoding="zstd")


def test_ndjson_content_type_reads_lines_only() -> None:
    with pytest.raises(BadRequest):
        parse_events(b"[{}]", content_type="application/x-ndjson")
    assert parse_events(
        b'{"a": 1}\n{"b": 2}', content_type="application/x-ndjson; charset=utf-8"
    ) == [
        {"a": 1},
        {"b": 2},
    ]


async def test_body_over_10_mb_is_413(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire(client, account, LOG)
    response = await client.post(
        wired.url, content=b"[" + b" " * (10 * 1024 * 1024 + 1) + b"]", headers=wired.auth
    )
    legacy_error(response, 413)
