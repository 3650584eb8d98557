"""Every component type tidegate runs: adding one is a module and a line here."""

from __future__ import annotations

from typing import Final

from tidegate.components.destinations import (
    azure_blob_storage,
    blackhole,
    datadog_logs,
    datadog_metrics,
    elasticsearch,
    gcp_cloud_monitoring,
    gcp_cloud_operations,
    gcp_cloud_pubsub,
    gcp_cloud_storage,
    honeycomb_logs,
    kafka,
    loki,
    mezmo,
    new_relic,
    s3,
    splunk_hec_logs,
)
from tidegate.components.destinations import http as http_destination
from tidegate.components.destinations import prometheus_remote_write as prometheus_destination
from tidegate.components.processors import (
    aggregate,
    compact_fields,
    crypto_fields,
    data_profiler,
    dedupe,
    drop_fields,
    event_to_metric,
    flatten_fields,
    js_script,
    map_fields,
    metrics_tag_cardinality_limit,
    parse,
    parse_sequentially,
    reduce,
    route,
    sample,
    set_timestamp,
    stringify,
    throttle,
    trace_sampling,
    unroll,
)
from tidegate.components.processors import filter as filter_processor
from tidegate.components.registry import Registry
from tidegate.components.sources import (
    azure_event_hub,
    datadog_agent,
    demo_logs,
    fluent,
    kinesis_firehose,
    log_analysis_ingestion,
    logstash,
    mezmo_agent,
    open_telemetry_logs,
    open_telemetry_metrics,
    open_telemetry_traces,
    splunk_hec,
    sqs,
    webhook,
)
from tidegate.components.sources import http as http_source
from tidegate.components.sources import kafka as kafka_source
from tidegate.components.sources import prometheus_remote_write as prometheus_source
from tidegate.components.sources import s3 as s3_source

__all__ = ["REGISTRY"]

REGISTRY: Final = Registry(
    [
        http_source.COMPONENT,
        webhook.COMPONENT,
        demo_logs.COMPONENT,
        log_analysis_ingestion.COMPONENT,
        open_telemetry_logs.COMPONENT,
        open_telemetry_metrics.COMPONENT,
        open_telemetry_traces.COMPONENT,
        splunk_hec.COMPONENT,
        prometheus_source.COMPONENT,
        fluent.COMPONENT,
        logstash.COMPONENT,
        kinesis_firehose.COMPONENT,
        mezmo_agent.COMPONENT,
        sqs.COMPONENT,
        s3_source.COMPONENT,
        datadog_agent.COMPONENT,
        kafka_source.COMPONENT,
        azure_event_hub.COMPONENT,
        filter_processor.COMPONENT,
        throttle.COMPONENT,
        route.COMPONENT,
        sample.COMPONENT,
        dedupe.COMPONENT,
        drop_fields.COMPONENT,
        map_fields.COMPONENT,
        flatten_fields.COMPONENT,
        compact_fields.COMPONENT,
        stringify.COMPONENT,
        unroll.COMPONENT,
        set_timestamp.COMPONENT,
        parse.COMPONENT,
        parse_sequentially.COMPONENT,
        event_to_metric.COMPONENT,
        reduce.COMPONENT,
        aggregate.COMPONENT,
        crypto_fields.ENCRYPT,
        crypto_fields.DECRYPT,
        metrics_tag_cardinality_limit.COMPONENT,
        trace_sampling.COMPONENT,
        data_profiler.COMPONENT,
        js_script.COMPONENT,
        mezmo.COMPONENT,
        http_destination.COMPONENT,
        blackhole.COMPONENT,
        loki.COMPONENT,
        elasticsearch.COMPONENT,
        splunk_hec_logs.COMPONENT,
        s3.COMPONENT,
        prometheus_destination.COMPONENT,
        azure_blob_storage.COMPONENT,
        datadog_logs.COMPONENT,
        new_relic.COMPONENT,
        honeycomb_logs.COMPONENT,
        datadog_metrics.COMPONENT,
        gcp_cloud_pubsub.COMPONENT,
        gcp_cloud_operations.COMPONENT,
        gcp_cloud_storage.COMPONENT,
        gcp_cloud_monitoring.COMPONENT,
        kafka.COMPONENT,
    ]
)
