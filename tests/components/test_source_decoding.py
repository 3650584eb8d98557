"""Issue 9: how the push sources turn request bodies into events (pure functions; the
same sources over real HTTP are in ``test_sources_live.py``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from tidegate.components.sources.decoding import decode_events
from tidegate.components.sources.demo_logs import DemoLogsConfig, demo_event
from tidegate.components.sources.open_telemetry_logs import otlp_answer, otlp_log_events
from tidegate.components.sources.splunk_hec import hec_events, hec_raw_events
from tidegate.errors import BadRequest, UnsupportedMediaType

# ---- http decoding ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("decoding", "content_type", "body", "expected"),
    [
        ("json", "application/json", b'{"a":1}', [{"a": 1}]),
        ("json", None, b'[{"a":1},{"b":2}]', [{"a": 1}, {"b": 2}]),
        ("ndjson", None, b'{"a":1}\n\n{"b":2}\n', [{"a": 1}, {"b": 2}]),
        ("bytes", "application/json", b'{"a":1}', [{"message": '{"a":1}'}]),
        ("bytes", None, b"plain \xff text\n", [{"message": "plain \ufffd text\n"}]),
        ("auto", "text/plain", b"hello", [{"message": "hello"}]),
        ("auto", "application/x-ndjson", b'{"a":1}', [{"a": 1}]),
        ("auto", "application/json", b'{"a":1}\n{"b":2}', [{"a": 1}, {"b": 2}]),
        ("auto", "application/octet-stream", b"\x00x", [{"message": "\ufffdx"}]),
    ],
)
def test_http_decoding(
    decoding: Any, content_type: str | None, body: bytes, expected: list[dict[str, Any]]
) -> None:
    assert decode_events(body, decoding=decoding, content_type=content_type) == expected


@pytest.mark.parametrize(
    ("decoding", "body"),
    [("json", b"hello"), ("json", b'"just a string"'), ("ndjson", b"[1]"), ("bytes", b"")],
)
def test_http_decoding_refuses_what_is_not_its_form(decoding: Any, body: bytes) -> None:
    with pytest.raises(BadRequest):
        decode_events(body, decoding=decoding, content_type=None)


# ---- splunk hec ---------------------------------------------------------------------


def test_hec_event_stream() -> None:
    body = (
        b'{"event":"hello","time":1700000000.25,"host":"h1","source":"s","sourcetype":"st",'
        b'"index":"main","fields":{"team":"core"}}'
        b'{"event":{"message":"obj","host":"inner"},"host":"outer"}\n'
        b'  {"event":12}'
    )
    assert hec_events(body, defaults={}) == [
        {
            "message": "hello",
            "host": "h1",
            "timestamp": 1_700_000_000_250,
            "splunk_source": "s",
            "splunk_sourcetype": "st",
            "splunk_index": "main",
            "team": "core",
        },
        {"message": "obj", "host": "inner"},
        {"message": 12},
    ]


@pytest.mark.parametrize(
    "body", [b'{"time":1}', b'{"event":""}', b"[1]", b'{"event":"x"} {bad', b"", b"NaN"]
)
def test_hec_event_refuses_bad_bodies(body: bytes) -> None:
    with pytest.raises(BadRequest):
        hec_events(body, defaults={})


def test_hec_raw_lines_with_query_defaults() -> None:
    events = hec_raw_events(b"one\n\ntwo\r\n", defaults={"host": "h", "sourcetype": "raw"})
    assert events == [
        {"message": "one", "host": "h", "splunk_sourcetype": "raw"},
        {"message": "two", "host": "h", "splunk_sourcetype": "raw"},
    ]


# ---- open telemetry logs -----------------------------------------------------------


def _kv(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def _otlp_request() -> ExportLogsServiceRequest:
    record = LogRecord(
        time_unix_nano=1_700_000_000_123_456_789,
        observed_time_unix_nano=1_700_000_001_000_000_000,
        severity_number=17,
        severity_text="ERROR",
        body=AnyValue(string_value="disk full"),
        attributes=[
            _kv("disk", AnyValue(string_value="/dev/sda1")),
            _kv("free", AnyValue(int_value=0)),
            _kv("ratio", AnyValue(double_value=0.5)),
            _kv("ok", AnyValue(bool_value=False)),
            _kv("list", AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1)]))),
            _kv(
                "nested",
                AnyValue(kvlist_value=KeyValueList(values=[_kv("k", AnyValue(string_value="v"))])),
            ),
        ],
        trace_id=bytes.fromhex("5b8efff798038103d269b633813fc60c"),
        span_id=bytes.fromhex("eee19b7ec3c1b174"),
        flags=1,
    )
    return ExportLogsServiceRequest(
        resource_logs=[
            ResourceLogs(
                resource=Resource(attributes=[_kv("service.name", AnyValue(string_value="api"))]),
                scope_logs=[
                    ScopeLogs(
                        scope=InstrumentationScope(name="app.logger", version="1.0"),
                        log_records=[record, LogRecord(body=AnyValue(string_value="bare"))],
                    )
                ],
            )
        ]
    )


EXPECTED_OTLP = [
    {
        "message": "disk full",
        "timestamp": 1_700_000_000_123,
        "observed_timestamp": 1_700_000_001_000,
        "severity_text": "ERROR",
        "severity_number": 17,
        "attributes": {
            "disk": "/dev/sda1",
            "free": 0,
            "ratio": 0.5,
            "ok": False,
            "list": [1],
            "nested": {"k": "v"},
        },
        "resources": {"service.name": "api"},
        "scope": {"name": "app.logger", "version": "1.0"},
        "trace_id": "5b8efff798038103d269b633813fc60c",
        "span_id": "eee19b7ec3c1b174",
        "flags": 1,
    },
    {
        "message": "bare",
        "resources": {"service.name": "api"},
        "scope": {"name": "app.logger", "version": "1.0"},
    },
]


def test_otlp_protobuf() -> None:
    body = _otlp_request().SerializeToString()
    events, is_json = otlp_log_events(body, content_type="application/x-protobuf")
    assert (events, is_json) == (EXPECTED_OTLP, False)
    answer, media = otlp_answer(is_json)
    assert media == "application/x-protobuf"
    ExportLogsServiceResponse().ParseFromString(answer)


def test_otlp_json_with_hex_ids() -> None:
    document = {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "api"}}]
                },
                "scopeLogs": [
                    {
                        "scope": {"name": "app.logger", "version": "1.0"},
                        "logRecords": [
                            {
                                "timeUnixNano": "1700000000123456789",
                                "observedTimeUnixNano": "1700000001000000000",
                                "severityNumber": 17,
                                "severityText": "ERROR",
                                "body": {"stringValue": "disk full"},
                                "attributes": [
                                    {"key": "disk", "value": {"stringValue": "/dev/sda1"}},
                                    {"key": "free", "value": {"intValue": "0"}},
                                    {"key": "ratio", "value": {"doubleValue": 0.5}},
                                    {"key": "ok", "value": {"boolValue": False}},
                                    {
                                        "key": "list",
                                        "value": {"arrayValue": {"values": [{"intValue": 1}]}},
                                    },
                                    {
                                        "key": "nested",
                                        "value": {
                                            "kvlistValue": {
                                                "values": [
                                                    {"key": "k", "value": {"stringValue": "v"}}
                                                ]
                                            }
                                        },
                                    },
                                ],
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "flags": 1,
                            },
                            {"body": {"stringValue": "bare"}},
                        ],
                    }
                ],
            }
        ]
    }
    events, is_json = otlp_log_events(orjson.dumps(document), content_type="application/json")
    assert (events, is_json) == (EXPECTED_OTLP, True)
    assert otlp_answer(is_json) == (b"{}", "application/json")


@pytest.mark.parametrize(
    ("body", "content_type", "error"),
    [
        (b"\xff\xff\xff", "application/x-protobuf", BadRequest),
        (b"[]", "application/json", BadRequest),
        (b'{"resourceLogs": 5}', "application/json", BadRequest),
        (b"{}", "text/plain", UnsupportedMediaType),
    ],
)
def test_otlp_refuses_bad_bodies(body: bytes, content_type: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        otlp_log_events(body, content_type=content_type)


# ---- demo logs ----------------------------------------------------------------------

NOW = 1_735_787_045_678


@pytest.mark.parametrize(
    ("format_", "pattern"),
    [
        (
            "apache_common",
            r'^10\.0\.\d+\.\d+ - - \[02/Jan/2025:03:04:05 \+0000\] "[A-Z]+ \S+ HTTP/1\.1" \d{3} \d+$',
        ),
        (
            "apache_error",
            r"^\[Thu Jan 02 03:04:05\.678000 2025\] \[\w+:\w+\] \[pid \d+\] \[client [\d.]+\] .+$",
        ),
        ("syslog", r"^<\d+>1 2025-01-02T03:04:05\.678Z \S+ \S+ \d+ ID\d+ - .+$"),
        ("bsd_syslog", r"^<\d+>Jan  2 03:04:05 \S+ \S+\[\d+\]: .+$"),
        (
            "nginx",
            r'^10\.0\.\d+\.\d+ - - \[02/Jan/2025:03:04:05 \+0000\] "[A-Z]+ \S+ HTTP/1\.1" '
            r'\d{3} \d+ "-" "[^"]+"$',
        ),
    ],
)
def test_demo_logs_formats(format_: Any, pattern: str) -> None:
    config = DemoLogsConfig.model_validate({"format": format_})
    for number in range(20):
        event = demo_event(config, number, NOW)
        assert event["timestamp"] == NOW
        assert re.match(pattern, event["message"]), event["message"]


@pytest.mark.parametrize(
    ("moment", "stamp"),
    [
        (datetime(2026, 11, 28, 0, 23, 46, tzinfo=UTC), "Nov 28 00:23:46"),
        (datetime(2026, 11, 5, 9, 3, 4, tzinfo=UTC), "Nov  5 09:03:04"),
        (datetime(2026, 11, 10, 10, 0, 0, tzinfo=UTC), "Nov 10 10:00:00"),
    ],
)
def test_bsd_syslog_pads_the_day_and_never_the_hour(moment: datetime, stamp: str) -> None:
    # Once " 0" was replaced by two spaces: right for "Nov 05", but on a two-digit day
    # between midnight and ten it turned "Nov 28 00:23:46" into "Nov 28  0:23:46".
    config = DemoLogsConfig.model_validate({"format": "bsd_syslog"})
    event = demo_event(config, 1, int(moment.timestamp() * 1000))
    assert event["message"].split(">", 1)[1].startswith(stamp + " ")


def test_demo_logs_json_and_shuffle() -> None:
    event = demo_event(DemoLogsConfig(), 3, NOW)
    assert orjson.loads(event["message"])["status"] == event["status"]
    assert {"host", "app", "level", "path"} <= set(event)
    shuffle = DemoLogsConfig.model_validate({"format": "shuffle", "lines": ["a", "b"]})
    assert [demo_event(shuffle, n, NOW)["message"] for n in range(3)] == ["a", "b", "a"]
    with pytest.raises(ValueError, match="lines"):
        DemoLogsConfig.model_validate({"format": "shuffle"})


@pytest.mark.parametrize(
    ("format_", "fields"),
    [
        ("financial", {"symbol", "side", "price", "quantity"}),
        ("env_sensor", {"sensor_id", "location", "temperature_c", "humidity"}),
        ("http_metrics", {"name", "kind", "tags", "value"}),
        ("generic_metrics", {"name", "kind", "tags", "value"}),
    ],
)
def test_demo_logs_structured_formats_of_the_provider(format_: Any, fields: set[str]) -> None:
    config = DemoLogsConfig.model_validate({"format": format_})
    for number in range(5):
        event = demo_event(config, number, NOW)
        assert set(event) == {*fields, "timestamp", "message"}
        assert orjson.loads(event["message"]) == {name: event[name] for name in fields}
    if format_.endswith("metrics"):
        assert set(event["value"]) == {"type", "value"}
    with pytest.raises(ValueError, match="interval_secs"):
        DemoLogsConfig.model_validate({"interval_secs": 0.01})
