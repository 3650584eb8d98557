"""The OTLP metrics and traces decoders on messages built field by field: each data
point kind, what is skipped (values that are not finite), spans with links, status and
events, OTLP JSON's hex ids, and refusals."""

from __future__ import annotations

import math

import orjson
import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    AggregationTemporality,
    ExponentialHistogramDataPoint,
    Metric,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    SummaryDataPoint,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from tidegate.components.sources.open_telemetry_metrics import otlp_metric_events
from tidegate.components.sources.open_telemetry_traces import otlp_span_events
from tidegate.errors import BadRequest, UnsupportedMediaType

PROTOBUF = "application/x-protobuf"
T = 1_735_787_045_678_000_000
HOST = [KeyValue(key="host", value=AnyValue(string_value="web-1"))]


def _metrics(*metrics: Metric) -> bytes:
    request = ExportMetricsServiceRequest(
        resource_metrics=[ResourceMetrics(scope_metrics=[ScopeMetrics(metrics=list(metrics))])]
    )
    return bytes(request.SerializeToString())


def test_each_kind_of_data_point() -> None:
    gauge = Metric(name="temp", unit="C")
    gauge.gauge.data_points.extend(
        [
            NumberDataPoint(time_unix_nano=T, as_double=math.nan, attributes=HOST),
            NumberDataPoint(time_unix_nano=T, as_int=21, attributes=HOST),
        ]
    )
    delta = Metric(name="orders")
    delta.sum.is_monotonic = True
    delta.sum.aggregation_temporality = AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
    delta.sum.data_points.append(NumberDataPoint(time_unix_nano=T, as_double=2.5))
    exponential = Metric(name="sizes")
    point = ExponentialHistogramDataPoint(
        time_unix_nano=T, count=3, sum=math.inf, scale=2, zero_count=1
    )
    point.positive.offset = -1
    point.positive.bucket_counts.extend([1, 1])
    exponential.exponential_histogram.data_points.append(point)
    summary = Metric(name="latency")
    summary.summary.data_points.append(
        SummaryDataPoint(
            time_unix_nano=T,
            count=4,
            sum=2.0,
            quantile_values=[SummaryDataPoint.ValueAtQuantile(quantile=0.5, value=0.4)],
        )
    )
    events, is_json = otlp_metric_events(
        _metrics(gauge, delta, exponential, summary), content_type=PROTOBUF
    )
    assert not is_json
    assert events == [
        {
            "name": "temp",
            "kind": "absolute",
            "value": {"type": "gauge", "value": 21},
            "tags": {"host": "web-1"},
            "timestamp": 1_735_787_045_678,
            "unit": "C",
        },
        {
            "name": "orders",
            "kind": "incremental",
            "value": {"type": "counter", "value": 2.5},
            "tags": {},
            "timestamp": 1_735_787_045_678,
        },
        {
            "name": "sizes",
            "kind": "absolute",
            "value": {
                "type": "exponential_histogram",
                "value": {
                    "count": 3,
                    "scale": 2,
                    "zero_count": 1,
                    "positive": {"offset": -1, "bucket_counts": [1, 1]},
                },
            },
            "tags": {},
            "timestamp": 1_735_787_045_678,
        },
        {
            "name": "latency",
            "kind": "absolute",
            "value": {
                "type": "summary",
                "value": {"count": 4, "sum": 2.0, "quantiles": [{"quantile": 0.5, "value": 0.4}]},
            },
            "tags": {},
            "timestamp": 1_735_787_045_678,
        },
    ]


def _spans() -> ExportTraceServiceRequest:
    span = Span(
        trace_id=bytes.fromhex("5b8efff798038103d269b633813fc60c"),
        span_id=bytes.fromhex("eee19b7ec3c1b174"),
        parent_span_id=bytes.fromhex("eee19b7ec3c1b173"),
        name="consume",
        kind=Span.SpanKind.SPAN_KIND_CONSUMER,
        start_time_unix_nano=T,
        end_time_unix_nano=T + 2_500_000,
        status=Status(code=Status.StatusCode.STATUS_CODE_OK),
        links=[
            Span.Link(
                trace_id=bytes.fromhex("00000000000000000000000000000001"),
                span_id=bytes.fromhex("0000000000000002"),
            )
        ],
    )
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])]
    )


EXPECTED_SPAN = {
    "trace_id": "5b8efff798038103d269b633813fc60c",
    "span_id": "eee19b7ec3c1b174",
    "parent_span_id": "eee19b7ec3c1b173",
    "name": "consume",
    "kind": "consumer",
    "timestamp": 1_735_787_045_678,
    "start_time_unix_nano": T,
    "end_timestamp": 1_735_787_045_680,
    "end_time_unix_nano": T + 2_500_000,
    "duration_ms": 2.5,
    "status": {"code": "ok"},
    "links": [{"trace_id": "00000000000000000000000000000001", "span_id": "0000000000000002"}],
}


def test_a_span_in_protobuf_and_in_otlp_json() -> None:
    events, _ = otlp_span_events(_spans().SerializeToString(), content_type=PROTOBUF)
    assert events == [EXPECTED_SPAN]
    document = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "parentSpanId": "eee19b7ec3c1b173",
                                "name": "consume",
                                "kind": 5,
                                "startTimeUnixNano": str(T),
                                "endTimeUnixNano": str(T + 2_500_000),
                                "status": {"code": 1},
                                "links": [
                                    {
                                        "traceId": "00000000000000000000000000000001",
                                        "spanId": "0000000000000002",
                                    }
                                ],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    events, is_json = otlp_span_events(orjson.dumps(document), content_type="application/json")
    assert is_json
    assert events == [EXPECTED_SPAN]


@pytest.mark.parametrize(
    ("body", "content_type", "error"),
    [
        (b"\xff\xff", PROTOBUF, BadRequest),
        (b"[]", "application/json", BadRequest),
        (
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"abc"}]}]}]}',
            "application/json",
            BadRequest,
        ),
        (b"{}", "text/plain", UnsupportedMediaType),
    ],
)
def test_what_is_not_otlp_is_refused(
    body: bytes, content_type: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        otlp_span_events(body, content_type=content_type)
