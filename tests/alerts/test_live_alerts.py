"""End to end on a real server: lines sent by the platform's
official Python logging handler make a view's presence alert POST to a webhook
receiver exactly once, with the matched lines; an absence alert fires when its lines
stop; live tail follows the view."""

from __future__ import annotations

import logging
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.alerts.receivers import Request, ThreadedReceiver
from tests.api.scrape import parse, value
from tests.ingest.test_live_servers import _account, _env
from tests.live import live_get, live_post
from tests.waiting import until


@pytest.fixture(params=["sqlite", "postgres"])
def server_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'alerts.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


def _alert_env(database_url: str) -> dict[str, str]:
    return {
        **_env(database_url),
        "TIDEGATE_ALERT_TICK_S": "0.2",
        "TIDEGATE_ALERT_SETTLE_S": "0.5",
        "TIDEGATE_DESTINATION_ALLOW": "127.0.0.1",
    }


def _after_two_rounds(base_url: str) -> None:
    """Until the evaluator has ended two rounds from now: the second began after this
    call, so it saw whatever was stored before it (a new view, say)."""

    def rounds() -> float:
        series = parse(live_get(f"{base_url}/metrics").text)
        return value(series, "tidegate_alert_evaluations_total", outcome="evaluated")

    ended = rounds()
    until(lambda: rounds() >= ended + 2, every=0.1, what="two alert rounds")


def _handler(key: str, base_url: str, monkeypatch: pytest.MonkeyPatch) -> logging.Logger:
    import logdna.logdna

    monkeypatch.setattr(logdna.logdna, "get_ip", lambda: "127.0.0.1")
    handler = logdna.logdna.LogDNAHandler(
        key,
        {
            "url": f"{base_url}/logs/ingest",
            "hostname": "checkout-1",
            "app": "checkout",
            "flush_interval": 0.05,
            "retry_interval_secs": 0.1,
        },
    )
    logger = logging.getLogger(f"tidegate.test.alerts.{uuid.uuid4().hex[:6]}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    return logger


def _close(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()  # flushes, blocking


def _view(base_url: str, who: dict[str, str], body: dict[str, Any]) -> str:
    headers = {key: value for key, value in who.items() if key not in ("account_id", "key")}
    response = live_post(f"{base_url}/v1/config/view", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return str(response.json()["viewID"])


def test_presence_alert_posts_once_with_the_matched_lines(
    live_server_factory: Any, server_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One worker: two miss the live server's 30 s start deadline on a loaded machine
    # (tests/alerts/test_evaluator.py races two evaluators on one store instead).
    server = live_server_factory(env=_alert_env(server_db))
    who = _account(server.base_url, server_db, tmp_path)
    with ThreadedReceiver() as receiver:
        view_id = _view(
            server.base_url,
            who,
            {
                "name": "Checkout failures",
                "query": "payment failed",
                "apps": [],
                "hosts": [],
                "levels": [],
                "tags": [],
                "category": [],
                "presetid": "",
                "channels": [
                    {
                        "integration": "webhook",
                        "url": f"{receiver.base_url}/presence",
                        "method": "POST",
                        "headers": {"X-Alert": "checkout"},
                        "bodyTemplate": {"view": "{{name}}", "lines": "{{lines}}"},
                        "immediate": "true",
                        "terminal": "false",
                        "operator": "presence",
                        "triggerlimit": 3,
                        "triggerinterval": "30",
                        "emails": [],
                        "key": "",
                        "timezone": "",
                    }
                ],
            },
        )
        _after_two_rounds(server.base_url)  # the evaluator has seen the view before the lines
        logger = _handler(who["key"], server.base_url, monkeypatch)
        try:
            logger.error("payment failed: card 4242")
            logger.info("cart viewed")
            logger.error("payment failed: card 1881")
            logger.warning("payment failed: bank timeout")
        finally:
            _close(logger)
        until(lambda: receiver.on("/presence"), what="the presence alert's post")
        time.sleep(2)  # ten more evaluation ticks: nothing more arrives
        posts: list[Request] = receiver.on("/presence")
        assert len(posts) == 1
        [post] = posts
        assert post.method == "POST"
        assert post.headers["x-alert"] == "checkout"
        body = post.json()
        assert body["view"] == "Checkout failures"
        # The handler flushes in batches of its own; compare without order.
        assert sorted(line["_line"] for line in body["lines"]) == [
            "payment failed: bank timeout",
            "payment failed: card 1881",
            "payment failed: card 4242",
        ]
        assert all(line["_app"] == "checkout" for line in body["lines"])
        headers = {key: value for key, value in who.items() if key not in ("account_id", "key")}
        log = live_get(f"{server.base_url}/v1/config/view/{view_id}/alerts", headers=headers)
        [entry] = log.json()
        assert entry["status"] == "delivered"
        assert entry["count"] == 3
        # The operator's view of it (docs/metrics.md), this server's alone.
        values = parse(live_get(f"{server.base_url}/metrics").text)
    assert value(values, "tidegate_lines_total", outcome="stored") == 4
    assert value(values, "tidegate_ingest_requests_total", result="accepted") >= 1
    assert value(values, "tidegate_alert_evaluations_total", outcome="evaluated") >= 1
    assert value(values, "tidegate_alert_lines_evaluated_total") >= 4
    assert value(values, "tidegate_alert_firings_total") == 1
    assert value(values, "tidegate_alert_deliveries_total", outcome="delivered") == 1
    delivery = "tidegate_alert_delivery_duration_seconds_count"
    assert value(values, delivery, integration="webhook") == 1


# Live tests shorten alert windows: "30" (the shortest interval) lasts 3 s here.
WINDOW_SCALE = 0.1
WINDOW_MS = 3_000


def _received_ms(database_url: str, account_id: str, text: str) -> list[int]:
    """When the server received each stored line ``text`` (the time alerts count by)."""
    path = database_url.split(":///", 1)[1]
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT received_ms FROM log_lines WHERE account_id = ? AND line = ? ORDER BY id",
            (account_id, text),
        ).fetchall()
    return [int(row[0]) for row in rows]


def test_absence_alert_fires_when_lines_stop(
    live_server_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Heartbeats keep their windows quiet; after the last one an empty window fires.

    Nothing here depends on when a heartbeat lands relative to a window's end: the
    server stamps each line with the time it received it (read back from the store),
    every notification carries the end of the window it fired for (``fired_ms``), and
    a window of 3 s ending within 3 s after a heartbeat held that heartbeat. So: no
    notification may end such a window, and one must eventually end a window after the
    last heartbeat, with nothing in it. (Lines exactly at a window's end, and lines seen
    late, are the hand-clock cases of tests/alerts/test_windows.py.)"""
    server_db = f"sqlite+aiosqlite:///{tmp_path / 'absence.sqlite3'}"
    env = {
        **_alert_env(server_db),
        "TIDEGATE_ALERT_WINDOW_SCALE": str(WINDOW_SCALE),
        # A window end is acted on this long after it: lines received before it have
        # committed by then even on a loaded machine.
        "TIDEGATE_ALERT_SETTLE_S": "2",
    }
    server = live_server_factory(env=env)
    who = _account(server.base_url, server_db, tmp_path)
    with ThreadedReceiver() as receiver:
        _view(
            server.base_url,
            who,
            {
                "name": "Heartbeat",
                "query": "heartbeat",
                "channels": [
                    {
                        "integration": "webhook",
                        "url": f"{receiver.base_url}/absence",
                        "operator": "absence",
                        "triggerlimit": 1,
                        "triggerinterval": "30",
                    }
                ],
            },
        )
        logger = _handler(who["key"], server.base_url, monkeypatch)
        try:
            for _ in range(4):  # over about a window and a half (their number does not matter)
                logger.info("heartbeat ok")
                time.sleep(WINDOW_MS / 1000 / 3)
        finally:
            _close(logger)
        beats = _received_ms(server_db, who["account_id"], "heartbeat ok")
        assert len(beats) == 4
        last = max(beats)

        def after_the_last() -> list[dict[str, Any]]:
            bodies = [post.json() for post in receiver.on("/absence")]
            return [body for body in bodies if body["fired_ms"] > last]

        until(after_the_last, timeout=120, what="an absence alert after the last heartbeat")
        bodies = [post.json() for post in receiver.on("/absence")]
        for body in bodies:
            assert body["event"] == "trigger"
            assert body["operator"] == "absence"
            assert body["count"] == 0
            assert body["name"] == "Heartbeat"
            held = [beat for beat in beats if beat < body["fired_ms"] <= beat + WINDOW_MS]
            assert not held, (body["fired_ms"], held, beats)


async def test_live_tail_follows_a_view(live_server_factory: Any, tmp_path: Path) -> None:
    from tests.tail.test_live import tail

    server_db = f"sqlite+aiosqlite:///{tmp_path / 'tail.sqlite3'}"
    server = live_server_factory(env=_alert_env(server_db))
    who = _account(server.base_url, server_db, tmp_path)
    headers = {key: value for key, value in who.items() if key not in ("account_id", "key")}
    view_id = _view(
        server.base_url, who, {"name": "Billing failures", "query": "failed", "apps": ["billing"]}
    )
    async with (
        tail(server.base_url, headers, viewID=view_id) as stream,
        server.async_client() as http,
    ):
        lines = [
            {"line": "payment failed", "app": "billing"},
            {"line": "payment ok", "app": "billing"},
            {"line": "login failed", "app": "auth"},
            {"line": "refund failed", "app": "billing"},
        ]
        sent = await http.post(
            "/logs/ingest",
            params={"hostname": "h"},
            json={"lines": lines},
            headers={"apikey": who["key"]},
        )
        assert sent.status_code == 200
        got = await stream.wait_for(2)
        assert [line["_line"] for line in got] == ["payment failed", "refund failed"]
    foreign = _account(server.base_url, server_db, tmp_path / "other")
    other = {key: value for key, value in foreign.items() if key not in ("account_id", "key")}
    refused = live_get(f"{server.base_url}/v1/tail", params={"viewID": view_id}, headers=other)
    assert refused.status_code == 404
