"""The bodies the platform's Terraform provider (``mezmo/terraform-provider-mezmo``
v5.0.0) sends for its pipeline node resources, written here as its converters build
them: ``internal/provider/models/{sources,processors,destinations}/<name>.go``, the
``...FromModel`` functions, with the schema defaults it fills in (``Default:`` in the
same files) and the values of its own tests (``.../test/<name>_test.go``).

``APPLIES``: resources tidegate must take and read back without drift.
``REFUSED``: resources of the provider tidegate does not take yet (each listed in
``docs/components.md``), kept here so the replay walks every one and a change in
either direction shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Resource:
    name: str
    """The provider's resource, ``mezmo_<name>``."""
    segment: str
    """``source``, ``transform`` or ``sink``: where the provider sends it."""
    type: str
    user_config: dict[str, Any]
    computed: dict[str, Any] = field(default_factory=dict)
    """What the server adds that the provider reads back as computed attributes (a
    default it left unknown and did not send): read back beside ``user_config``."""


BASIC = {"strategy": "basic", "user": "u", "password": "p"}
A_KEY = "0123456789abcdef0123456789abcdef"  # 32 bytes: AES-256
# modelutils/conditional_types.go: UnwindConditionalFromModel's output.
ERRORS = {
    "logical_operation": "AND",
    "expressions": [
        {"field": ".level", "str_operator": "equal", "value": "error", "negate": False}
    ],
}

APPLIES: list[Resource] = [
    # destinations/mezmo.go: MezmoDestinationFromModel; mezmo_host and log_construction_scheme
    # defaults ("logs.logdna.com", "explicit" -> "Explicit field selection").
    Resource(
        "logs_destination",
        "sink",
        "mezmo",
        {
            "ack_enabled": True,
            "mezmo_host": "logs.logdna.com",
            "use_ingestion_key": False,
            "message": {"scheme": "Explicit field selection"},
        },
    ),
    Resource(
        "logs_destination (ingestion key, query, explicit fields)",
        "sink",
        "mezmo",
        {
            "ack_enabled": False,
            "mezmo_host": "logs.logdna.com",
            "use_ingestion_key": True,
            "ingestion_key": "an-ingestion-key",
            "query": {"hostname": "h", "ip": "10.0.0.1", "tags": ["a", "b"]},
            "message": {
                "scheme": "Explicit field selection",
                "line": ".message",
                "app": ".app",
                "meta_field": ".meta",
                "timestamp_field": ".ts",
            },
        },
    ),
    Resource(
        "logs_destination (pass-through)",
        "sink",
        "mezmo",
        {
            "ack_enabled": True,
            "mezmo_host": "logs.logdna.com",
            "use_ingestion_key": False,
            "message": {"scheme": "Message pass-through"},
        },
    ),
    # destinations/elasticsearch.go: every auth attribute is sent (defaults "").
    Resource(
        "elasticsearch_destination",
        "sink",
        "elasticsearch",
        {
            "compression": "none",
            "index": "mezmo-%Y.%m.%d",
            "ack_enabled": True,
            "endpoints": ["https://es.example.com:9200"],
            "auth": {**BASIC, "access_key_id": "", "secret_access_key": "", "region": ""},
            "pipeline": "ingest",
        },
    ),
    # destinations/loki.go: LokiFromModel (encoding {"codec"}, labels as a list).
    Resource(
        "loki_destination",
        "sink",
        "loki",
        {
            "endpoint": "https://loki.example.com",
            "path": "/loki/api/v1/push",
            "ack_enabled": True,
            "auth": BASIC,
            "encoding": {"codec": "json"},
            "labels": [{"label_name": "app", "label_value": "{{ .app }}"}],
        },
    ),
    # destinations/splunk_hec_logs.go: SplunkHecLogsDestinationFromModel, defaults
    # metadata.host, metadata.time, "none"; splunkValueTypeFromModel.
    Resource(
        "splunk_hec_logs_destination",
        "sink",
        "splunk-hec-logs",
        {
            "ack_enabled": True,
            "compression": "none",
            "url": "https://splunk.example.com:8088",
            "token": "a-hec-token",
            "tls_verify_certificate": True,
            "host_field": "metadata.host",
            "timestamp_field": "metadata.time",
            "source": {"value_type": "none"},
            "sourcetype": {"value_type": "field", "value": ".kind"},
            "index": {"value_type": "value", "value": "main"},
        },
    ),
    # sources/webhook.go: WebhookSourceFromModel sends an empty user_config.
    Resource("webhook_source", "source", "webhook", {}),
    # processors/dedupe.go: comparison_type default "Match", number_of_events 5000.
    Resource(
        "dedupe_processor",
        "transform",
        "dedupe",
        {"fields": [".a"], "number_of_events": 5000, "comparison_type": "Match"},
    ),
    Resource(
        "dedupe_processor (Ignore)",
        "transform",
        "dedupe",
        {"fields": [".b"], "number_of_events": 2, "comparison_type": "Ignore"},
    ),
    # processors/compact_fields.go: options{compact_array, compact_object}, defaults true.
    Resource(
        "compact_fields_processor",
        "transform",
        "compact-fields",
        {"options": {"compact_array": True, "compact_object": False}, "fields": [".a"]},
    ),
    # processors/flatten_fields.go: options{delimiter}, default "_".
    Resource(
        "flatten_fields_processor",
        "transform",
        "flatten-fields",
        {"fields": [], "options": {"delimiter": "_"}},
    ),
    # processors/set_timestamp.go: each parser's options{format: "Custom", custom_format}.
    Resource(
        "set_timestamp_processor",
        "transform",
        "set-timestamp",
        {
            "parsers": [
                {
                    "field": ".ts",
                    "options": {"format": "Custom", "custom_format": "%Y-%m-%d %H:%M:%S"},
                }
            ]
        },
    ),
    # processors/reduce.go and its test "default_values" step: lists of {field, ...}.
    Resource(
        "reduce_processor",
        "transform",
        "reduce",
        {
            "duration_ms": 30000,
            "max_events": 3,
            "group_by": [".field1.id"],
            "date_formats": [{"field": ".datetime", "format": "%d/%m/%Y:%T"}],
            "merge_strategies": [{"field": ".method", "strategy": "array"}],
        },
    ),
    # sources/http.go, demo.go, splunk-hec.go, log-analysis-ingestion.go,
    # open_telemetry_logs.go.
    Resource("http_source", "source", "http", {"decoding": "json"}),
    Resource("demo_source", "source", "demo-logs", {"format": "nginx"}),
    Resource("splunk_hec_source", "source", "splunk-hec", {}),
    Resource("log_analysis_ingestion_source", "source", "log-analysis-ingestion", {}),
    Resource("open_telemetry_logs_source", "source", "open-telemetry-logs", {}),
    # sources/open_telemetry_metrics.go, open_telemetry_traces.go: empty user_configs.
    Resource("open_telemetry_metrics_source", "source", "open-telemetry-metrics", {}),
    Resource("open_telemetry_traces_source", "source", "open-telemetry-traces", {}),
    # sources/prometheus_remote_write.go: an empty user_config.
    Resource("prometheus_remote_write_source", "source", "prometheus-remote-write", {}),
    # destinations/blackhole.go.
    Resource("blackhole_destination", "sink", "blackhole", {"ack_enabled": True}),
    # destinations/http.go: HttpDestinationFromModel; advanced_options is always sent.
    Resource(
        "http_destination",
        "sink",
        "http",
        {
            "uri": "https://collector.example.com/in",
            "encoding": "json",
            "compression": "gzip",
            "ack_enabled": True,
            "auth": {"strategy": "none"},
            "advanced_options": {},
        },
    ),
    Resource(
        "http_destination (advanced_options)",
        "sink",
        "http",
        {
            "uri": "https://collector.example.com/in",
            "encoding": "ndjson",
            "compression": "none",
            "ack_enabled": False,
            "auth": {"strategy": "basic", "user": "u", "password": "p"},
            "headers": [{"header_name": "x-team", "header_value": "edge"}],
            "advanced_options": {
                "max_bytes": 2_000_000,
                "timeout_secs": 10,
                "method": "put",
                "payload_prefix": '{"data":',
                "payload_suffix": "}",
                "proxy": {"enabled": False},
            },
        },
    ),
    # processors/*.go: the converters of the other processors.
    Resource("drop_fields_processor", "transform", "drop-fields", {"fields": [".a", ".b"]}),
    Resource(
        "map_fields_processor",
        "transform",
        "map-fields",
        {
            "mappings": [
                {
                    "source_field": ".a",
                    "target_field": ".b",
                    "drop_source": True,
                    "overwrite": False,
                }
            ]
        },
    ),
    Resource("stringify_processor", "transform", "stringify", {}),
    Resource("unroll_processor", "transform", "unroll", {"field": ".items", "values_only": True}),
    Resource(
        "sample_processor",
        "transform",
        "sample",
        {
            "rate": 10,
            "always_include": {
                "field": ".level",
                "str_operator": "equal",
                "value": "error",
                "case_sensitive": True,
                "negate": False,
            },
        },
    ),
    # processors/parse.go with modelutils/parsers.go: parser "parse_nginx_log", options.
    Resource(
        "parse_processor (nginx_log)",
        "transform",
        "parse",
        {
            "field": ".message",
            "target_field": ".parsed",
            "parser": "parse_nginx_log",
            "options": {"format": "combined", "timestamp_format": "%d/%b/%Y:%T %z"},
        },
    ),
    Resource(
        "parse_processor (regex_parser)",
        "transform",
        "parse",
        {
            "field": ".message",
            "parser": "parse_regex",
            "options": {
                "pattern": "(?P<word>\\w+)",
                "case_sensitive": True,
                "multiline": False,
                "match_newline": False,
                "crlf_newline": False,
            },
        },
    ),
    Resource(
        "parse_processor (csv_row)",
        "transform",
        "parse",
        {"field": ".message", "parser": "parse_csv", "options": {"field_names": ["a", "b"]}},
    ),
    # processors/encrypt_fields.go and modelutils/encryption_algorithms.go.
    Resource(
        "encrypt_fields_processor (AES-256-CFB)",
        "transform",
        "encrypt-fields",
        {
            "field": ".secret",
            "algorithm": "AES-256-CFB",
            "key": A_KEY,
            "iv_field": ".iv",
            "encode_raw_bytes": True,
        },
    ),
    Resource(
        "encrypt_fields_processor (AES-128-CBC-PKCS7)",
        "transform",
        "encrypt-fields",
        {
            "field": ".secret",
            "algorithm": "AES-128-CBC-PKCS7",
            "key": A_KEY[:16],
            "iv_field": ".iv",
            "encode_raw_bytes": True,
        },
    ),
    Resource(
        "decrypt_fields_processor (AES-256-CTR)",
        "transform",
        "decrypt-fields",
        {
            "field": ".secret",
            "algorithm": "AES-256-CTR",
            "key": A_KEY,
            "iv_field": ".iv",
            "decode_raw_bytes": True,
        },
    ),
    # processors/event_to_metric.go: value and namespace as {value_type, value}.
    Resource(
        "event_to_metric_processor",
        "transform",
        "event-to-metric",
        {
            "metric_name": "requests",
            "metric_kind": "incremental",
            "metric_type": "counter",
            "value": {"value_type": "value", "value": 1.0},
            "namespace": {"value_type": "none"},
            "tags": [{"name": "app", "value_type": "field", "value": ".app"}],
        },
    ),
    # processors/parse_sequentially.go: VRL parser names, a label per parser; it reads
    # back each parser's _output_name and finds it among the node's outputs.
    Resource(
        "parse_sequentially_processor",
        "transform",
        "parse-sequentially",
        {
            "field": ".message",
            "parsers": [{"parser": "parse_json", "label": "json"}],
        },
    ),
    # processors/route.go: conditionalsFromModel ({conditional, label}); it reads back
    # each conditional's _output_name.
    Resource(
        "route_processor",
        "transform",
        "route",
        {"conditionals": [{"conditional": ERRORS, "label": "Errors"}]},
    ),
    Resource(
        "filter_processor",
        "transform",
        "filter",
        {"action": "allow", "conditional": ERRORS},
    ),
    Resource(
        "throttle_processor",
        "transform",
        "throttle",
        {"threshold": 10, "window_ms": 1000, "key_field": ".app", "exclude": ERRORS},
    ),
    # processors/metrics_tag_cardinality_limit.go: ...FromModel with the schema's defaults
    # (action "drop_event", mode "exact"), as its test's "Create with defaults"...
    Resource(
        "metrics_tag_cardinality_limit_processor",
        "transform",
        "metrics-tag-cardinality-limit",
        {"action": "drop_event", "value_limit": 50, "mode": "exact"},
    ),
    # ...its "Update fields" step...
    Resource(
        "metrics_tag_cardinality_limit_processor (drop_tag)",
        "transform",
        "metrics-tag-cardinality-limit",
        {
            "tags": ["include_me"],
            "exclude_tags": ["exclude_me"],
            "action": "drop_tag",
            "value_limit": 150,
            "mode": "probabilistic",
        },
    ),
    # ...and pkg/resources/testdata/processors/metrics_tag_cardinality_limit.json's
    # user_config (its mode spelt "probabalistic").
    Resource(
        "metrics_tag_cardinality_limit_processor (testdata)",
        "transform",
        "metrics-tag-cardinality-limit",
        {
            "tags": ["include_tag"],
            "exclude_tags": ["exclude_tag"],
            "action": "drop_event",
            "mode": "probabalistic",
            "value_limit": 50,
        },
    ),
    # processors/trace_sampling.go: TraceSamplingProcessorFromModel. trace_id_field and
    # rate are optional and computed: left unset, they are not sent, and the provider
    # reads back the platform's defaults (its test: rate "10", trace_id_field ".trace_id").
    Resource(
        "trace_sampling_processor (head, defaults)",
        "transform",
        "trace-sampling",
        {"sample_type": "head"},
        computed={"trace_id_field": ".trace_id", "rate": 10},
    ),
    Resource(
        "trace_sampling_processor (head)",
        "transform",
        "trace-sampling",
        {"sample_type": "head", "trace_id_field": ".trace_id_y", "rate": 15},
    ),
    # Tail: each conditional as UnwindConditionalFromModel builds it (value_number as a
    # float), rate, and _output_name (sent empty when unset; read back).
    Resource(
        "trace_sampling_processor (tail)",
        "transform",
        "trace-sampling",
        {
            "sample_type": "tail",
            "conditionals": [
                {
                    "conditional": {
                        "logical_operation": "AND",
                        "expressions": [
                            {
                                "field": ".status",
                                "str_operator": "equal",
                                "value": 200.0,
                                "negate": False,
                            }
                        ],
                    },
                    "rate": 15,
                    "_output_name": "ab1869cd",
                },
                {"conditional": ERRORS, "rate": 1, "_output_name": ""},
            ],
        },
        computed={"trace_id_field": ".trace_id", "parent_span_id_field": ".parent_span_id"},
    ),
    # pkg/resources/testdata/processors/trace_sampling.json's user_config.
    Resource(
        "trace_sampling_processor (testdata)",
        "transform",
        "trace-sampling",
        {
            "sample_type": "tail",
            "trace_id_field": ".trace_id",
            "parent_span_id_field": ".parent_span_id",
            "conditionals": [
                {
                    "rate": 1,
                    "conditional": {
                        "expressions": [
                            {"field": ".status", "value": "500", "str_operator": "greater_or_equal"}
                        ]
                    },
                    "_output_name": "abc",
                },
                {
                    "rate": 10,
                    "conditional": {
                        "expressions": [
                            {
                                "field": ".status",
                                "value": "400",
                                "str_operator": "greater_or_equal",
                            },
                            {"field": ".status", "value": "500", "str_operator": "less"},
                        ],
                        "logical_operation": "AND",
                    },
                    "_output_name": "def",
                },
            ],
        },
    ),
    # processors/data_profiler.go: DataProfilerProcessorFromModel, its test's "Success"
    # step (no label_fields: not sent)...
    Resource(
        "data_profiler_processor",
        "transform",
        "data-profiler",
        {
            "app_fields": [".app"],
            "host_fields": [".host", ".hostname"],
            "level_fields": [".level", ".log_level"],
            "line_fields": [".line", ".message"],
        },
    ),
    # ...and pkg/resources/testdata/processors/data_profiler.json's user_config.
    Resource(
        "data_profiler_processor (testdata)",
        "transform",
        "data-profiler",
        {
            "app_fields": [".app", ".container"],
            "host_fields": [".host", ".hostname"],
            "level_fields": [".level", ".log_level"],
            "line_fields": [".line", ".message"],
            "label_fields": [".labels"],
        },
    ),
    # destinations/s3.go: S3DestinationFromModel with the schema's defaults (prefix "/",
    # encoding "text", compression "none", batch_timeout_secs 300, ack_enabled true)...
    Resource(
        "s3_destination",
        "sink",
        "s3",
        {
            "ack_enabled": True,
            "batch_timeout_secs": 300,
            "auth": {"access_key_id": "AKIAEXAMPLE", "secret_access_key": "secret"},
            "region": "us-east-1",
            "bucket": "logs-bucket",
            "prefix": "/",
            "encoding": "text",
            "compression": "none",
        },
    ),
    # ...and pkg/resources/testdata/destinations/s3.json's user_config, with the
    # file_consolidation block the converter adds when it is set.
    Resource(
        "s3_destination (testdata)",
        "sink",
        "s3",
        {
            "ack_enabled": False,
            "batch_timeout_secs": 5000,
            "auth": {"access_key_id": "access key", "secret_access_key": "secret"},
            "region": "us-east-1",
            "bucket": "user_logs",
            "prefix": "error_",
            "encoding": "json",
            "compression": "gzip",
            "file_consolidation": {
                "enabled": False,
                "process_every_seconds": 600,
                "requested_size_bytes": 500000000,
                "base_path": "merged",
            },
        },
    ),
]

APPLIES += [
    # destinations/prometheus_remote_write.go: PrometheusRemoteWriteDestinationFromModel,
    # every auth attribute sent (defaults ""), {"strategy": "none"} without auth...
    Resource(
        "prometheus_remote_write_destination",
        "sink",
        "prometheus-remote-write",
        {
            "endpoint": "https://prometheus.example.com/api/v1/write",
            "ack_enabled": True,
            "auth": {"strategy": "bearer", "user": "", "password": "", "token": "a-token"},
        },
    ),
    Resource(
        "prometheus_remote_write_destination (no auth)",
        "sink",
        "prometheus-remote-write",
        {"endpoint": "https://prometheus.example.com/api/v1/write", "auth": {"strategy": "none"}},
    ),
    # ...and pkg/resources/testdata/destinations/prometheus_remote_write.json.
    Resource(
        "prometheus_remote_write_destination (testdata)",
        "sink",
        "prometheus-remote-write",
        {
            "ack_enabled": False,
            "endpoint": "http://prometheus-remote-write.dev",
            "auth": {"strategy": "basic", "user": "user", "password": "password"},
        },
    ),
]

AZURE = (
    "DefaultEndpointsProtocol=https;AccountName=tidegateexample;"
    "AccountKey=c2VjcmV0LWtleS1mb3ItdGVzdHM=;EndpointSuffix=core.windows.net"
)
APPLIES += [
    # destinations/azure_blob_storage.go: AzureBlobStorageFromModel with the schema's
    # defaults (encoding "text", compression "none", ack_enabled true, batch 300 s);
    # prefix only when set...
    Resource(
        "azure_blob_storage_destination",
        "sink",
        "azure-blob-storage",
        {
            "ack_enabled": True,
            "batch_timeout_secs": 300,
            "encoding": "text",
            "compression": "none",
            "container_name": "logs",
            "connection_string": AZURE,
        },
    ),
    # ...with prefix and the file_consolidation block (file_consolidation.go defaults).
    Resource(
        "azure_blob_storage_destination (prefix, file_consolidation)",
        "sink",
        "azure-blob-storage",
        {
            "ack_enabled": False,
            "batch_timeout_secs": 4000,
            "encoding": "json",
            "compression": "gzip",
            "container_name": "logs",
            "connection_string": AZURE,
            "prefix": "error_",
            "file_consolidation": {
                "enabled": False,
                "process_every_seconds": 600,
                "requested_size_bytes": 500000000,
                "base_path": "",
            },
        },
    ),
]

APPLIES += [
    # destinations/datadog_logs.go: DatadogLogsFromModel (every attribute sent).
    Resource(
        "datadog_logs_destination",
        "sink",
        "datadog-logs",
        {"api_key": "my secret key", "site": "eu1", "compression": "gzip", "ack_enabled": True},
    ),
    # destinations/new_relic.go: NewRelicDestinationFromModel (api default "logs"), and
    # new_relic_test.go's metrics case.
    Resource(
        "new_relic_destination",
        "sink",
        "new-relic",
        {"ack_enabled": True, "api": "logs", "account_id": "acc1", "license_key": "key1"},
    ),
    Resource(
        "new_relic_destination (metrics)",
        "sink",
        "new-relic",
        {"ack_enabled": False, "api": "metrics", "account_id": "acc2", "license_key": "key2"},
    ),
    # destinations/honeycomb_logs.go, and pkg/resources/testdata/destinations/honeycomb_logs.json.
    Resource(
        "honeycomb_logs_destination",
        "sink",
        "honeycomb-logs",
        {"ack_enabled": True, "api_key": "my api key", "dataset": "dataset name"},
    ),
]

REFUSED: list[Resource] = [
    # processors/trace_sampling.go refuses these before sending; the server does too.
    Resource(
        "trace_sampling_processor (head with conditionals)",
        "transform",
        "trace-sampling",
        {"sample_type": "head", "rate": 10, "conditionals": [{"conditional": ERRORS, "rate": 1}]},
    ),
    Resource(
        "trace_sampling_processor (tail without conditionals)",
        "transform",
        "trace-sampling",
        {"sample_type": "tail"},
    ),
    # data_profiler_test.go: "Must be a valid data access syntax".
    Resource(
        "data_profiler_processor (not a field path)",
        "transform",
        "data-profiler",
        {
            "app_fields": ["not-valid-field-reference"],
            "host_fields": [".host"],
            "level_fields": [".level"],
            "line_fields": [".line"],
        },
    ),
    # Merging small objects into large ones is not built: enabled is refused.
    Resource(
        "s3_destination (file_consolidation enabled)",
        "sink",
        "s3",
        {
            "auth": {"access_key_id": "k", "secret_access_key": "s"},
            "region": "us-east-1",
            "bucket": "b",
            "file_consolidation": {"enabled": True},
        },
    ),
    # processors/aggregate.go: an interval past 25 hours (aggregate_test.go's
    # "server-side validation" step expects an error naming /user_config/window/interval).
    Resource(
        "aggregate_processor (interval too large)",
        "transform",
        "aggregate",
        {
            "window": {"type": "sliding", "interval": 305325235325, "window_min": 10},
            "evaluate": {"operation": "AVG"},
        },
    ),
    # A grok pattern naming no pattern of the library.
    Resource(
        "parse_processor (grok_parser: unknown name)",
        "transform",
        "parse",
        {"field": ".something", "parser": "parse_grok", "options": {"pattern": "%{NOG:x}"}},
    ),
]

# processors/parse.go (ParseProcessorFromModel) with the values of parse_test.go: the
# parser's VRL name, its options object, and target_field "" (unset, it is unknown in
# the plan, not null, and sent as its empty value).
APPLIES += [
    Resource(
        "parse_processor (json_parser, target_field unset)",
        "transform",
        "parse",
        {"field": ".something", "parser": "parse_json", "target_field": ""},
    ),
    Resource(
        "parse_sequentially_processor (target_field unset)",
        "transform",
        "parse-sequentially",
        {
            "field": ".something",
            "target_field": "",
            "parsers": [{"parser": "parse_json", "label": "json"}],
        },
    ),
    Resource(
        "parse_processor (grok_parser)",
        "transform",
        "parse",
        {
            "field": ".something",
            "parser": "parse_grok",
            "target_field": "",
            "options": {"pattern": "%{USERNAME:user} %{EMAILADDRESS:email}"},
        },
    ),
    Resource(
        "parse_processor (cef_log)",
        "transform",
        "parse",
        {"field": ".something", "parser": "parse_cef", "target_field": ""},
    ),
    Resource(
        "parse_processor (cef_log, translate_custom_fields)",
        "transform",
        "parse",
        {
            "field": ".something",
            "parser": "parse_cef",
            "target_field": "",
            "options": {"translate_custom_fields": True},
        },
    ),
    Resource(
        "parse_processor (timestamp_parser)",
        "transform",
        "parse",
        {
            "field": ".something",
            "parser": "parse_timestamp",
            "target_field": "",
            "options": {"format": "%a %d %b %T %Y"},
        },
    ),
    Resource(
        "parse_processor (timestamp_parser, Custom)",
        "transform",
        "parse",
        {
            "field": ".something",
            "parser": "parse_timestamp",
            "target_field": "",
            "options": {"format": "Custom", "custom_format": "%Y/%m/%d %H:%M:%S"},
        },
    ),
]

# modelutils/parsers.go's parsers of no options: the VRL name alone.
APPLIES += [
    Resource(
        f"parse_processor ({label})",
        "transform",
        "parse",
        {"field": ".something", "parser": vrl_name, "target_field": ""},
    )
    for label, vrl_name in [
        ("querystring_parser", "parse_query_string"),
        ("url_parser", "parse_url"),
        ("token_parser", "parse_tokens"),
        ("int_parser", "parse_int"),
        ("klog", "parse_klog"),
        ("glog", "parse_glog"),
        ("linux_authorization_log", "parse_linux_authorization"),
        ("aws_vpc_flow_log", "parse_aws_vpc_flow_log"),
        ("aws_cloudwatch_log", "parse_aws_cloudwatch_log_subscription_message"),
        ("aws_alb_log", "parse_aws_alb_log"),
        ("user_agent_parser", "parse_user_agent"),
    ]
]

# processors/aggregate.go: AggregateProcessorFromModel sends window{type, interval,
# window_min (sliding only)} and evaluate{operation} (modelutils/aggregate.go's names),
# conditional, group_by and event_timestamp when set. event_timestamp and window_min
# are optional and computed: the provider reads back the server's (its test expects
# event_timestamp "timestamp"), so the server stores them.
_SUM_HOUR = {"window": {"type": "tumbling", "interval": 3600}, "evaluate": {"operation": "SUM"}}
_HOUR_READ_BACK = {"type": "tumbling", "interval": 3600, "window_min": 3600}
_SLIDING = {"type": "sliding", "interval": 10, "window_min": 10}
AGGREGATE_TEST_SCRIPT = 'function process(event, metadata) { event.foo = "bar"; return event }'


def _status_200(negate: bool) -> dict[str, Any]:
    return {
        "logical_operation": "AND",
        "expressions": [
            {"field": ".status", "str_operator": "equal", "value": 200.0, "negate": negate}
        ],
    }


APPLIES += [
    Resource(
        "aggregate_processor (tumbling sum)",
        "transform",
        "aggregate",
        _SUM_HOUR,
        computed={"window": _HOUR_READ_BACK, "event_timestamp": "timestamp"},
    ),
    Resource(
        "aggregate_processor (group_by)",
        "transform",
        "aggregate",
        {**_SUM_HOUR, "group_by": [".foo", ".bar"]},
        computed={"window": _HOUR_READ_BACK, "event_timestamp": "timestamp"},
    ),
    *(
        Resource(
            f"aggregate_processor (sliding average, conditional, negate {negate})",
            "transform",
            "aggregate",
            {
                "window": _SLIDING,
                "evaluate": {"operation": "AVG"},
                "conditional": _status_200(negate),
            },
            computed={"event_timestamp": "timestamp"},
        )
        for negate in (False, True)
    ),
    Resource(
        "aggregate_processor (event_timestamp)",
        "transform",
        "aggregate",
        {**_SUM_HOUR, "event_timestamp": ".my_ts_field"},
        computed={"window": _HOUR_READ_BACK},
    ),
    Resource(
        "aggregate_processor (distribution concatenation)",
        "transform",
        "aggregate",
        {"window": _SLIDING, "evaluate": {"operation": "DIST_CONCAT"}},
        computed={"event_timestamp": "timestamp"},
    ),
    # evaluateConfigFromModel: `script` set (aggregate_test.go's "custom script" step)
    # sends evaluate{operation: "CUSTOM", script}; the provider reads the script back.
    Resource(
        "aggregate_processor (custom script)",
        "transform",
        "aggregate",
        {
            "window": _SLIDING,
            "evaluate": {"operation": "CUSTOM", "script": AGGREGATE_TEST_SCRIPT},
        },
        computed={"event_timestamp": "timestamp"},
    ),
    # pkg/resources/testdata/processors/aggregate.json: the platform's own type name.
    Resource(
        "aggregate_processor (testdata)",
        "transform",
        "aggregate-v2",
        {"window": {"type": "sliding", "interval": 10}, "evaluate": {"operation": "AVG"}},
        computed={
            "window": {"type": "sliding", "interval": 10, "window_min": 1},
            "event_timestamp": "timestamp",
        },
    ),
]

# pkg/resources/testdata/destinations/azure_blob_storage.json: its connection string is a
# loopback URL, which the destination guard refuses unless the operator allowed it.
REFUSED.append(
    Resource(
        "azure_blob_storage_destination (testdata: loopback)",
        "sink",
        "azure-blob-storage",
        {
            "ack_enabled": True,
            "batch_timeout_secs": 4000,
            "encoding": "json",
            "compression": "gzip",
            "container_name": "logs",
            "connection_string": "http://localhost:3000",
            "prefix": "error_",
        },
    )
)

# pkg/resources/testdata: values the provider's own schema refuses (site OneOf us1, us3,
# us5, eu1; api OneOf logs, metrics), so no plan sends them: refused here too.
REFUSED += [
    Resource(
        "datadog_logs_destination (testdata: site datadog)",
        "sink",
        "datadog-logs",
        {"api_key": "my secret key", "site": "datadog", "compression": "gzip", "ack_enabled": True},
    ),
    Resource(
        "new_relic_destination (testdata: api is a URL)",
        "sink",
        "new-relic",
        {
            "ack_enabled": True,
            "api": "http://new-relic.dev",
            "account_id": "111_222",
            "license_key": "secret license key",
        },
    ),
]

APPLIES += [
    # sources/fluent.go: FluentSourceFromModel (decoding default "json"); and
    # pkg/resources/testdata/sources/fluent.json.
    Resource("fluent_source", "source", "fluent", {"decoding": "json"}),
    Resource("fluent_source (testdata)", "source", "fluent", {"decoding": "bytes"}),
    # sources/logstash.go: LogStashSourceFromModel (format default "json"), the
    # example's "text"; testdata/sources/logstash.json.
    Resource("logstash_source", "source", "logstash", {"format": "json"}),
    Resource("logstash_source (text)", "source", "logstash", {"format": "text"}),
    # sources/kinesis_firehose.go: the "decoding" attribute is sent as "format"
    # (default "json"); testdata/sources/kinesis_firehose.json.
    Resource("kinesis_firehose_source", "source", "kinesis-firehose", {"format": "json"}),
    Resource("kinesis_firehose_source (text)", "source", "kinesis-firehose", {"format": "text"}),
    # sources/log-analysis.go: LogAnalysisSourceFromModel, an empty user_config.
    Resource("log_analysis_source", "source", "log-analysis", {}),
    # sources/agent.go: AgentSourceFromModel, an empty user_config.
    Resource("agent_source", "source", "mezmo-agent", {}),
    # sources/sqs.go: SqsSourceFromModel; testdata/sources/sqs.json (its queue_url is
    # not a URL: saved as sent, polling it fails and is logged).
    Resource(
        "sqs_source",
        "source",
        "sqs",
        {
            "queue_url": "sqs_queue_url",
            "auth": {"access_key_id": "access key", "secret_access_key": "secret"},
            "region": "us-east-1",
        },
    ),
    # sources/s3.go: S3SourceFromModel (compression default "auto"), the example's
    # values; testdata/sources/s3.json.
    Resource(
        "s3_source",
        "source",
        "s3",
        {
            "region": "us-east-2",
            "sqs_queue_url": "https://hello.com/sqs",
            "auth": {"access_key_id": "123", "secret_access_key": "secret123"},
            "compression": "auto",
        },
    ),
    Resource(
        "s3_source (testdata)",
        "source",
        "s3",
        {
            "auth": {"access_key_id": "access key", "secret_access_key": "secret"},
            "region": "us-east-1",
            "sqs_queue_url": "sqs_queue_url",
            "compression": "gzip",
        },
    ),
]

APPLIES += [
    # sources/datadog.go: DatadogSourceFromModel, an empty user_config (and
    # testdata/sources/datadog.json).
    Resource("datadog_source", "source", "mezmo-datadog-source", {}),
    # destinations/datadog_metrics.go: DatadogMetricsFromModel (every attribute sent;
    # datadog_metrics_test.go's site "us3").
    Resource(
        "datadog_metrics_destination",
        "sink",
        "datadog-metrics",
        {"api_key": "<secret-api-key>", "site": "us3", "ack_enabled": True},
    ),
]
# The GCP destinations: their converters send every attribute (encoding default "text",
# compression "none", batch_timeout_secs 300, ack_enabled true), bucket_prefix and
# resource_labels (a map turned into a list of {label_name, label_value}) only when set;
# credentials_json as written, which the provider's own tests make "{}".
APPLIES += [
    # destinations/gcp_cloud_pubsub.go and gcp_cloud_pubsub_test.go (create, update)...
    Resource(
        "gcp_cloud_pubsub_destination",
        "sink",
        "gcp-cloud-pubsub",
        {
            "ack_enabled": True,
            "encoding": "json",
            "project_id": "proj1",
            "topic": "topic1",
            "credentials_json": "{}",
        },
    ),
    Resource(
        "gcp_cloud_pubsub_destination (update)",
        "sink",
        "gcp-cloud-pubsub",
        {
            "ack_enabled": False,
            "encoding": "text",
            "project_id": "proj2",
            "topic": "topic2",
            "credentials_json": "{}",
        },
    ),
    # ...and pkg/resources/testdata/destinations/gcp_cloud_pubsub.json.
    Resource(
        "gcp_cloud_pubsub_destination (testdata)",
        "sink",
        "gcp-cloud-pubsub",
        {
            "ack_enabled": True,
            "encoding": "text",
            "project_id": "proj123",
            "topic": "topic123",
            "credentials_json": '{"foo": "bar"}',
        },
    ),
    # destinations/gcp_cloud_operations.go and its test (with and without labels)...
    Resource(
        "gcp_cloud_operations_destination",
        "sink",
        "gcp-cloud-operations",
        {
            "ack_enabled": True,
            "credentials_json": "{}",
            "project_id": "proj123",
            "log_id": "log123",
            "resource_type": "global",
            "resource_labels": [{"label_name": "somekey", "label_value": "someval"}],
        },
    ),
    Resource(
        "gcp_cloud_operations_destination (no labels)",
        "sink",
        "gcp-cloud-operations",
        {
            "ack_enabled": True,
            "credentials_json": "{}",
            "project_id": "proj456",
            "log_id": "log456",
            "resource_type": "global2",
        },
    ),
    # ...and testdata/destinations/gcp_cloud_operations.json.
    Resource(
        "gcp_cloud_operations_destination (testdata)",
        "sink",
        "gcp-cloud-operations",
        {
            "ack_enabled": True,
            "log_id": "log123",
            "project_id": "proj123",
            "resource_type": "global",
            "resource_labels": [{"label_name": "label1", "label_value": "value1"}],
            "credentials_json": '{"foo": "bar"}',
        },
    ),
    # destinations/gcp_cloud_storage.go and its test (prefix set, then removed)...
    Resource(
        "gcp_cloud_storage_destination",
        "sink",
        "gcp-cloud-storage",
        {
            "ack_enabled": True,
            "batch_timeout_secs": 300,
            "encoding": "json",
            "bucket": "test_bucket",
            "compression": "gzip",
            "credentials_json": "{}",
            "bucket_prefix": "bucket_prefix",
        },
    ),
    Resource(
        "gcp_cloud_storage_destination (no prefix)",
        "sink",
        "gcp-cloud-storage",
        {
            "ack_enabled": False,
            "batch_timeout_secs": 300,
            "encoding": "text",
            "bucket": "new_bucket",
            "compression": "none",
            "credentials_json": "{}",
        },
    ),
    # ...and testdata/destinations/gcp_cloud_storage.json.
    Resource(
        "gcp_cloud_storage_destination (testdata)",
        "sink",
        "gcp-cloud-storage",
        {
            "ack_enabled": True,
            "compression": "gzip",
            "encoding": "json",
            "bucket_prefix": "gcp_",
            "bucket": "logs",
            "batch_timeout_secs": 3000,
            "credentials_json": '{"foo": "bar"}',
        },
    ),
]
APPLIES += [
    # destinations/gcp_cloud_monitoring.go and its test (with and without labels)...
    Resource(
        "gcp_cloud_monitoring_destination",
        "sink",
        "gcp-cloud-monitoring",
        {
            "ack_enabled": True,
            "credentials_json": "{}",
            "project_id": "proj123",
            "resource_type": "global",
            "resource_labels": [{"label_name": "somekey", "label_value": "someval"}],
        },
    ),
    Resource(
        "gcp_cloud_monitoring_destination (no labels)",
        "sink",
        "gcp-cloud-monitoring",
        {
            "ack_enabled": True,
            "credentials_json": "{}",
            "project_id": "proj456",
            "resource_type": "global2",
        },
    ),
    # ...and testdata/destinations/gcp_cloud_monitoring.json.
    Resource(
        "gcp_cloud_monitoring_destination (testdata)",
        "sink",
        "gcp-cloud-monitoring",
        {
            "ack_enabled": True,
            "project_id": "proj123",
            "resource_type": "global",
            "resource_labels": [{"label_name": "label1", "label_value": "value1"}],
            "credentials_json": '{"foo": "bar"}',
        },
    ),
]
# testdata/destinations/datadog_metrics.json: site "datadog", which the provider's schema
# refuses (OneOf us1, us3, us5, eu1): refused here too.
REFUSED.append(
    Resource(
        "datadog_metrics_destination (testdata: site datadog)",
        "sink",
        "datadog-metrics",
        {"api_key": "my secret key", "site": "datadog", "ack_enabled": True},
    )
)

# sources/kafka.go: KafkaSourceFromModel (tls_enabled default true, decoding default
# "json", sasl_enabled false without sasl{}; with sasl{} and no mechanism, the unknown
# computed value is sent as ""), the values of its test (create, then two brokers and
# SASL); destinations/kafka.go: KafkaDestinationFromModel (encoding "text",
# compression "none", tls_enabled true by default), its test's create and SASL steps;
# sources/azure_event_hub.go: AzureEventHubSourceFromModel (decoding default "bytes"),
# its test's create and update, and testdata/sources/azure_event_hub.json.
_MEZMO_BROKER = {"host": "mezmo.com", "port": 9092}
_SASL = {
    "sasl_enabled": True,
    "sasl_username": "my_username",
    "sasl_password": "my_password",
    "sasl_mechanism": "PLAIN",
}
_KAFKA_SOURCE = {
    "brokers": [_MEZMO_BROKER],
    "topics": ["topic1", "topic2"],
    "group_id": "my_group_id",
    "tls_enabled": True,
    "decoding_codec": "json",
    "sasl_enabled": False,
}
_KAFKA_DESTINATION = {
    "encoding": "json",
    "compression": "gzip",
    "topic": "topic1",
    "tls_enabled": True,
    "ack_enabled": True,
    "event_key_field": "my_key",
    "brokers": [_MEZMO_BROKER],
    "sasl_enabled": False,
}
APPLIES += [
    Resource("kafka_source", "source", "kafka", _KAFKA_SOURCE),
    Resource(
        "kafka_source (update: two brokers, SASL)",
        "source",
        "kafka",
        {**_KAFKA_SOURCE, "brokers": [_MEZMO_BROKER, {"host": "mezmo.com", "port": 9093}], **_SASL},
    ),
    Resource(
        "kafka_source (SASL without mechanism, bytes)",
        "source",
        "kafka",
        {**_KAFKA_SOURCE, **_SASL, "sasl_mechanism": "", "decoding_codec": "bytes"},
    ),
    Resource("kafka_destination", "sink", "kafka", _KAFKA_DESTINATION),
    Resource(
        "kafka_destination (update: SASL SCRAM)",
        "sink",
        "kafka",
        {**_KAFKA_DESTINATION, **_SASL, "sasl_mechanism": "SCRAM-SHA-512"},
    ),
    Resource(
        "kafka_destination (defaults)",
        "sink",
        "kafka",
        {
            "encoding": "text",
            "compression": "none",
            "topic": "topic1",
            "tls_enabled": True,
            "ack_enabled": True,
            "brokers": [_MEZMO_BROKER],
            "sasl_enabled": False,
        },
    ),
    Resource(
        "azure_event_hub_source",
        "source",
        "azure-event-hub",
        {
            "decoding_codec": "bytes",
            "connection_string": "test_connection_string",
            "namespace": "test_namespace",
            "group_id": "test_group_id",
            "topics": ["topic1", "topic2"],
        },
    ),
    Resource(
        "azure_event_hub_source (update)",
        "source",
        "azure-event-hub",
        {
            "decoding_codec": "json",
            "connection_string": "new_connection_string",
            "namespace": "new_namespace",
            "group_id": "new_group_id",
            "topics": ["topic_new"],
        },
    ),
    Resource(
        "azure_event_hub_source (testdata)",
        "source",
        "azure-event-hub",
        {
            "decoding_codec": "json",
            "connection_string": "some-connection-string",
            "namespace": "new namespace",
            "group_id": "new group id",
            "topics": ["foo", "bar"],
        },
    ),
]
# testdata/sources/kafka.json and testdata/destinations/kafka.json: their broker is
# localhost:3000, loopback: the destination guard refuses it on save unless the
# operator allowed it (as azure_blob_storage's testdata).
REFUSED += [
    Resource(
        "kafka_source (testdata: broker on localhost)",
        "source",
        "kafka",
        {
            "decoding_codec": "json",
            "brokers": [{"host": "localhost", "port": 3000}],
            "topics": ["first", "second"],
            "group_id": "group_2",
            "tls_enabled": False,
            "sasl_enabled": True,
            "sasl_mechanism": "PLAIN",
            "sasl_username": "user",
            "sasl_password": "pass",
        },
    ),
    Resource(
        "kafka_destination (testdata: broker on localhost)",
        "sink",
        "kafka",
        {
            "ack_enabled": False,
            "encoding": "json",
            "compression": "gzip",
            "event_key_field": "event",
            "brokers": [{"host": "localhost", "port": 3000}],
            "topic": "topic name",
            "group_id": "log_messages",
            "tls_enabled": False,
            "sasl_enabled": True,
            "sasl_username": "user",
            "sasl_password": "pass",
            "sasl_mechanism": "PLAIN",
        },
    ),
]

# processors/script_execution.go: ScriptExecutionProcessorFromModel sends {"script"} and
# reads it back as a string. The scripts of its test (create, then the heredoc of the
# update step, as Terraform's <<-EOT leaves it), and testdata/processors/script_execution.json.
APPLIES += [
    Resource(
        "script_execution_processor",
        "transform",
        "js-script",
        {"script": "function processEvent(e) { return e }"},
    ),
    Resource(
        "script_execution_processor (update: heredoc)",
        "transform",
        "js-script",
        {
            "script": "function processEvent(e) {\n  if (e.skip) {\n    return null\n  }\n"
            "  return e\n}\n"
        },
    ),
    Resource(
        "script_execution_processor (testdata)",
        "transform",
        "js-script",
        {"script": "function processEvent(e) {\n if (e.skip()) {\n return null \n} return e }"},
    ),
]
REFUSED += [
    # script_execution_test.go: "Error: server-side validation" expects "script is not
    # valid JavaScript"; an empty script its schema refuses (LengthAtLeast(1)).
    Resource(
        "script_execution_processor (not JavaScript)",
        "transform",
        "js-script",
        {"script": "THIS IS NOT VALID"},
    ),
    Resource("script_execution_processor (empty)", "transform", "js-script", {"script": ""}),
]
