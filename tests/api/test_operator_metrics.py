"""The operator's series at GET /metrics (issue 18): scraped before and after real
requests on each backend, the series must move by exactly what was done: ingest
requests by result and their body bytes, lines stored and excluded, request latency
by route group, group commits, live tail streams, and the
database pools (alert rounds: tests/alerts/test_metrics.py). No label ever carries a tenant's name (docs/metrics.md)."""

from __future__ import annotations

import asyncio
import gzip
import threading
from pathlib import Path

import httpx
import orjson
from sqlalchemy import text
from tests.api.scrape import Series, moved, parse, scrape, value
from tests.conftest import AppClient, make_settings
from tests.ingest.factories import add_rule, make_ingestor

from tidegate import metrics
from tidegate.api.request_metrics import route_group
from tidegate.app import create_app
from tidegate.db.engine import Database, PoolPlan


def test_route_groups_come_from_a_fixed_list() -> None:
    assert route_group("/logs/agent", "POST") == "ingest"
    assert route_group("/v2/export", "GET") == "export"
    assert route_group("/v1/aggregate", "GET") == "aggregate"
    assert route_group("/ws/tail", "GET") == "tail"
    assert route_group("/v1/config/keys", "POST") == "api"
    assert route_group("/gateway/abc", "POST") == "gateway"
    assert route_group("/boards/some-board-id", "GET") == "web"
    assert route_group("/no/such/thing", "POST") == "other"


async def test_ingest_requests_lines_and_latency_move_by_what_was_sent(
    client: AppClient,
) -> None:
    who = await make_ingestor(client)
    await add_rule(client, who, query="healthcheck")
    body = orjson.dumps(
        {"lines": [{"line": "GET /healthcheck 200"}, {"line": "one"}, {"line": "two"}]}
    )
    packed = gzip.compress(body)
    bad = b'{"lines": "not a list"}'
    before = await scrape(client)

    ok = await client.post(
        "/logs/ingest?hostname=web-1",
        content=packed,
        headers={**who.headers, "content-type": "application/json", "content-encoding": "gzip"},
    )
    assert ok.status_code == 200, ok.text
    refused = await client.post(
        "/logs/ingest?hostname=web-1",
        content=bad,
        headers={**who.headers, "content-type": "application/json"},
    )
    assert refused.status_code == 400, refused.text
    anonymous = await client.post("/logs/agent?hostname=web-1", content=body)
    assert anonymous.status_code == 401, anonymous.text
    unknown = await client.post(
        "/logs/ingest?hostname=web-1", content=body, headers={"apikey": "0" * 32}
    )
    assert unknown.status_code == 403, unknown.text
    brotli = await client.post(
        "/logs/ingest?hostname=web-1",
        content=body,
        headers={**who.headers, "content-type": "application/json", "content-encoding": "br"},
    )
    assert brotli.status_code == 415, brotli.text
    after = await scrape(client)

    requests = "tidegate_ingest_requests_total"
    size = "tidegate_ingest_request_bytes_total"
    assert moved(before, after, requests, result="accepted") == 1
    assert moved(before, after, size, result="accepted") == len(packed)  # as sent
    assert moved(before, after, requests, result="bad_request") == 1
    assert moved(before, after, size, result="bad_request") == len(bad)
    assert moved(before, after, requests, result="no_credentials") == 1
    assert moved(before, after, requests, result="forbidden") == 1
    # Credentials come first: the body of a refused key is never read.
    assert moved(before, after, size, result="forbidden") == 0
    assert moved(before, after, requests, result="unsupported_encoding") == 1

    assert moved(before, after, "tidegate_lines_total", outcome="stored") == 2
    assert moved(before, after, "tidegate_lines_total", outcome="excluded") == 1
    assert moved(before, after, "tidegate_line_bytes_total", outcome="stored") == len("onetwo")
    assert moved(before, after, "tidegate_line_bytes_total", outcome="excluded") == len(
        "GET /healthcheck 200"
    )
    assert moved(before, after, "tidegate_lines_total", outcome="failed") == 0

    latency = "tidegate_http_request_duration_seconds_count"
    assert moved(before, after, latency, group="ingest", code="2xx") == 1
    assert moved(before, after, latency, group="ingest", code="4xx") == 4
    assert (
        moved(
            before, after, "tidegate_http_request_duration_seconds_sum", group="ingest", code="2xx"
        )
        > 0
    )
    # Every answer ended: nothing is left in flight.
    assert value(after, "tidegate_http_requests_in_flight", group="ingest") == 0

    # One write committed (its group may have held others of this process).
    assert moved(before, after, "tidegate_group_commits_total", outcome="ok") >= 1
    assert moved(before, after, "tidegate_group_commit_wait_seconds_count") >= 1
    # Lines written as rows: the stored ones (excluded lines only add to usage).
    assert moved(before, after, "tidegate_group_commit_lines_sum") >= 2
    writes = moved(before, after, "tidegate_group_commit_writes_sum")
    assert writes == moved(before, after, "tidegate_group_commit_wait_seconds_count")


async def test_export_aggregate_and_management_requests_are_grouped(client: AppClient) -> None:
    who = await make_ingestor(client)
    before = await scrape(client)
    headers = who.account.headers
    window = {"from": 1_700_000_000_000, "to": 1_700_000_060_000}
    assert (await client.get("/v2/export", params=window, headers=headers)).status_code == 200
    assert (await client.get("/v1/aggregate", params=window, headers=headers)).status_code == 200
    assert (await client.get("/v1/config/keys", headers=headers)).status_code == 200
    assert (await client.get("/v1/config/keys")).status_code == 401
    after = await scrape(client)
    latency = "tidegate_http_request_duration_seconds_count"
    assert moved(before, after, latency, group="export", code="2xx") == 1
    assert moved(before, after, latency, group="aggregate", code="2xx") == 1
    assert moved(before, after, latency, group="api", code="2xx") == 1
    assert moved(before, after, latency, group="api", code="4xx") == 1
    # The scrape itself is counted under "internal", never under a tenant's group.
    assert moved(before, after, latency, group="internal", code="2xx") == 1


async def _pool_series(database_url: str) -> tuple[str, int, list[Series]]:
    plan = PoolPlan(pool_size=2, max_overflow=1, fetch_pool=2)
    db = Database.connect(database_url, pool_plan=plan)
    pool = "read" if db.sqlite_path is not None else "main"
    capacity = 64 + 64 if pool == "read" else 2 + 1  # SQLite's inline readers: plenty
    try:
        opened = parse(metrics.render().decode())
        async with db.read_sessions() as session:
            await session.execute(text("SELECT 1"))
            held = parse(metrics.render().decode())
        released = parse(metrics.render().decode())
    finally:
        await db.dispose()
    return pool, capacity, [opened, held, released, parse(metrics.render().decode())]


def test_database_pools_report_capacity_and_connections_in_use(database_url: str) -> None:
    # On a loop of its own in a thread, with this process's other apps (the session's
    # clients, their alert rounds) stopped meanwhile: the pool series are process-wide.
    result: list[tuple[str, int, list[Series]]] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(_pool_series(database_url))))
    thread.start()
    thread.join()
    [(pool, capacity, (opened, held, released, disposed))] = result
    in_use = "tidegate_db_connections_in_use"
    assert moved(opened, held, in_use, pool=pool) == 1
    assert moved(opened, released, in_use, pool=pool) == 0
    assert moved(disposed, opened, "tidegate_db_pool_capacity", pool=pool) == capacity


async def test_an_unhandled_error_is_counted_as_the_500_it_answers(
    database_url: str, tmp_path: Path
) -> None:
    app = create_app(make_settings(database_url, tmp_path))

    async def broken() -> None:
        raise RuntimeError("a bug")

    # A route of this test's own: no route of the product may answer 500 on purpose.
    app.add_api_route("/v3/test-broken", broken, methods=["GET"])
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
            base_url="http://tidegate.test",
        ) as http,
    ):
        before = await scrape(http)
        answer = await http.get("/v3/test-broken")
        assert answer.status_code == 500
        after = await scrape(http)
    latency = "tidegate_http_request_duration_seconds_count"
    assert moved(before, after, latency, group="api", code="5xx") == 1
    assert moved(before, after, latency, group="api", code="none") == 0
