"""How an event becomes a stored line (the log_analysis destination)."""

from __future__ import annotations

import orjson

from tidegate.ingest.service import IngestParams, build_line
from tidegate.logs.log_lines import DEFAULT_HOST, event_to_line

RECEIVED = 1_700_000_000_000


def test_log_shaped_event() -> None:
    line = event_to_line(
        {
            "line": "disk full",
            "host": "web-1",
            "app": "api",
            "level": "ERROR",
            "env": "prod",
            "tags": "a, b,,c",
            "timestamp": "2024-05-01T12:00:00.250Z",
            "meta": {"disk": "/dev/sda1"},
            "other": 1,
        },
        received_ms=RECEIVED,
    )
    assert (line.line, line.host, line.app, line.level, line.env) == (
        "disk full",
        "web-1",
        "api",
        "ERROR",
        "prod",
    )
    assert line.tags == ["a", "b", "c"]
    assert line.ts == 1714564800250
    assert line.meta == {"disk": "/dev/sda1"}


def test_without_line_the_event_is_the_line_and_the_rest_is_meta() -> None:
    event = {"hostname": "h", "status": 500, "path": "/x"}
    line = event_to_line(event, received_ms=RECEIVED)
    assert orjson.loads(line.line) == event
    assert line.host == "h"
    assert line.ts == RECEIVED
    assert line.meta == {"status": 500, "path": "/x"}


def test_message_and_defaults() -> None:
    line = event_to_line({"message": "hi", "host": 7, "app": True}, received_ms=RECEIVED)
    assert line.line == "hi"
    assert line.host == "7"
    assert line.app is None  # booleans are not names
    assert line.meta == {"app": True}


def test_default_host_and_epoch_ms_timestamp() -> None:
    line = event_to_line({"msg": "x", "ts": 1_600_000_000_000}, received_ms=RECEIVED)
    assert line.host == DEFAULT_HOST
    assert line.ts == 1_600_000_000_000
    assert line.meta is None


def test_nul_and_oversized_text_are_made_storable() -> None:
    line = event_to_line(
        {"line": "a\x00b", "host": "h" * 1000, "level": "x\x00", "meta": {"k\x00": "v\x00"}},
        received_ms=RECEIVED,
    )
    assert line.line == "a\ufffdb"
    assert len(line.host) == 256
    assert line.level == "x\ufffd"
    assert line.meta == {"k\ufffd": "v\ufffd"}


def test_unparseable_timestamp_keeps_the_field_in_meta() -> None:
    line = event_to_line({"line": "x", "timestamp": "yesterday"}, received_ms=RECEIVED)
    assert line.ts == RECEIVED
    assert line.meta == {"timestamp": "yesterday"}


# Issue 7: the log_analysis destination and ingestion read a line's time by one rule
# (tidegate.logs.timestamps), so the same value is never stored by one and refused or
# replaced by the other.
SHARED_TIMES: list[tuple[object, int | None]] = [
    (1_600_000_000_000, 1_600_000_000_000),
    (1_600_000_000_000.7, 1_600_000_000_000),
    ("1600000000000", 1_600_000_000_000),
    ("2025-01-02T03:04:05.678Z", 1_735_787_045_678),
    ("2025-01-02T05:04:05+02:00", 1_735_787_045_000),
    ("2025-01-02 03:04:05", 1_735_787_045_000),  # winston: no offset means UTC
    ("2025-01-02T03:04:05", 1_735_787_045_000),
    (-5000, None),
    ("-5000", None),
    (float("nan"), None),
    (10**20, None),
    ("\u00b2", None),
    ("9" * 5000, None),
    ("yesterday", None),
    (True, None),
    ({"a": 1}, None),
]


def test_event_time_follows_the_shared_rule_and_counts_fallbacks() -> None:
    for value, expected in SHARED_TIMES:
        line = event_to_line({"line": "x", "timestamp": value}, received_ms=RECEIVED)
        assert line.ts == (RECEIVED if expected is None else expected), value
        assert line.repaired is (expected is None), value


def test_ingestion_and_the_gateway_store_the_same_time() -> None:
    params = IngestParams(hostname="h")
    for value, _expected in SHARED_TIMES:
        ingested = build_line(
            {"line": "x", "timestamp": value}, params=params, default_ts=RECEIVED, tags=None
        )
        through_gateway = event_to_line({"line": "x", "timestamp": value}, received_ms=RECEIVED)
        assert (ingested.ts, ingested.repaired) == (
            through_gateway.ts,
            through_gateway.repaired,
        ), value


def test_an_event_without_a_time_field_is_not_a_fallback() -> None:
    line = event_to_line({"line": "x"}, received_ms=RECEIVED)
    assert (line.ts, line.repaired) == (RECEIVED, False)


def test_non_finite_and_huge_numbers_in_meta_are_stored_alike_on_both_backends() -> None:
    line = event_to_line(
        {"line": "x", "meta": {"nan": float("nan"), "inf": float("-inf"), "big": 10**30}},
        received_ms=RECEIVED,
    )
    assert line.meta == {"nan": None, "inf": None, "big": 1e30}
    whole = event_to_line({"big": 10**400}, received_ms=RECEIVED)
    assert orjson.loads(whole.line) == {"big": None}
