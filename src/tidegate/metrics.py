"""The server's Prometheus metrics: the metric objects, and the text a scrape gets.

Add a metric here (module level, one per measured thing, named `tidegate_...`) and
update it from the code that knows the value. Labels never carry tenant identifiers
(account, pipeline, key names): a tenant could otherwise grow the series without bound
and read other tenants' names from a shared endpoint.

Workers: `tidegate serve` points `PROMETHEUS_MULTIPROC_DIR` at a directory under the
data directory (emptied at start) before any worker starts, so every worker writes its
values there and a scrape of any worker reports the whole server (gauges are summed
over the live workers). Run in-process (tests, an embedding app), the values are those
of this process.
"""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)

__all__ = [
    "ALERT_DELIVERIES",
    "ALERT_DELIVERY_SECONDS",
    "ALERT_EVALUATIONS",
    "ALERT_EVALUATION_SECONDS",
    "ALERT_FIRINGS",
    "ALERT_LINES_EVALUATED",
    "ARCHIVE_ATTEMPTS",
    "ARCHIVE_BYTES",
    "ARCHIVE_LINES",
    "CONTENT_TYPE",
    "DB_CONNECTIONS_IN_USE",
    "DB_POOL_CAPACITY",
    "DB_UNAVAILABLE",
    "GROUP_COMMITS",
    "GROUP_COMMIT_LINES",
    "GROUP_COMMIT_SECONDS",
    "GROUP_COMMIT_WAIT_SECONDS",
    "GROUP_COMMIT_WRITES",
    "HTTP_IN_FLIGHT",
    "HTTP_REQUEST_SECONDS",
    "INGEST_REQUESTS",
    "INGEST_REQUEST_BYTES",
    "LINES",
    "LINES_REPAIRED",
    "LINE_BYTES",
    "MULTIPROCESS_ENV",
    "SEGMENT_FILES",
    "SEGMENT_INDEX_OUTCOMES",
    "SEGMENT_ROW_GROUPS",
    "SYSLOG_CONNECTIONS",
    "SYSLOG_LINES",
    "TAIL_SESSIONS",
    "TAIL_SESSIONS_OPEN",
    "TAIL_SESSION_SECONDS",
    "THROTTLE_BYTES",
    "THROTTLE_KEYS",
    "THROTTLE_KEYS_REFUSED",
    "THROTTLE_RUNS_FOLDED",
    "is_multiprocess",
    "lines_committed",
    "lines_failed",
    "render",
    "throttle_budget_changed",
]

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST

THROTTLE_KEYS = Gauge(
    "tidegate_throttle_keys",
    "Keys tracked by in-memory Throttle processors (all processors, live workers summed)",
    multiprocess_mode="livesum",
)
THROTTLE_BYTES = Gauge(
    "tidegate_throttle_bytes",
    "Approximate bytes of in-memory Throttle state (all processors, live workers summed)",
    multiprocess_mode="livesum",
)
THROTTLE_KEYS_REFUSED = Counter(
    "tidegate_throttle_keys_refused",
    "New throttle keys not tracked because the worker's throttle budget "
    "(TIDEGATE_THROTTLE_MAX_KEYS / TIDEGATE_THROTTLE_MAX_BYTES) was full; their events passed",
)
THROTTLE_RUNS_FOLDED = Counter(
    "tidegate_throttle_runs_folded",
    "Admissions of tracked throttle keys folded into the key's newest run because the "
    "worker's throttle byte budget was full (the limit then errs on the lenient side)",
)

# Every label below takes its values from a fixed set written in this module or beside
# the code that sets it (docs/metrics.md lists them): never a path, a key, an account.

# The HTTP edge (tidegate.api.request_metrics): every request, by route group.
_LATENCY_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
HTTP_REQUEST_SECONDS = Histogram(
    "tidegate_http_request_duration_seconds",
    "Seconds from a request's arrival to the end of its answer (streamed answers: the "
    "last byte), by route group and status class; live tail streams are in "
    "tidegate_tail_session_duration_seconds instead",
    ["group", "code"],
    buckets=_LATENCY_BUCKETS,
)
HTTP_IN_FLIGHT = Gauge(
    "tidegate_http_requests_in_flight",
    "Requests being served now (live tail streams included), by route group",
    ["group"],
    multiprocess_mode="livesum",
)
INGEST_REQUESTS = Counter(
    "tidegate_ingest_requests",
    "Requests to POST /logs/ingest and /logs/agent by result: accepted, or the reason "
    "they were refused (a refused request stores none of its lines)",
    ["result"],
)
INGEST_REQUEST_BYTES = Counter(
    "tidegate_ingest_request_bytes",
    "Body bytes received by the ingest endpoints as sent (compressed bodies compressed), "
    "by the request's result",
    ["result"],
)
_TAIL_BUCKETS = (1.0, 10.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 14400.0, 86400.0)
TAIL_SESSIONS = Counter(
    "tidegate_tail_sessions",
    "Live tail streams opened (SSE: GET /v1/tail; WebSocket: /ws/tail)",
    ["transport"],
)
TAIL_SESSIONS_OPEN = Gauge(
    "tidegate_tail_sessions_open",
    "Live tail streams open now",
    ["transport"],
    multiprocess_mode="livesum",
)
TAIL_SESSION_SECONDS = Histogram(
    "tidegate_tail_session_duration_seconds",
    "How long live tail streams stayed open",
    ["transport"],
    buckets=_TAIL_BUCKETS,
)

# The one writer of log lines (tidegate.logs.writer): ingestion and the pipelines' log
# store destination alike.
# Syslog listener (docs/syslog.md).
SYSLOG_LINE_OUTCOMES = ("accepted", "not_syslog", "no_key", "refused", "failed")
SYSLOG_LINES = Counter(
    "tidegate_syslog_lines",
    "Syslog listener lines by outcome: accepted (given to the log store's writer: stored, "
    "or excluded by a rule); dropped as not_syslog (neither RFC 5424 nor RFC 3164), no_key "
    "(no logdna@48950 element with a key), refused (unknown key, inactive or suspended "
    "account, or the account's enable_syslog off); failed (lost because the store failed)",
    ["outcome"],
)
SYSLOG_CONNECTIONS = Counter(
    "tidegate_syslog_connections",
    "Syslog connections: accepted, or refused (closed at once: "
    "TIDEGATE_SYSLOG_MAX_CONNECTIONS reached)",
    ["outcome"],
)
LINES = Counter(
    "tidegate_lines",
    "Log lines by outcome: stored (committed), excluded (kept out by exclusion rules, "
    "counted in usage), failed (their write failed; the client was answered an error)",
    ["outcome"],
)
LINE_BYTES = Counter(
    "tidegate_line_bytes",
    "Bytes of log lines as usage counts them, by outcome (as tidegate_lines)",
    ["outcome"],
)
LINES_REPAIRED = Counter(
    "tidegate_lines_repaired",
    "Committed lines (stored or excluded) that were repaired rather than refused "
    "(usage's lines_fallback: a bad time, an over-long field, a line that was not text)",
)
GROUP_COMMITS = Counter(
    "tidegate_group_commits",
    "Group-commit transactions of the line writer, by outcome (ok; failed: the group was "
    "retried write by write or failed whole)",
    ["outcome"],
)
GROUP_COMMIT_WRITES = Histogram(
    "tidegate_group_commit_writes",
    "Writes (requests' batches) committed together in one group transaction",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)
GROUP_COMMIT_LINES = Histogram(
    "tidegate_group_commit_lines",
    "Lines committed in one group transaction",
    buckets=(1, 10, 50, 100, 500, 1000, 2500, 5000, 10000),
)
GROUP_COMMIT_SECONDS = Histogram(
    "tidegate_group_commit_duration_seconds",
    "Seconds one group transaction took (BEGIN to COMMIT)",
    buckets=_LATENCY_BUCKETS,
)
GROUP_COMMIT_WAIT_SECONDS = Histogram(
    "tidegate_group_commit_wait_seconds",
    "Seconds a write waited from being handed to the writer to its commit (gathering "
    "delay, the group ahead of it, and its own transaction)",
    buckets=_LATENCY_BUCKETS,
)

# The segment index (tidegate.logs.tiers): what reads with a search literal skipped.
SEGMENT_INDEX_OUTCOMES = ("searched", "skipped", "unindexed")
SEGMENT_FILES = Counter(
    "tidegate_segment_files",
    "Segments in the range of a read with a search literal, by what the segment index "
    "said: searched (may hold a match), skipped (cannot: not opened, not downloaded), "
    "unindexed (written without an index: read whole)",
    ["outcome"],
)
SEGMENT_ROW_GROUPS = Counter(
    "tidegate_segment_row_groups",
    "Row groups of the indexed segments in the range of a read with a search literal: "
    "searched (may hold a match: read), skipped (cannot: not read)",
    ["outcome"],
)

# Archiving (tidegate.archive.runner).
ARCHIVE_ATTEMPTS = Counter(
    "tidegate_archive_attempts",
    "Attempts at writing an account's day to its bucket, by outcome: written, retried "
    "(failed, will be tried again after backoff), failed (given up)",
    ["outcome"],
)
ARCHIVE_LINES = Counter("tidegate_archive_lines", "Lines written to archive objects")
ARCHIVE_BYTES = Counter("tidegate_archive_bytes", "Bytes (compressed) written to archive objects")

# Alerts (tidegate.alerts.runner and outbox).
ALERT_EVALUATIONS = Counter(
    "tidegate_alert_evaluations",
    "Alert evaluation rounds by outcome: evaluated (this worker held the evaluator's "
    "lease), standby (another worker or host holds it), failed",
    ["outcome"],
)
ALERT_EVALUATION_SECONDS = Histogram(
    "tidegate_alert_evaluation_duration_seconds",
    "Seconds of the evaluated rounds (lines and index rates)",
    buckets=_LATENCY_BUCKETS,
)
ALERT_LINES_EVALUATED = Counter(
    "tidegate_alert_lines_evaluated", "Stored lines read by the alert evaluator"
)
ALERT_FIRINGS = Counter("tidegate_alert_firings", "Alert firings (notifications queued)")
ALERT_DELIVERIES = Counter(
    "tidegate_alert_deliveries",
    "Alert notification attempts by outcome: delivered, retried (will be tried again), "
    "failed (given up)",
    ["outcome"],
)
ALERT_DELIVERY_SECONDS = Histogram(
    "tidegate_alert_delivery_duration_seconds",
    "Seconds one notification attempt took, by integration",
    ["integration"],
    buckets=_LATENCY_BUCKETS,
)

# The database (tidegate.db.engine, tidegate.api.error_handlers).
DB_CONNECTIONS_IN_USE = Gauge(
    "tidegate_db_connections_in_use",
    "Database connections checked out of the pool now, by pool",
    ["pool"],
    multiprocess_mode="livesum",
)
DB_POOL_CAPACITY = Gauge(
    "tidegate_db_pool_capacity",
    "Connections the pool may hold at most (size plus overflow), by pool",
    ["pool"],
    multiprocess_mode="livesum",
)
DB_UNAVAILABLE = Counter(
    "tidegate_db_unavailable",
    "Requests answered 503 because the database could not serve them (pool exhausted "
    "past TIDEGATE_DB_POOL_TIMEOUT_S, locked, unreachable, statement timeout)",
)


def lines_committed(
    *,
    lines_stored: int,
    bytes_stored: int,
    lines_excluded: int,
    bytes_excluded: int,
    lines_repaired: int,
) -> None:
    """A write of the line writer committed."""
    if lines_stored:
        _STORED.inc(lines_stored)
        _STORED_BYTES.inc(bytes_stored)
    if lines_excluded:
        _EXCLUDED.inc(lines_excluded)
        _EXCLUDED_BYTES.inc(bytes_excluded)
    if lines_repaired:
        LINES_REPAIRED.inc(lines_repaired)


def lines_failed(lines: int, size: int) -> None:
    """A write of the line writer failed (its caller answers an error)."""
    if lines:
        _FAILED.inc(lines)
        _FAILED_BYTES.inc(size)


# Kafka clients of the pipelines (the kafka source and destination, azure-event-hub).
KAFKA_OPERATIONS = Counter(
    "tidegate_kafka_operations",
    "Kafka client operations by outcome: operation produce (a delivery's records), consume "
    "(a pull's records), connect (a client started); outcome ok, retried (failed, tried "
    "again), failed (given up), refused (a broker on an address the destination guard refuses)",
    ["operation", "outcome"],
)


# The children the hot path uses, resolved once (a labels() call costs a lookup).
_STORED = LINES.labels("stored")
_EXCLUDED = LINES.labels("excluded")
_FAILED = LINES.labels("failed")
_STORED_BYTES = LINE_BYTES.labels("stored")
_EXCLUDED_BYTES = LINE_BYTES.labels("excluded")
_FAILED_BYTES = LINE_BYTES.labels("failed")


def throttle_budget_changed(keys: int, size: int, refused: int, folded: int) -> None:
    """The `ThrottleBudget` listener: changes since its last call."""
    if keys:
        THROTTLE_KEYS.inc(keys)
    if size:
        THROTTLE_BYTES.inc(size)
    if refused:
        THROTTLE_KEYS_REFUSED.inc(refused)
    if folded:
        THROTTLE_RUNS_FOLDED.inc(folded)


def is_multiprocess() -> bool:
    """Whether values go to `PROMETHEUS_MULTIPROC_DIR` (decided when prometheus_client
    was first imported, which is why `serve` sets it before starting the app)."""
    return values.ValueClass is not values.MutexValue


def render() -> bytes:
    """The Prometheus text exposition of every metric."""
    if is_multiprocess():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest(REGISTRY)
