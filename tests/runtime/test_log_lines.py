"""How an event becomes a stored line (the log_analysis destination)."""

from __future__ import annotations

import orjson

from tidegate.runtime.log_lines import DEFAULT_HOST, event_to_line

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
