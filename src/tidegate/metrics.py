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
    generate_latest,
    multiprocess,
    values,
)

__all__ = [
    "CONTENT_TYPE",
    "MULTIPROCESS_ENV",
    "SYSLOG_CONNECTIONS",
    "SYSLOG_LINES",
    "THROTTLE_BYTES",
    "THROTTLE_KEYS",
    "THROTTLE_KEYS_REFUSED",
    "THROTTLE_RUNS_FOLDED",
    "is_multiprocess",
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

# Syslog listener (docs/syslog.md): one counter per outcome (metrics carry no labels).
SYSLOG_LINES = {
    outcome: Counter(f"tidegate_syslog_lines_{outcome}", description)
    for outcome, description in (
        (
            "accepted",
            "Syslog lines given to the log store's writer (stored, or excluded by a rule)",
        ),
        ("not_syslog", "Syslog listener lines dropped: neither RFC 5424 nor RFC 3164"),
        ("no_key", "Syslog lines dropped: no logdna@48950 element with a key"),
        (
            "refused",
            "Syslog lines dropped: unknown key, inactive or suspended account, or the "
            "account's enable_syslog off",
        ),
        ("failed", "Syslog lines lost because the store failed (logged with the error)"),
    )
}
SYSLOG_CONNECTIONS = {
    "accepted": Counter("tidegate_syslog_connections_accepted", "Syslog connections accepted"),
    "refused": Counter(
        "tidegate_syslog_connections_refused",
        "Syslog connections closed at once: TIDEGATE_SYSLOG_MAX_CONNECTIONS reached",
    ),
}


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
