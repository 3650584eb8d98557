"""Issue 7, items 4, 8, 9, 10: a good line is never lost because of its neighbour, what
real clients send is stored, digit-like text is never a 500, NaN is stored the same on
both backends, and a body of too many lines is refused before any line is built."""

from __future__ import annotations

import gzip
import threading
from typing import Any

import orjson
import pytest
from tests.conftest import AppClient
from tests.export.helpers import export_all
from tests.ingest.factories import Ingestor, ingest, make_ingestor, stored_lines, usage_rows

from tidegate.clock import now_ms
from tidegate.ingest import service
from tidegate.ingest.decoding import MAX_LINES_PER_REQUEST
from tidegate.logs.filtering import LineFilter
from tidegate.logs.intake import JudgedLines
from tidegate.tail import endpoints as tail_endpoints

INGEST = "/logs/ingest"
# In an expected row: the ``now`` the request sent (the sender's clock is right, so the
# lines without a usable time take it; docs/ingest.md).
NOW = object()


async def _post(client: AppClient, who: Ingestor, body: bytes, **params: str) -> Any:
    return await client.post(
        INGEST,
        params={"hostname": "h", "now": str(now_ms()), **params},
        content=body,
        headers={**who.headers, "content-type": "application/json"},
    )


# (an odd line, what is stored for it, whether it counts as a fallback)
REPAIRED: list[tuple[bytes, dict[str, Any], bool]] = [
    (b'{"line": 12345}', {"line": "12345"}, True),
    (b'{"line": true}', {"line": "true"}, True),
    (b'{"line": {"a": 1}}', {"line": '{"a":1}'}, True),
    (b'{"app": "no line"}', {"line": '{"app":"no line"}', "app": "no line"}, True),
    (b'"a bare string"', {"line": "a bare string"}, True),
    (b'{"line": "x", "timestamp": true}', {"ts": NOW}, True),
    (b'{"line": "x", "timestamp": "yesterday"}', {"ts": NOW}, True),
    (b'{"line": "x", "timestamp": -1}', {"ts": NOW}, True),
    (b'{"line": "x", "timestamp": -5000}', {"ts": NOW}, True),
    (b'{"line": "x", "timestamp": 1e300}', {"ts": NOW}, True),
    (b'{"line": "x", "timestamp": "\\u00b2"}', {"ts": NOW}, True),
    (b'{"line": "x", "timestamp": "' + b"9" * 5000 + b'"}', {"ts": NOW}, True),
    # A number too long for a double is null once parsed: the default time, uncounted.
    (b'{"line": "x", "timestamp": ' + b"9" * 5000 + b"}", {"ts": NOW}, False),
    # winston's format.timestamp({format: 'YYYY-MM-DD HH:mm:ss'}): no offset means UTC.
    (b'{"line": "x", "timestamp": "2025-01-02 03:04:05"}', {"ts": 1_735_787_045_000}, False),
    (b'{"line": "x", "timestamp": "2025-01-02T03:04:05.5"}', {"ts": 1_735_787_045_500}, False),
    (b'{"line": "x", "meta": "not an object"}', {"meta": {"value": "not an object"}}, True),
    (b'{"line": "x", "meta": [1]}', {"meta": {"value": [1]}}, True),
    (b'{"line": "x", "app": "' + b"a" * 600 + b'"}', {"app": "a" * 512}, True),
    (b'{"line": "x", "level": 3}', {"level": "3"}, True),
    (b'{"line": "x", "env": {"k": 1}}', {"env": None}, True),
    (b'{"line": "\\ud800 lone"}', {"line": "\ufffd lone"}, False),
]


@pytest.mark.parametrize(("odd", "expected", "fallback"), REPAIRED)
async def test_an_odd_line_is_repaired_and_its_neighbours_are_stored(
    client: AppClient, odd: bytes, expected: dict[str, Any], fallback: bool
) -> None:
    who = await make_ingestor(client)
    body = b'{"lines": [{"line": "before"}, ' + odd + b', {"line": "after"}]}'
    sent_now = now_ms()
    response = await _post(client, who, body, now=str(sent_now))
    assert response.status_code == 200, response.text
    rows = await stored_lines(client.database_url, who.account_id)
    assert [row.line for row in rows][::2] == ["before", "after"]
    stored = rows[1]
    for name, value in expected.items():
        assert getattr(stored, name) == (sent_now if value is NOW else value), name
    (usage,) = await usage_rows(client.database_url, who.account_id)
    assert (usage.lines_stored, usage.lines_fallback) == (3, int(fallback))


async def test_fallbacks_are_visible_in_usage(client: AppClient) -> None:
    who = await make_ingestor(client)
    lines = [{"line": 1}, {"line": "ok"}, {"line": "x", "timestamp": "soon"}]
    assert (await ingest(client, who, lines)).status_code == 200
    body = (await client.get("/v1/usage", headers=who.account.headers)).json()
    assert body["days"][-1]["lines_fallback"] == 2
    assert body["totals"]["lines_fallback"] == 2
    assert body["totals"]["lines_stored"] == 3


@pytest.mark.parametrize("now", ["\u00b2", "1\u00b2", "9" * 5000, "-5", "soon", "1e3"])
async def test_digit_like_now_is_400_not_500(client: AppClient, now: str) -> None:
    who = await make_ingestor(client)
    response = await ingest(client, who, [{"line": "x"}], now=now)
    assert response.status_code == 400, response.text
    assert response.json() == {
        "error": "Bad or missing parameters. now: an epoch time in seconds or milliseconds.",
        "code": "BadRequest",
        "status": "error",
    }


NAN_BODY = (
    b'{"lines": [{"line": "python handler", "meta": {"ratio": NaN, "up": Infinity, '
    b'"down": -Infinity, "n": 1.5}}, {"line": "string meta", "meta": "{\\"x\\": NaN}"}]}'
)


async def test_nan_in_meta_is_null_on_both_backends_and_tail_and_export_emit_json(
    client: AppClient,
) -> None:
    who = await make_ingestor(client)
    broker = client._transport.app.state.tidegate.tail  # type: ignore[attr-defined]
    async with broker.subscribe(who.account_id, LineFilter()) as subscription:
        response = await _post(client, who, NAN_BODY)
        assert response.status_code == 200, response.text
        batch = await subscription.next_batch(timeout=30)
    first, second = await stored_lines(client.database_url, who.account_id)
    assert first.meta == {"ratio": None, "up": None, "down": None, "n": 1.5}
    # A string holding an object is meta sent unindexed (shown, not searched).
    assert (second.meta, second.meta_unindexed) == (None, {"x": None})
    # The tail stream's event is strict JSON (no NaN tokens).
    event = tail_endpoints._event([line.record() for line in batch.lines])
    records = orjson.loads(event.removeprefix("data: ").strip())
    assert [record["_line"] for record in records] == ["python handler", "string meta"]
    now_s = now_ms() // 1000
    exported, _ = await export_all(
        client, who.account.headers, **{"from": now_s - 3600, "to": now_s + 60}
    )
    assert len(exported) == 2
    assert b"NaN" not in orjson.dumps(exported)


async def test_over_the_line_cap_is_413_and_the_cap_itself_is_stored(client: AppClient) -> None:
    who = await make_ingestor(client)
    over = b'{"lines": [' + b",".join([b'{"line": ""}'] * (MAX_LINES_PER_REQUEST + 1)) + b"]}"
    response = await _post(client, who, over)
    assert response.status_code == 413, response.text
    assert response.json() == {
        "error": f"At most {MAX_LINES_PER_REQUEST} lines per request; send smaller batches",
        "code": "PayloadTooLarge",
        "status": "error",
    }
    assert await stored_lines(client.database_url, who.account_id) == []


async def test_the_attack_body_of_empty_lines_is_refused(client: AppClient) -> None:
    """The issue's 10 MB body of 873,811 empty lines (2 GB and 20 s of loop before)."""
    who = await make_ingestor(client)
    attack = b'{"lines": [' + b",".join([b'{"line":""}'] * 873_811) + b"]}"
    response = await _post(client, who, attack)
    assert response.status_code == 413
    assert response.json()["code"] == "PayloadTooLarge"


async def test_parsing_runs_in_a_worker_thread_not_on_the_loop(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[threading.Thread] = []
    real = service.prepare

    def spy(**kwargs: Any) -> JudgedLines:
        threads.append(threading.current_thread())
        return real(**kwargs)

    monkeypatch.setattr(service, "prepare", spy)
    who = await make_ingestor(client)
    assert (await ingest(client, who, [{"line": "x"}])).status_code == 200
    assert len(threads) == 1
    assert threads[0] is not threading.main_thread()
    runtime = client._transport.app.state.tidegate.ingest  # type: ignore[attr-defined]
    assert runtime._parse_limiter.total_tokens == runtime.parse_threads


AGENT_LINES = [
    {
        "t": 1_700_000_000_123,
        "line": "from the agent payload",
        "f": "/var/log/app.log",
        "label": {"team": "core"},
        "pid": 4242,
    },
    {"t": "2023-11-14T22:13:20Z", "line": "iso t", "meta": {"k": 1}, "pid": 7},
]


@pytest.mark.parametrize("path", ["/logs/agent", "/logs/ingest"])
async def test_agent_payload_fields_are_honoured(client: AppClient, path: str) -> None:
    who = await make_ingestor(client)
    response = await client.post(
        path,
        params={"hostname": "node-1"},
        content=gzip.compress(orjson.dumps({"e": "ls", "ls": AGENT_LINES})),
        headers={**who.headers, "content-encoding": "gzip", "content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    first, second = await stored_lines(client.database_url, who.account_id)
    assert (first.ts, first.file, first.host) == (1_700_000_000_123, "/var/log/app.log", "node-1")
    assert first.meta == {"labels": {"team": "core"}, "pid": 4242}
    assert (second.ts, second.meta) == (1_700_000_000_000, {"pid": 7, "k": 1})


async def test_agent_endpoint_takes_the_platform_agents_body_and_credentials(
    client: AppClient,
) -> None:
    who = await make_ingestor(client)
    body = {
        "lines": [
            {
                "line": "agent line",
                "app": "syslog",
                "level": "INFO",
                "file": "/var/log/syslog",
                "meta": {"a": 1},
                "annotations": {"x": "y"},
                "labels": {"l": "v"},
            }
        ]
    }
    response = await client.post(
        "/logs/agent",
        params={"hostname": "node-2"},
        content=gzip.compress(orjson.dumps(body)),
        headers={"apiKey": who.key, "content-encoding": "gzip"},
    )
    assert response.status_code == 200, response.text
    (row,) = await stored_lines(client.database_url, who.account_id)
    assert (row.line, row.app, row.file) == ("agent line", "syslog", "/var/log/syslog")
    assert row.meta == {"annotations": {"x": "y"}, "labels": {"l": "v"}, "a": 1}
    missing = await client.post("/logs/agent", params={"hostname": "h"}, json=body)
    assert missing.status_code == 401
    assert missing.json()["code"] == "Unauthorized"
