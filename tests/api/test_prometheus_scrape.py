"""A real Prometheus (Debian's `prometheus` package; `.ci/run` installs it) scrapes a
real tidegate: the target is up with no scrape error, and the series docs/metrics.md
describes come back through Prometheus's own query API with the values the server
counted."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import AppClient, free_port
from tests.ingest.factories import make_ingestor
from tests.live import live_async_client
from tests.tail.test_live import _env

PROMETHEUS = shutil.which("prometheus")

pytestmark = pytest.mark.skipif(
    PROMETHEUS is None, reason="the prometheus binary is absent (apt-get install prometheus)"
)


async def _query(http: httpx.AsyncClient, expression: str) -> list[dict[str, Any]]:
    answer = await http.get("/api/v1/query", params={"query": expression})
    answer.raise_for_status()
    result: list[dict[str, Any]] = answer.json()["data"]["result"]
    return result


async def test_prometheus_scrapes_the_server(
    client: AppClient, shared_live_server: Any, tmp_path: Path
) -> None:
    server = shared_live_server(env=_env(client))
    who = await make_ingestor(client)
    async with live_async_client(server.base_url) as http:
        for _ in range(3):
            sent = await http.post(
                "/logs/ingest",
                params={"hostname": "h"},
                json={"lines": [{"line": "scraped"}]},
                headers=who.headers,
            )
            assert sent.status_code == 200, sent.text
        counted = (await http.get("/metrics")).text
    assert 'tidegate_ingest_requests_total{result="accepted"}' in counted

    port = free_port()
    target = server.base_url.removeprefix("http://")
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n"
        "scrape_configs:\n"
        "  - job_name: tidegate\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    assert PROMETHEUS is not None
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as prom:
            accepted: list[dict[str, Any]] = []
            for _ in range(600):  # up to a minute: Prometheus starts, then scrapes each 1 s
                try:
                    accepted = await _query(
                        prom, 'tidegate_ingest_requests_total{result="accepted"}'
                    )
                except httpx.HTTPError:
                    accepted = []
                if accepted:
                    break
                await asyncio.sleep(0.1)
            assert accepted, "Prometheus never stored a scrape of tidegate"
            targets = (await prom.get("/api/v1/targets")).json()["data"]["activeTargets"]
            [found] = targets
            assert found["health"] == "up", found
            assert found["lastError"] == ""
            # This server counted at least the three requests above (the shared server
            # may have served other tests' ingestion before).
            assert float(accepted[0]["value"][1]) >= 3
            latency = await _query(
                prom, 'tidegate_http_request_duration_seconds_count{group="ingest",code="2xx"}'
            )
            assert latency
            assert float(latency[0]["value"][1]) >= 3
            # No series Prometheus stored carries a label outside the fixed sets.
            names = await prom.get("/api/v1/labels")
            assert set(names.json()["data"]) <= {
                "__name__", "instance", "job", "group", "code", "result", "outcome",
                "transport", "integration", "pool", "le", "quantile",
            }  # fmt: skip
    finally:
        process.terminate()
        process.wait(timeout=30)
