"""Scraping GET /metrics in tests: every sample by name and labels, with every label
value checked against the fixed sets the server may use (never a tenant's name)."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tidegate.api.request_metrics import CODES, GROUPS, INGEST_RESULTS
from tidegate.metrics import SEGMENT_INDEX_OUTCOMES, SYSLOG_LINE_OUTCOMES

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]
# The only label values a series may carry: fixed sets, none from a request.
ALLOWED_LABELS = {
    "group": set(GROUPS),
    "code": set(CODES),
    "result": set(INGEST_RESULTS),
    "outcome": {"stored", "excluded", "failed", "ok"}  # lines, group commits
    | {"evaluated", "standby", "idle", "delivered", "retried"}  # alerts
    | set(SYSLOG_LINE_OUTCOMES)
    | {"accepted", "refused"}  # syslog lines and connections
    | set(SEGMENT_INDEX_OUTCOMES),
    "transport": {"sse", "websocket"},
    "integration": {"email", "webhook", "slack", "pagerduty"},
    "pool": {"main", "read", "write", "fetch"},
}


def parse(text: str) -> Series:
    series: Series = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith("tidegate_") or sample.name.endswith("_created"):
                continue
            for name, value in sample.labels.items():
                if name not in ("le", "quantile"):
                    assert value in ALLOWED_LABELS[name], sample
            key = (sample.name, frozenset(sample.labels.items()))
            series[key] = series.get(key, 0.0) + sample.value
    return series


async def scrape(http: httpx.AsyncClient) -> Series:
    response = await http.get("/metrics")
    assert response.status_code == 200, response.text
    return parse(response.text)


def value(series: Series, name: str, **labels: str) -> float:
    return series.get((name, frozenset(labels.items())), 0.0)


def moved(before: Series, after: Series, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)
