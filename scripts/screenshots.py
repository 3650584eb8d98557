"""Screenshots of the web app as a person uses it every day, for the README and
docs/web.md (not part of the test suite):

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]

It starts the real server (`tidegate serve` beside this Python, on 127.0.0.1 with a
temporary SQLite database), makes an account, a person, views, a board and a pipeline,
and ingests twelve hours of made-up but realistic lines (nginx access and error logs,
an API's JSON lines, a worker's logfmt, PostgreSQL and Redis) through the public API.
Then Debian's Chromium (Playwright) signs the person in and takes each picture at
1280x800. The lines come from a fixed seed, so a run differs from the last one only in
the times shown. The PNGs are made smaller with pngquant and optipng when they are
installed (`apt-get install pngquant optipng`); without them they are kept as
Chromium writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlparse

import httpx
from playwright.sync_api import Page, ViewportSize, expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
TIDEGATE = Path(sys.executable).parent / "tidegate"  # the CLI of the Python running this
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
EMAIL = "maria.lopez@acme-shop.example"
PASSWORD = "correct horse battery staple"
HOUR_MS = 3_600_000
SPAN_MS = 12 * HOUR_MS
BURST_AGO_MS = 3 * HOUR_MS  # the payment provider's bad ten minutes

expect.set_options(timeout=60_000)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def checked(response: httpx.Response) -> Any:
    if response.status_code not in (200, 201):
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path}: {response.text}"
        )
    return response.json()


# --- the server -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def tidegate(env: dict[str, str], *args: str) -> str:
    """A `tidegate` command beside this Python, with the server's settings."""
    command = [str(TIDEGATE), *args]
    return subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout


@contextmanager
def server(workdir: Path) -> Iterator[tuple[str, str]]:
    """`tidegate serve` on a free port over a new SQLite database: its address and the
    key of an enterprise made with `tidegate enterprise create`."""
    base_url = f"http://127.0.0.1:{free_port()}"
    env = {
        **os.environ,
        "TIDEGATE_DATA_DIR": str(workdir / "var"),
        "TIDEGATE_DATABASE_URL": f"sqlite+aiosqlite:///{workdir / 'tidegate.sqlite3'}",
        "TIDEGATE_SECRET_KEY": os.urandom(16).hex(),
        "TIDEGATE_PUBLIC_URL": base_url,
        "TIDEGATE_BOOTSTRAP": "false",
        # The seeding is a script with a key, past the keys' 50 calls a minute.
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        # The pipeline editor's event counts: the usage metrics saved every second.
        "TIDEGATE_PIPELINE_USAGE_FLUSH_S": "1",
    }
    tidegate(env, "db", "upgrade")
    token = json.loads(tidegate(env, "enterprise", "create", "--name", "Acme"))["token"]
    port = base_url.rsplit(":", 1)[1]
    log = (workdir / "server.log").open("w")
    process = subprocess.Popen(
        [str(TIDEGATE), "serve", "--host", "127.0.0.1", "--port", port, "--no-access-log"],
        env=env,
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server stopped: {(workdir / 'server.log').read_text()}")
            try:
                if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not answer /healthz in 120 s")
            time.sleep(0.2)
        yield base_url, token
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


# --- the account and its content ---------------------------------------------------------


class Account:
    def __init__(self, base_url: str, enterprise_token: str) -> None:
        self.base_url = base_url
        with httpx.Client(base_url=base_url, timeout=60) as http:
            headers = {"Authorization": f"Token {enterprise_token}"}
            created = checked(
                http.post(
                    "/v3/enterprise/account",
                    headers=headers,
                    json={"company": "Acme Shop", "owneremail": "ops@acme-shop.example"},
                )
            )
            delegated = {**headers, "x-delegate-account-id": created["data"]["account_id"]}
            self.service_key = checked(
                http.post("/v1/config/keys", params={"type": "service"}, headers=delegated, json={})
            )["key"]
            self.ingestion_key = checked(
                http.post(
                    "/v1/config/keys", params={"type": "ingestion"}, headers=delegated, json={}
                )
            )["key"]

    def http(self) -> httpx.Client:
        headers = {"Authorization": f"Token {self.service_key}"}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=60)

    def ingest(self, lines: list[dict[str, Any]], *, host: str) -> None:
        with httpx.Client(base_url=self.base_url, timeout=60) as http:
            for start in range(0, len(lines), 500):
                checked(
                    http.post(
                        "/logs/ingest",
                        params={"hostname": host, "now": now_ms()},
                        headers={"apikey": self.ingestion_key},
                        json={"lines": lines[start : start + 500]},
                    )
                )

    def invite_person(self) -> None:
        """An admin with a password: the person the pictures are taken as."""
        with self.http() as http:
            invited = checked(
                http.post(
                    "/v1/config/members", json={"email": EMAIL, "role": "admin", "groups": []}
                )
            )
            token = parse_qs(urlparse(invited["invitation"]["link"]).query)["token"][0]
            checked(
                http.post("/v1/auth/invitation/accept", json={"token": token, "password": PASSWORD})
            )


PATHS = ["/api/orders", "/api/cart", "/api/products", "/api/checkout", "/api/login"]
AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "curl/8.5.0",
]


def stamp(ts: int, fmt: str) -> str:
    return datetime.fromtimestamp(ts / 1000, tz=UTC).strftime(fmt)


def web_line(rng: random.Random, ts: int, in_burst: bool) -> dict[str, Any]:
    """nginx in front of the API, or the API itself (JSON)."""
    path = rng.choice(PATHS)
    status = rng.choice([200] * 12 + [201, 304, 404, 401])
    if in_burst and path == "/api/checkout" and rng.random() < 0.8:
        status = 504
    ms = rng.randint(3, 180) if status != 504 else rng.randint(5000, 5050)
    if rng.random() < 0.5:
        ip = f"203.0.113.{rng.randint(2, 250)}"
        verb = "POST" if path in ("/api/checkout", "/api/login") else "GET"
        text = (
            f'{ip} - - [{stamp(ts, "%d/%b/%Y:%H:%M:%S +0000")}] "{verb} {path} HTTP/1.1" '
            f'{status} {rng.randint(200, 9000)} "https://shop.example/" "{rng.choice(AGENTS)}"'
        )
        level = "error" if status >= 500 else "warn" if status >= 400 else "info"
        return {"line": text, "timestamp": ts, "app": "nginx", "level": level}
    if status == 504:
        body: dict[str, Any] = {
            "level": "error",
            "msg": "payment provider timed out",
            "route": path,
            "upstream": "payments",
            "duration_ms": ms,
            "order_id": rng.randint(100000, 999999),
        }
    else:
        body = {
            "level": "warn" if status >= 400 else "info",
            "msg": "request served",
            "route": path,
            "status": status,
            "duration_ms": ms,
            "user": {"id": rng.randint(1, 400), "plan": rng.choice(["free", "pro"])},
        }
    body["request_id"] = f"req-{rng.getrandbits(40):010x}"
    meta = {
        "k8s": {"namespace": "shop", "pod": f"api-7d9f{rng.choice('abc')}-{rng.randint(10, 99)}"}
    }
    return {"line": json.dumps(body), "timestamp": ts, "app": "api", "meta": meta}


def worker_line(rng: random.Random, ts: int, in_burst: bool) -> dict[str, Any]:
    if in_burst and rng.random() < 0.5:
        text = (
            f'level=error msg="charge failed" invoice=INV-{rng.randint(10000, 99999)} '
            'error="payments: context deadline exceeded" attempt=' + str(rng.randint(1, 3))
        )
    else:
        text = rng.choice(
            [
                f'level=info msg="invoice sent" invoice=INV-{rng.randint(10000, 99999)} '
                f"amount={rng.randint(5, 400)}.00 currency=EUR",
                f'level=info msg="email queued" template=order_shipped to_domain=example.com '
                f"queue_ms={rng.randint(1, 40)}",
                f'level=debug msg="job done" job=reindex_products took_ms={rng.randint(50, 900)}',
            ]
        )
    return {"line": text, "timestamp": ts, "app": "billing-worker"}


def postgres_line(rng: random.Random, ts: int, in_burst: bool) -> dict[str, Any]:
    head = f"{stamp(ts, '%Y-%m-%d %H:%M:%S.')}{ts % 1000:03d} UTC [{rng.randint(3000, 9000)}] "
    roll = rng.random()
    if roll < 0.02:
        body = 'shop@shop ERROR:  duplicate key value violates unique constraint "orders_pkey"'
    elif roll < 0.3:
        body = (
            f"shop@shop LOG:  duration: {rng.randint(1000, 4000)}.{rng.randint(100, 999)} ms  "
            "statement: SELECT * FROM orders WHERE customer_id = $1 ORDER BY created_at DESC"
        )
    else:
        body = (
            f"LOG:  checkpoint complete: wrote {rng.randint(50, 900)} buffers "
            f"({rng.randint(1, 9)}.{rng.randint(0, 9)}%); 0 WAL file(s) added"
        )
    return {"line": head + body, "timestamp": ts, "app": "postgres"}


def redis_line(rng: random.Random, ts: int, in_burst: bool) -> dict[str, Any]:
    head = f"1:M {stamp(ts, '%d %b %Y %H:%M:%S.')}{ts % 1000:03d} "
    body = rng.choice(
        [
            "* Background saving started by pid 4172",
            "* DB saved on disk",
            f"* {rng.randint(100, 900)} changes in 300 seconds. Saving...",
            "# Client id=4411 addr=10.0.3.7:51200 closed for overcoming of output buffer limits.",
        ]
    )
    return {"line": head + body, "timestamp": ts, "app": "redis"}


# host: (lines over twelve hours, how one is made)
SOURCES = {
    "web-1": (1400, web_line),
    "web-2": (1200, web_line),
    "worker-1": (500, worker_line),
    "db-1": (400, postgres_line),
    "cache-1": (200, redis_line),
}


def seed(account: Account, rng: random.Random) -> None:
    now = now_ms()
    for host, (count, make) in SOURCES.items():
        lines = []
        for _ in range(count):
            # Busier in the day's last hours, and more in the payment provider's bad minutes.
            age = int(rng.expovariate(1 / (4 * HOUR_MS)))
            while age >= SPAN_MS:
                age = int(rng.expovariate(1 / (4 * HOUR_MS)))
            if rng.random() < 0.06:
                age = BURST_AGO_MS + rng.randint(-300_000, 300_000)
            in_burst = abs(age - BURST_AGO_MS) < 300_000
            lines.append(make(rng, now - age, in_burst))
        lines.sort(key=lambda line: int(line["timestamp"]))
        account.ingest(lines, host=host)


ALERT_CHANNELS = [
    {
        "integration": "webhook",
        "url": "https://hooks.acme-shop.example/oncall",
        "triggerlimit": 5,
        "triggerinterval": "5m",
    },
    {
        "integration": "email",
        "emails": ["oncall@acme-shop.example"],
        "immediate": "true",
        "triggerlimit": 1,
    },
]


class Content(NamedTuple):
    board_id: str
    pipeline_id: str
    alerted_view_id: str
    route_id: str
    access_key: str


def content(account: Account) -> Content:
    """Views (one with alert channels), a board, an exclusion rule and a pipeline
    (published, its route given an access key)."""
    with account.http() as http:
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
                ("Checkout timeouts", "app:api upstream:payments", "Operations", []),
                ("Slow queries", "app:postgres duration", "Database", []),
                ("Failed logins", "/api/login 401", "Security", []),
            )
        ]
        graphs: list[dict[str, Any]] = [
            {"id": "g1", "kind": "count", "title": "Lines by app", "query": "", "split": "app"},
            {"id": "g2", "kind": "top", "title": "Top hosts", "query": "", "field": "host"},
            {"id": "g3", "kind": "count", "title": "Errors", "query": "level:error", "split": ""},
            {"id": "g4", "kind": "top", "title": "Levels", "query": "", "field": "level"},
        ]
        for graph, width, height in zip(graphs, (2, 1, 2, 1), ("m", "m", "s", "s"), strict=True):
            graph.update(width=width, height=height)
        board = checked(
            http.post("/v1/config/board", json={"title": "Shop overview", "graphs": graphs})
        )
        checked(
            http.post(
                "/v1/config/ingestion/exclusions",
                json={"title": "Health checks", "query": '"GET /healthz"', "active": True},
            )
        )
        pipeline = checked(
            http.post(
                "/v3/pipeline",
                json={"title": "Edge webhooks", "description": "Partner webhooks: errors archived"},
            )
        )["data"]
        base = f"/v3/pipeline/{pipeline['id']}"
        route = checked(http.post("/v3/pipeline/gateway-route", json={"title": "partners"}))
        source = checked(
            http.post(
                f"{base}/source",
                json={
                    "type": "http",
                    "title": "Partner webhooks",
                    "gateway_route_id": route["data"]["id"],
                },
            )
        )["data"]

        def level_filter(title: str, action: str, level: str) -> Any:
            condition = {
                "expressions": [{"field": ".level", "str_operator": "equal", "value": level}]
            }
            config = {"action": action, "conditional": condition}
            body = {
                "type": "filter",
                "title": title,
                "inputs": [source["id"]],
                "user_config": config,
            }
            return checked(http.post(f"{base}/processor", json=body))["data"]

        errors = level_filter("Errors only", "allow", "error")
        quiet = level_filter("Drop debug", "drop", "debug")
        for kind, title, upstream in (
            ("blackhole", "Error archive", errors),
            ("log_analysis", "Log analysis", quiet),
        ):
            checked(
                http.post(
                    f"{base}/destination",
                    json={"type": kind, "title": title, "inputs": [upstream["id"]]},
                )
            )
        checked(http.post(f"{base}/publish", json={}))
        key = checked(
            http.post(
                f"/v3/pipeline/gateway-route/{route['data']['id']}/access-key",
                json={"type": "generated", "title": "partners"},
            )
        )["data"]["key"]
    return Content(board["boardid"], pipeline["id"], views[0], route["data"]["id"], key)


PARTNERS = ["acme-pay", "shipfast", "mailbird"]


def webhook_events(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """What partners post to the pipeline's route: mostly info, some debug and errors."""
    events = []
    for _ in range(count):
        level = rng.choices(["info", "debug", "error"], weights=[6, 3, 1])[0]
        partner = rng.choice(PARTNERS)
        message = {
            "info": f"delivery {rng.randrange(10_000, 99_999)} accepted",
            "debug": f"retry budget {rng.randrange(1, 5)} left",
            "error": f"signature mismatch from {partner}",
        }[level]
        events.append({"level": level, "partner": partner, "message": message})
    return events


def send_webhooks(account: Account, found: Content, events: list[dict[str, Any]]) -> None:
    with httpx.Client(base_url=account.base_url, timeout=60) as http:
        checked(
            http.post(
                f"/gateway/{found.route_id}",
                headers={"Authorization": f"Token {found.access_key}"},
                json=events,
            )
        )


# --- the pictures --------------------------------------------------------------------------


def optimise(path: Path) -> None:
    """Lossy palette (pngquant: a UI's flat colours survive it) then lossless (optipng)."""
    if shutil.which("pngquant"):
        subprocess.run(
            [
                "pngquant",
                "--force",
                "--skip-if-larger",
                "--quality=70-95",
                "--strip",
                "--ext=.png",
                str(path),
            ],
            check=False,  # 98/99: the quality asked for was not reached, the file is kept
        )
    if shutil.which("optipng"):
        subprocess.run(["optipng", "-quiet", "-o2", "-strip", "all", str(path)], check=True)


def shoot(page: Page, out: Path, name: str) -> None:
    page.wait_for_timeout(500)  # the charts settle after their last resize
    path = out / f"{name}.png"
    page.screenshot(path=str(path))
    optimise(path)
    print(f"{path}  {path.stat().st_size // 1024} KB")


def sign_in(page: Page, base_url: str) -> None:
    page.goto(f"{base_url}/signin")
    page.get_by_test_id("signin-email").fill(EMAIL)
    page.get_by_test_id("signin-password").fill(PASSWORD)
    page.get_by_test_id("signin-submit").click()
    expect(page.get_by_test_id("nav-boards")).to_be_visible()


def first_lines(page: Page) -> None:
    expect(page.get_by_test_id("log-line").first).to_be_visible()
    expect(page.locator("section.results")).to_have_attribute("aria-busy", "false")


def take(page: Page, account: Account, out: Path, found: Content) -> None:
    board_id, pipeline_id, alerted_view_id = found[:3]
    base = account.base_url
    page.goto(f"{base}/signin")
    expect(page.get_by_test_id("signin-key")).to_be_visible()
    shoot(page, out, "signin")
    sign_in(page, base)

    # Search: the histogram with the afternoon's burst, the facets, the newest errors.
    page.goto(f"{base}/search?q=level%3Aerror&range=24h")
    first_lines(page)
    shoot(page, out, "search")

    # An API line opened: its parsed JSON fields and its meta, each a filter.
    page.goto(f"{base}/search?q=app%3Aapi%20upstream%3Apayments&range=24h")
    first_lines(page)
    page.get_by_test_id("log-line").first.locator(".summary").click()
    expect(page.get_by_test_id("value-include").first).to_be_visible()
    shoot(page, out, "search-line")

    # A hit's context: the lines around it from the same host and app, in place; and a
    # field's top values in the facets.
    page.goto(f"{base}/search?q=%22charge%20failed%22&range=24h&field=error")
    first_lines(page)
    hit = page.get_by_test_id("log-line").nth(1)
    hit.locator(".summary").click()
    hit.get_by_test_id("line-context").click()
    expect(hit.get_by_test_id("context-older")).to_be_visible()
    expect(page.get_by_test_id("facet-custom-value").first).to_be_visible()
    shoot(page, out, "search-context")

    # The time picker: a range typed as a person types it, then applied as from-to.
    page.goto(f"{base}/search?q=app%3Anginx%20504&range=24h")
    first_lines(page)
    typed = page.get_by_test_id("time-input")
    typed.fill("now-195m .. now-165m")
    typed.press("Enter")
    expect(page.get_by_test_id("range-from")).to_be_visible()
    first_lines(page)
    typed.fill("-15m")
    shoot(page, out, "time-picker")

    # Completion: a field's values offered as they are typed; the query's words marked.
    page.goto(f"{base}/search?q=checkout%20-nginx&range=24h")
    first_lines(page)
    box = page.get_by_test_id("search-input")
    box.click()
    box.press("End")
    box.press_sequentially(" host:")
    expect(page.get_by_test_id("completion-item").first).to_be_visible()
    box.press("ArrowDown")
    shoot(page, out, "search-typing")
    box.press("Escape")

    # A query that does not parse: where it stopped, nothing of the last search left.
    box.fill("level:error AND (app:api OR")
    box.press("Enter")
    expect(page.get_by_test_id("query-error")).to_be_visible()
    shoot(page, out, "search-error")

    # Live tail: lines shown as they arrive, the facets counting the stream.
    page.goto(f"{base}/search?range=15m")
    page.get_by_test_id("live-toggle").click()
    expect(page.locator(".tail-status .state")).to_have_text("live")
    rng = random.Random(7)
    for _ in range(24):
        host = rng.choice(["web-1", "web-2", "worker-1"])
        make = web_line if host.startswith("web") else worker_line
        account.ingest([make(rng, now_ms(), False)], host=host)
        page.wait_for_timeout(80)
    expect(page.get_by_test_id("log-line")).to_have_count(24)
    page.wait_for_timeout(1200)  # the live facets are redrawn once a second
    shoot(page, out, "live-tail")

    # Views, and one view's alert channels with one being edited.
    page.get_by_test_id("nav-views").click()
    expect(page.get_by_test_id("view-row")).to_have_count(4)
    shoot(page, out, "views")
    row = page.get_by_test_id("view-row").filter(has_text="Server errors")
    row.get_by_test_id("view-alerts").click()
    expect(page.get_by_test_id("alert-channel")).to_have_count(2)
    page.get_by_test_id("alert-channel").first.get_by_test_id("alert-edit").click()
    shoot(page, out, "views-alerts")

    # What an alert's link opens: the view over the window that fired.
    fired = now_ms() - BURST_AGO_MS + 300_000
    page.goto(f"{base}/views/{alerted_view_id}?from={fired - 900_000}&to={fired}")
    first_lines(page)
    shoot(page, out, "alert-link")

    page.goto(f"{base}/boards/{board_id}")
    expect(page.get_by_test_id("board-graph")).to_have_count(4)
    shoot(page, out, "board")

    page.goto(f"{base}/rules")
    page.get_by_test_id("rule-new").click()
    page.get_by_test_id("rule-title").fill("Background saves")
    page.get_by_test_id("rule-apps").fill("redis")
    page.get_by_test_id("rule-query").fill('"Background saving"')
    page.get_by_test_id("rule-preview-button").click()
    expect(page.get_by_test_id("rule-preview-count")).to_be_visible()
    shoot(page, out, "rules")

    # The pipeline editor: partner webhooks flowing (each node's counts), the filter's
    # form open and its live tap showing the errors that pass it.
    rng = random.Random(11)
    for _ in range(6):
        send_webhooks(account, found, webhook_events(rng, 40))
    page.goto(f"{base}/pipelines/{pipeline_id}")
    expect(page.get_by_test_id("pipeline-node")).to_have_count(5)
    node = page.get_by_test_id("pipeline-node")
    expect(node.filter(has_text="Partner webhooks").get_by_test_id("node-rate")).to_contain_text(
        "240 in"
    )
    node.filter(has_text="Errors only").click()
    page.get_by_test_id("node-tab-tap").click()
    tap = page.get_by_test_id("tap-panel")
    tap.get_by_test_id("tap-start").click()
    expect(tap.get_by_test_id("tap-status")).to_contain_text("listening")
    while tap.get_by_test_id("tap-event").count() < 3:
        send_webhooks(account, found, webhook_events(rng, 10))
        page.wait_for_timeout(700)
    tap.get_by_test_id("tap-stop").click()
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, out, "pipeline")

    # The filter's alerts: one added (told to the account's own logs), listed.
    page.get_by_test_id("node-tab-alerts").click()
    panel = page.get_by_test_id("node-panel")
    panel.get_by_test_id("node-alert-name").fill("Partner errors")
    panel.get_by_test_id("node-alert-count").fill("50")
    panel.get_by_test_id("node-alert-window").fill("10")
    panel.get_by_test_id("node-alert-window-type").select_option("sliding")
    panel.get_by_test_id("node-alert-message").fill("{{count}} partner errors in 10 minutes")
    panel.get_by_test_id("node-alert-save").click()
    expect(panel.get_by_test_id("node-alert")).to_have_count(1)
    # A second one: a jump in the errors paged to PagerDuty, its form left open.
    panel.get_by_test_id("node-alert-name").fill("Partner error spike")
    panel.get_by_test_id("node-alert-type").select_option("change")
    panel.get_by_test_id("node-alert-count").fill("200")
    panel.get_by_test_id("node-alert-service").select_option("pager_duty")
    panel.get_by_test_id("node-alert-routing-key").fill("R0UT1NGKEY")
    panel.get_by_test_id("node-alert-severity").select_option("CRITICAL")
    panel.get_by_test_id("node-alert-message").fill("{{name}}: {{count}} partner errors")
    panel.get_by_test_id("node-alert-save").click()
    expect(panel.get_by_test_id("node-alert")).to_have_count(2)
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, out, "pipeline-alerts")

    # The draft simulated on a few partner events: each node's counts, the filter's
    # output opened.
    page.get_by_test_id("pipeline-simulate").click()
    simulation = page.get_by_test_id("simulate-panel")
    partner = PARTNERS[0]
    sample = [
        *webhook_events(rng, 5),
        {"level": "error", "partner": partner, "message": f"signature mismatch from {partner}"},
    ]
    simulation.get_by_test_id("simulate-events").fill(json.dumps(sample, indent=1))
    simulation.get_by_test_id("simulate-run").click()
    results = simulation.get_by_test_id("simulate-node")
    expect(results).to_have_count(5)
    results.filter(has_text="Errors only").get_by_test_id("simulate-output").locator(
        "summary"
    ).click()
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, out, "pipeline-simulate")

    # A node added and left unconnected: the publish refused, shown on that node.
    page.get_by_test_id("node-add").click()
    panel = page.get_by_test_id("node-panel")
    panel.get_by_test_id("node-kind").select_option("processor")
    panel.get_by_test_id("node-type").select_option("sample")
    panel.get_by_test_id("node-title").fill("Sample debug")
    panel.get_by_test_id("node-input").filter(has_text="Partner webhooks").locator("input").check()
    panel.get_by_test_id("node-config").get_by_label("rate", exact=True).fill("10")
    panel.get_by_test_id("node-save").click()
    expect(node).to_have_count(6)
    page.get_by_test_id("pipeline-publish").click()
    expect(node.filter(has_text="Sample debug").get_by_test_id("node-error")).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, out, "pipeline-publish")

    # The account's gateway routes, the partners' one opened with its keys.
    page.goto(f"{base}/pipelines")
    routes = page.get_by_test_id("routes")
    routes.get_by_test_id("route-row").first.get_by_test_id("route-manage").click()
    detail = routes.get_by_test_id("route-detail")
    expect(detail.get_by_test_id("route-key-item")).not_to_have_count(0)
    detail.get_by_test_id("route-signing-key-input").fill("partner signing key, rotated yearly")
    detail.get_by_test_id("route-signing-key-add").click()
    expect(detail.get_by_test_id("route-signing-key-item")).to_have_count(1)
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, out, "pipeline-routes")

    page.goto(f"{base}/usage")
    expect(page.get_by_test_id("usage-chart").locator("canvas")).to_have_count(1)
    shoot(page, out, "usage")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as tmp, server(Path(tmp)) as (base_url, token):
        account = Account(base_url, token)
        account.invite_person()
        seed(account, random.Random(22))
        found = content(account)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                # The same zone and language whoever runs this.
                context = browser.new_context(
                    viewport=VIEWPORT,
                    device_scale_factor=1,
                    timezone_id="Europe/Berlin",
                    locale="en-GB",
                )
                page = context.new_page()
                take(page, account, args.out, found)
                context.close()
            finally:
                browser.close()


if __name__ == "__main__":
    main()
