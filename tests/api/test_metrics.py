"""GET /metrics (issue 7, item 6): Prometheus text with the throttle budget's gauges and
the counter of keys refused by the server-wide cap, over a real request; in-process and
through a real `tidegate serve` with two workers (values summed over the workers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from tests.api.scrape import parse
from tests.conftest import make_settings, open_client
from tests.gateway.factories import new_account_on, wire


def samples(text: str) -> dict[str, float]:
    """Each series summed over its labels (which come from fixed sets only)."""
    values: dict[str, float] = {}
    for (name, _labels), number in parse(text).items():
        values[name] = values.get(name, 0.0) + number
    return values


async def scrape(http: httpx.AsyncClient) -> dict[str, float]:
    response = await http.get("/metrics")  # no credentials
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


THROTTLE = {"threshold": 1, "window_ms": 3_600_000, "key_field": ".app"}


async def throttled_route(http: httpx.AsyncClient, database_url: str) -> Any:
    account = await new_account_on(http, database_url)
    return await wire(
        http,
        account,
        [
            ("t", "processor", "throttle", THROTTLE, ["source"]),
            ("hole", "destination", "blackhole", {}, ["t"]),
        ],
    )


async def test_metrics_count_keys_refused_by_the_server_cap(
    database_url: str, tmp_path: Path
) -> None:
    settings = make_settings(database_url, tmp_path, throttle_max_keys=2)
    http, lifespan = await open_client(settings)
    try:
        wired = await throttled_route(http, database_url)
        before = await scrape(http)
        events = [{"line": "x", "app": f"app-{n}"} for n in range(5)]
        sent = await http.post(wired.url, json=events, headers=wired.auth)
        assert sent.status_code == 200, sent.text
        after = await scrape(http)
        assert (
            after["tidegate_throttle_keys_refused_total"]
            - before.get("tidegate_throttle_keys_refused_total", 0)
            == 3
        )
        # The gauges are the process's, and other apps of this test process (shared
        # fixtures) add and drop their own throttles' keys meanwhile: at least this
        # app's two keys are counted (a delta was 0 in a loaded run). The refused-keys
        # counter is this app's alone: only its cap (2) refuses keys.
        assert after["tidegate_throttle_keys"] >= 2
        assert after["tidegate_throttle_bytes"] > 0
        # The refused keys failed open: no event was discarded, even sent again.
        again = await http.post(wired.url, json=events[2:], headers=wired.auth)
        assert again.status_code == 200, again.text
        final = await scrape(http)
        assert (
            final["tidegate_throttle_keys_refused_total"]
            - before.get("tidegate_throttle_keys_refused_total", 0)
            == 6
        )
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_metrics_of_a_served_server_sum_its_workers(
    live_server_factory: Any, tmp_path: Path
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'metrics.sqlite3'}"
    server = live_server_factory(
        env={
            "TIDEGATE_DATABASE_URL": database_url,
            "TIDEGATE_BOOTSTRAP": "0",
            "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
            "TIDEGATE_THROTTLE_MAX_KEYS": "2",
        },
        workers=2,
    )
    async with server.async_client() as http:
        wired = await throttled_route(http, database_url)
        first = await scrape(http)
        assert first["tidegate_throttle_keys"] == 0
        assert first.get("tidegate_throttle_keys_refused_total", 0) == 0
        events = [{"line": "x", "app": f"app-{n}"} for n in range(5)]
        for _ in range(4):  # spread over the workers: each has its own budget of 2
            sent = await http.post(wired.url, json=events, headers=wired.auth)
            assert sent.status_code == 200, sent.text
        scrapes = [await scrape(http) for _ in range(6)]
    # Every worker answers with the whole server's values (the throttle's: each scrape
    # itself moves the request series).
    throttle = [
        {name: number for name, number in values.items() if name.startswith("tidegate_throttle")}
        for values in scrapes
    ]
    assert all(values == throttle[0] for values in throttle)
    assert scrapes[-1]["tidegate_http_request_duration_seconds_count"] >= 6 + 4
    keys = scrapes[0]["tidegate_throttle_keys"]
    refused = scrapes[0]["tidegate_throttle_keys_refused_total"]
    assert keys in (2, 4)  # one or both workers saw the batches, 2 keys of room each
    assert refused == 4 * 3  # every batch found room for 2 of its 5 keys, wherever it ran
    assert (Path(server.env["TIDEGATE_DATA_DIR"]) / "prometheus").is_dir()
