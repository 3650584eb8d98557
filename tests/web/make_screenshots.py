"""Screenshots of the web app's main pages for the README and docs/web.md, taken from a
real server with seeded lines in Debian's Chromium:

    PYTHONPATH=src python -m tests.web.make_screenshots [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect
from tests.conftest import LiveServer
from tests.web.harness import (
    Account,
    chromium,
    enterprise_key,
    make_account,
    now_ms,
    sign_in_with_key,
)

HOSTS = {
    "web-1": ["nginx", "api"],
    "web-2": ["nginx", "api"],
    "db-1": ["postgres"],
    "cache-1": ["redis"],
}
MESSAGES = [
    "GET /api/orders/{n} 200 {ms}ms",
    "POST /api/login 401 invalid password for user {n}",
    "connection reset by peer",
    "checkpoint complete: wrote {n} buffers",
    "slow query took {ms}ms: SELECT * FROM orders WHERE id = {n}",
    "cache miss for key user:{n}",
    "request timeout after {ms}ms upstream=payments",
]


def seed(account: Account, rng: random.Random) -> None:
    now = now_ms()
    for host, apps in HOSTS.items():
        lines = []
        for i in range(600):
            # Busier in the last hours, with an error burst 3 hours ago.
            age = int(rng.expovariate(1 / 3_000_000)) % (12 * 3_600_000)
            burst = abs(age - 3 * 3_600_000) < 600_000
            level = (
                "error"
                if burst and rng.random() < 0.6
                else rng.choice(["info"] * 7 + ["warn", "error", "debug"])
            )
            text = rng.choice(MESSAGES).format(n=rng.randint(1, 9999), ms=rng.randint(1, 900))
            meta = {
                "request": {"id": f"req-{i:05d}", "status": rng.choice([200, 200, 200, 404, 500])},
                "user": rng.randint(1, 40),
                "region": rng.choice(["eu-west", "us-east"]),
            }
            lines.append(
                {
                    "line": text,
                    "timestamp": now - age,
                    "app": rng.choice(apps),
                    "level": level,
                    "meta": meta,
                }
            )
        account.ingest(lines, host=host)


ALERT_CHANNELS = [
    {
        "integration": "webhook",
        "url": "https://hooks.example.com/tidegate",
        "triggerlimit": 5,
        "triggerinterval": "5m",
    },
    {
        "integration": "email",
        "emails": ["oncall@example.com"],
        "immediate": "true",
        "triggerlimit": 1,
    },
]


def checked(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def setup_content(account: Account) -> tuple[str, str, str]:
    """The board's id, the pipeline's, and the alerted view's."""
    with account.http() as http:
        board = http.post(
            "/v1/config/board",
            json={
                "title": "Production overview",
                "graphs": [
                    {
                        "id": "g1",
                        "kind": "count",
                        "title": "Lines by app",
                        "query": "",
                        "split": "app",
                        "width": 2,
                        "height": "m",
                    },
                    {
                        "id": "g2",
                        "kind": "top",
                        "title": "Top hosts",
                        "query": "",
                        "field": "host",
                        "width": 1,
                        "height": "m",
                    },
                    {
                        "id": "g3",
                        "kind": "count",
                        "title": "Errors",
                        "query": "level:error",
                        "split": "",
                        "width": 2,
                        "height": "s",
                    },
                    {
                        "id": "g4",
                        "kind": "top",
                        "title": "Levels",
                        "query": "",
                        "field": "level",
                        "width": 1,
                        "height": "s",
                    },
                ],
            },
        ).json()
        views = [
            checked(
                http.post(
                    "/v1/config/view",
                    json={
                        "name": name,
                        "query": query,
                        "category": [category],
                        "channels": channels,
                    },
                )
            )["viewID"]
            for name, query, category, channels in (
                ("Server errors", "level:error", "Operations", ALERT_CHANNELS),
                ("Slow queries", "slow query", "Database", []),
                ("Login failures", "app:api 401", "Security", []),
            )
        ]
        http.post(
            "/v1/config/ingestion/exclusions",
            json={
                "title": "Health checks",
                "query": '"GET /healthz"',
                "active": True,
                "indexonly": False,
            },
        )
        pipeline = http.post(
            "/v3/pipeline", json={"title": "Edge ingest", "description": "Webhooks in, errors kept"}
        ).json()["data"]
        base = f"/v3/pipeline/{pipeline['id']}"
        route = http.post("/v3/pipeline/gateway-route", json={"title": "webhooks"}).json()["data"]
        source = http.post(
            f"{base}/source",
            json={"type": "http", "title": "Webhooks", "gateway_route_id": route["id"]},
        ).json()["data"]
        condition = {
            "expressions": [{"field": ".level", "str_operator": "equal", "value": "error"}]
        }
        errors = http.post(
            f"{base}/processor",
            json={
                "type": "filter",
                "title": "Errors only",
                "inputs": [source["id"]],
                "user_config": {"action": "allow", "condition": condition},
            },
        ).json()["data"]
        noise = http.post(
            f"{base}/processor",
            json={
                "type": "filter",
                "title": "Drop debug",
                "inputs": [source["id"]],
                "user_config": {
                    "action": "drop",
                    "condition": {
                        "expressions": [
                            {"field": ".level", "str_operator": "equal", "value": "debug"}
                        ]
                    },
                },
            },
        ).json()["data"]
        http.post(
            f"{base}/destination",
            json={"type": "log_analysis", "title": "Log analysis", "inputs": [noise["id"]]},
        )
        http.post(
            f"{base}/destination",
            json={"type": "blackhole", "title": "Error archive", "inputs": [errors["id"]]},
        )
    return board["boardid"], pipeline["id"], views[0]


def shoot(page: Page, out: Path, name: str) -> None:
    page.wait_for_timeout(400)  # let the charts settle after their last resize
    page.screenshot(path=str(out / f"{name}.png"))
    print(f"wrote {out / name}.png")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        # The seeding is a script with a key: more than the keys' 50 a minute.
        env = {"TIDEGATE_DATA_DIR": str(workdir / "var"), "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0"}
        server = LiveServer(env=env, cwd=workdir)
        server.env["TIDEGATE_PUBLIC_URL"] = server.base_url
        server.start()
        try:
            account = make_account(server.base_url, enterprise_key(workdir / "var"))
            seed(account, random.Random(12))
            boardid, pipeline_id, view_id = setup_content(account)
            with chromium() as (_playwright, browser):
                context = browser.new_context(
                    viewport={"width": 1360, "height": 820}, device_scale_factor=1
                )
                page = context.new_page()
                page.goto(server.base_url + "/signin")
                expect(page.get_by_test_id("signin-key")).to_be_visible()
                shoot(page, args.out, "signin")
                sign_in_with_key(page, server.base_url, account.service_key)
                page.goto(server.base_url + "/search?q=level%3Aerror&range=24h")
                expect(page.get_by_test_id("log-line").first).to_be_visible()
                page.get_by_test_id("log-line").nth(1).locator(".summary").click()
                shoot(page, args.out, "search")
                page.get_by_test_id("search-input").fill("level:error AND (app:api OR")
                page.get_by_test_id("search-input").press("Enter")
                expect(page.get_by_test_id("query-error")).to_be_visible()
                shoot(page, args.out, "search-error")
                # A hit's context in place, and a meta field's top values in the facets.
                page.goto(
                    server.base_url + "/search?q=level%3Aerror&range=24h&field=request.status"
                )
                expect(page.get_by_test_id("facet-custom-value").first).to_be_visible()
                hit = page.get_by_test_id("log-line").nth(2)
                hit.locator(".summary").click()
                hit.get_by_test_id("line-context").click()
                expect(hit.get_by_test_id("context-older")).to_be_visible()
                page.get_by_test_id("context-newer").locator(
                    ".context-line"
                ).first.scroll_into_view_if_needed()
                shoot(page, args.out, "search-context")
                # The query's words marked, a line's copy buttons, a field's values
                # offered as they are typed.
                page.goto(
                    server.base_url + "/search?q=timeout%20-payments%20OR%20request&range=24h"
                )
                expect(page.get_by_test_id("hit").first).to_be_visible()
                page.get_by_test_id("log-line").nth(1).locator(".summary").click()
                box = page.get_by_test_id("search-input")
                box.click()
                box.press("End")
                box.press_sequentially(" region:")
                expect(page.get_by_test_id("completion-item")).to_have_count(2)
                box.press("ArrowDown")
                shoot(page, args.out, "search-typing")
                box.press("Escape")
                page.get_by_test_id("search-input").fill("level:error")
                page.get_by_test_id("search-input").press("Enter")
                expect(page.get_by_test_id("log-line").first).to_be_visible()
                page.get_by_test_id("live-toggle").click()
                expect(page.locator(".tail-status .state")).to_have_text("live")
                for i in range(12):
                    account.ingest(
                        [
                            {
                                "line": f"GET /api/orders/{4000 + i} 200 {12 + i}ms",
                                "app": "api",
                                "level": "error" if i % 4 == 0 else "info",
                            }
                        ],
                        host="web-1",
                    )
                page.get_by_test_id("search-input").fill("")
                page.get_by_test_id("search-input").press("Enter")
                expect(page.locator(".tail-status .state")).to_have_text("live")
                for i in range(20):
                    account.ingest(
                        [
                            {
                                "line": f"GET /api/orders/{5000 + i} 200 {10 + i}ms",
                                "app": "api",
                                "level": "info",
                            }
                        ],
                        host=f"web-{1 + i % 2}",
                    )
                    page.wait_for_timeout(60)
                shoot(page, args.out, "live-tail")
                page.goto(f"{server.base_url}/boards/{boardid}")
                expect(page.get_by_test_id("board-graph")).to_have_count(4)
                shoot(page, args.out, "board")
                page.goto(server.base_url + "/rules")
                page.get_by_test_id("rule-new").click()
                page.get_by_test_id("rule-title").fill("Redis debug")
                page.get_by_test_id("rule-apps").fill("redis")
                page.get_by_test_id("rule-query").fill("level:debug")
                page.get_by_test_id("rule-preview-button").click()
                expect(page.get_by_test_id("rule-preview-count")).to_be_visible()
                shoot(page, args.out, "rules")
                page.goto(server.base_url + "/views")
                expect(page.get_by_test_id("view-row")).to_have_count(3)
                shoot(page, args.out, "views")
                row = page.get_by_test_id("view-row").filter(has_text="Server errors")
                row.get_by_test_id("view-alerts").click()
                page.get_by_test_id("alert-channel").first.get_by_test_id("alert-edit").click()
                shoot(page, args.out, "views-alerts")
                # What an alert's link opens: the view over the window that fired.
                to = now_ms() - 3 * 3_600_000 + 300_000
                page.goto(f"{server.base_url}/views/{view_id}?from={to - 600_000}&to={to}")
                expect(page.get_by_test_id("log-line").first).to_be_visible()
                shoot(page, args.out, "alert-link")
                page.goto(server.base_url + "/usage")
                expect(page.get_by_test_id("usage-chart").locator("canvas")).to_have_count(1)
                shoot(page, args.out, "usage")
                page.goto(f"{server.base_url}/pipelines/{pipeline_id}")
                expect(page.get_by_test_id("pipeline-node")).to_have_count(5)
                shoot(page, args.out, "pipeline")
                context.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
