"""The grok, cef and timestamp parsers and the platform's aggregate inside a published
pipeline, saved with the bodies the platform's Terraform provider sends: events POSTed
to the gateway route reach a real HTTP receiver as the processors made them.
``loopback_client``: the receiver listens on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import orjson
from tests.components.factories import Step, delivered_ndjson
from tests.conftest import AppClient


async def _delivered(
    loopback_client: AppClient, steps: list[Step], events: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    body = await delivered_ndjson(loopback_client, steps, events)
    return [orjson.loads(line) for line in body.splitlines()]


async def test_cef_lines_their_time_and_a_grok_pattern_through_a_pipeline(
    loopback_client: AppClient,
) -> None:
    cef = {
        "field": ".message",
        "parser": "parse_cef",
        "target_field": ".cef",
        "options": {"translate_custom_fields": True},
    }
    time = {
        "field": ".cef.rt",
        "parser": "parse_timestamp",
        "target_field": "",
        "options": {"format": "Custom", "custom_format": "%b %d %Y %H:%M:%S"},
    }
    grok = {
        "field": ".cef.request",
        "parser": "parse_grok",
        "target_field": ".url",
        "options": {"pattern": "^%{URIPROTO:scheme}://%{URIHOST:host}%{URIPATHPARAM:path}$"},
    }
    steps: list[Step] = [
        ("cef", "processor", "parse", cef, ["source"]),
        ("time", "processor", "parse", time, ["cef"]),
        ("grok", "processor", "parse", grok, ["time"]),
    ]
    line = (
        "<134>Nov 22 08:00:02 fw1 CEF:0|Palo Alto|PAN-OS|10.1|url|Blocked \\| URL|7|"
        "rt=Nov 22 2025 08:00:01 src=10.0.0.5 request=https://example.com:8443/a?b=c "
        "cs1=corp cs1Label=Rule msg=policy a\\=b"
    )
    delivered = await _delivered(loopback_client, steps, [{"message": line}, {"message": "x"}])
    assert delivered == [
        {
            "message": line,
            "cef": {
                "cefVersion": "0",
                "deviceVendor": "Palo Alto",
                "deviceProduct": "PAN-OS",
                "deviceVersion": "10.1",
                "deviceEventClassId": "url",
                "name": "Blocked | URL",
                "severity": "7",
                "rt": "2025-11-22T08:00:01Z",
                "src": "10.0.0.5",
                "request": "https://example.com:8443/a?b=c",
                "msg": "policy a=b",
                "Rule": "corp",
            },
            "url": {
                "scheme": "https",
                "host": "example.com:8443",
                "port": "8443",
                "path": "/a?b=c",
            },
        },
        {"message": "x"},  # not CEF: every parser lets it pass unchanged
    ]


async def test_aggregate_windows_of_past_event_times_leave_at_once(
    loopback_client: AppClient,
) -> None:
    """Event times in the past: each tumbling window is over when its batch arrives, so
    the aggregate is emitted in the same request, whatever the wall clock says."""
    config = {
        "window": {"type": "tumbling", "interval": 60},
        "evaluate": {"operation": "SUM"},
        "group_by": [".tags.app"],
        "event_timestamp": ".ts",
    }
    steps: list[Step] = [("sum", "processor", "aggregate", config, ["source"])]
    base = 1_700_000_040_000  # a minute boundary

    def sample(value: int, app: str, host: str, offset_s: int) -> dict[str, Any]:
        return {
            "name": "requests",
            "kind": "incremental",
            "value": {"type": "counter", "value": value},
            "tags": {"app": app, "host": host},
            "ts": base + offset_s * 1000,
        }

    events = [
        sample(1, "api", "a", 1),
        sample(2, "api", "b", 30),
        sample(4, "web", "a", 59),
        sample(8, "api", "a", 61),
        {"message": "not a metric"},
    ]
    delivered = await _delivered(loopback_client, steps, events)
    assert delivered[0] == {"message": "not a metric"}
    summary = [
        (
            event["metadata"]["aggregate"]["start_timestamp"] - base,
            event["tags"],
            event["value"]["value"],
            event["metadata"]["aggregate"]["event_count"],
        )
        for event in delivered[1:]
    ]
    assert sorted(summary, key=lambda row: (row[0], row[1]["app"])) == [
        (0, {"app": "api"}, 3, 2),
        (0, {"app": "web", "host": "a"}, 4, 1),
        (60_000, {"app": "api", "host": "a"}, 8, 1),
    ]
