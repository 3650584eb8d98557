"""Benchmark: the management reads and lists, per route group, beside a FastAPI floor on
the same server (uvicorn, uvloop, httptools), in one run.

- ``floor``: a FastAPI route per path doing the same credential read and reading the same
  rows with the raw driver (stdlib sqlite3, or asyncpg), answered as JSON
  (``management_floor`` in bench/bare_app.py);
- ``tidegate``: ``tidegate serve`` from this checkout (and, with ``--compare-src DIR``,
  another checkout's ``src`` as ``tidegate@DIR``, e.g. the code before a change).

    python bench/bench_management_reads.py [--database sqlite|postgres] [--rows 20]
        [--seconds 3] [--rounds 2] [--only exclusions,keys] [--compare-src DIR]

The account-scoped routes are read with a service key of the account, the enterprise's
accounts with an enterprise key; each list holds ``--rows`` rows (members: the owner and
``rows - 1`` more; accounts: ``rows``; groups: ``rows``, each holding a member but the
last; categories: ``rows`` of views; parsing templates: ``rows`` drafts; archiving:
an s3 bucket, sealed; gateway routes: ``rows``, each with an HTTP source in a pipeline;
the first route's access keys and signing keys: ``rows`` of each; features: the
account's one feature, enabled; the index-rate alert: set, an e-mail and a webhook
channel; the pipeline alerts: ``rows`` threshold alerts, inactive, on the first
pipeline's source, one with a webhook, the rest a log analysis service; ingestion status:
active; archiving status: the days the servers' archive runners queued; the CLI's
``/info``, ``/orgs``, ``/v1/auth/session`` and mzm's ``/v3/auth/account`` (and its
one account): read with the service key, the account; the view alert log: ``rows``
deliveries of the first view, each having kept 10 lines, written to the database as the
evaluator writes them, delivered; usage per day: the default 30 days, none counted, as
nothing is ingested; the pipelines' usage metric: the last hour, by minute, of the first
pipeline's source, ``rows`` of its minutes counted, written as the workers add them). Needs `wrk`; servers on CPU 0, wrk on CPU 1 (bench/harness.py).
Prints, per route, the server's CPU per request for each target and its ratio to the
floor's (aim <= 2.0), best round by CPU per request.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import httpx

from harness import (
    CPU_HEADER,
    SideBySide,
    api_json,
    cli_enterprise_token,
    cpu_row,
    have_wrk,
    new_account,
    side_by_side_args,
    wrk,
)

# route group -> the path read (``{rule}``, ``{view}``, ``{preset}``, ``{board}``,
# ``{pipeline}``, ``{group}``, ``{category}``, ``{template}``, ``{route}``, ``{node}``,
# ``{alert}``:
# the first one's id;
# ``{member}``: the first added member's e-mail)
ROUTES = {
    "exclusions list": "/v1/config/ingestion/exclusions",
    "exclusions get": "/v1/config/ingestion/exclusions/{rule}",
    "keys list": "/v1/config/keys",
    "views list": "/v1/config/view",
    "views get": "/v1/config/view/{view}",
    "boards list": "/v1/config/board",
    "boards get": "/v1/config/board/{board}",
    "members list": "/v1/config/members",
    "members get": "/v1/config/members/{member}",
    "pipelines list": "/v3/pipeline",
    "pipelines get": "/v3/pipeline/{pipeline}",
    "preset alerts list": "/v1/config/presetalert",
    "preset alerts get": "/v1/config/presetalert/{preset}",
    "accounts list": "/v3/enterprise/account",
    "features list": "/v3/enterprise/account/{account}/features",
    "groups list": "/v1/config/groups",
    "groups get": "/v1/config/groups/{group}",
    "categories list": "/v1/config/categories/views",
    "categories get": "/v1/config/categories/views/{category}",
    "parsing templates list": "/v1/config/parsing/templates",
    "parsing templates get": "/v1/config/parsing/templates/{template}",
    "archiving get": "/v1/config/archiving",
    "index-rate get": "/v1/config/index-rate",
    "gateway routes list": "/v3/pipeline/gateway-route",
    "gateway routes get": "/v3/pipeline/gateway-route/{route}",
    "gateway access keys list": "/v3/pipeline/gateway-route/{route}/access-key",
    "gateway signing keys list": "/v3/pipeline/gateway-route/{route}/signing-key",
    "pipeline nodes list": "/v3/pipeline/{pipeline}/source",
    "pipeline nodes get": "/v3/pipeline/{pipeline}/source/{node}",
    "pipeline alerts list": "/v3/pipeline/{pipeline}/source/{node}/alert",
    "pipeline alerts get": "/v3/pipeline/{pipeline}/alert/{alert}",
    "ingestion status get": "/v1/config/ingestion/status",
    "archiving status get": "/v1/config/archiving/status",
    "cli info": "/info",
    "cli orgs": "/orgs",
    "session whoami": "/v1/auth/session",
    "auth accounts list": "/v3/auth/account",
    "auth accounts get": "/v3/auth/account/{account}",
    "view alert log": "/v1/config/view/{view}/alerts",
    # The floor reads the account's features only: it does not write the catalogue.
    "component types": "/v3/pipeline/component-type",
    "usage days": "/v1/usage",
    "pipelines usage": "/v3/pipeline/metric/usage",
}

# Read with the enterprise key; the rest with the account's service key.
ENTERPRISE_READS = {"accounts list", "features list"}


def _alert(i: int) -> dict[str, Any]:
    """A threshold alert (the first with a webhook, the rest a log analysis service),
    not active (so the servers' evaluators do not evaluate them while measured)."""
    service: dict[str, Any] = {"name": "log_analysis", "ingestion_key": f"key-{i}"}
    if i == 0:
        service = {"name": "webhook", "uri": "https://8.8.8.8/alert", "method": "post",
                   "auth": {"strategy": "bearer", "token": "t"},
                   "headers": [{"header_name": "x-h", "header_value": "v"}]}  # fmt: skip
    expression = {"field": ".level", "str_operator": "equal", "value": "error"}
    evaluation = {"alert_type": "threshold", "event_type": "log", "operation": "SUM",
                  "conditional": {"expressions": [expression]}}  # fmt: skip
    config = {"general": {"name": f"alert {i}"}, "evaluation": evaluation,
              "alert_payload": {"service": service}}  # fmt: skip
    return {"alert_config": config, "active": False}


def seed(base: str, enterprise: dict[str, str], rows: int) -> tuple[dict[str, str], dict[str, str]]:
    """An account with ``rows`` of everything; (its service key's headers, the first
    item's id of each kind by ``ROUTES``' placeholders)."""
    account = new_account(base, enterprise)
    for _ in range(rows - 1):
        new_account(base, enterprise)
    delegate = {**enterprise, "x-delegate-account-id": account}
    with httpx.Client(base_url=base, headers=delegate, timeout=30) as http:
        key = api_json(http.post("/v1/config/keys", params={"type": "service"}))["key"]
        for _ in range(rows - 2):
            api_json(http.post("/v1/config/keys", params={"type": "ingestion"}))
        ids: dict[str, str] = {}
        groups: list[str] = []
        for i in range(rows):
            rule = {"title": f"rule {i}", "hosts": [f"host-{i}"], "apps": ["web"],
                    "query": f"level:debug word{i}", "active": True}  # fmt: skip
            made = api_json(http.post("/v1/config/ingestion/exclusions", json=rule))
            ids.setdefault("rule", made["id"])
            view = api_json(http.post("/v1/config/view", json={"name": f"view {i}", "query": f"w{i}",
                                                              "apps": ["web"], "levels": ["error"]}))  # fmt: skip
            ids.setdefault("view", view["viewID"])
            board = api_json(http.post("/v1/config/board", json={"title": f"board {i}"}))
            ids.setdefault("board", board["boardid"])
            pipeline = api_json(http.post("/v3/pipeline", json={"title": f"pipeline {i}"}))
            ids.setdefault("pipeline", pipeline["data"]["id"])
            route = api_json(http.post("/v3/pipeline/gateway-route", json={"title": f"r{i}"}))
            ids.setdefault("route", route["data"]["id"])
            source = {"type": "http", "gateway_route_id": route["data"]["id"]}
            node = api_json(http.post(f"/v3/pipeline/{pipeline['data']['id']}/source", json=source))
            ids.setdefault("node", node["data"]["id"])
            preset = api_json(http.post("/v1/config/presetalert", json={"name": f"preset {i}"}))
            ids.setdefault("preset", preset["presetid"])
            group = api_json(http.post("/v1/config/groups", json={"name": f"group {i}",
                                                                  "apps": ["web"]}))  # fmt: skip
            groups.append(group["id"])
            category = api_json(http.post("/v1/config/categories/views", json={"name": f"c{i}"}))
            ids.setdefault("category", category["id"])
            template = {"name": f"template {i}", "pattern": f"took %{{INT:ms{i}:int}}ms"}
            made = api_json(http.post("/v1/config/parsing/templates", json=template))
            ids.setdefault("template", made["id"])
        ids["group"] = groups[0]
        ids["account"] = account
        feature = f"/v3/enterprise/account/{account}/features/throttle-processor"
        api_json(httpx.put(base + feature, headers=enterprise, timeout=30))
        keys = f"/v3/pipeline/gateway-route/{ids['route']}"
        for i in range(rows):  # the first route's keys: ``rows`` of each kind
            api_json(http.post(f"{keys}/access-key", json={"title": f"key {i}"}))
            api_json(http.put(f"{keys}/signing-key", json={"key": f"signing-key-{i:04d}" * 2}))
        api_json(http.post("/v1/config/archiving", json={"integration": "s3", "bucket": "b"}))
        channels = {"email": ["ops@example.com"], "webhook": [{"url": "https://8.8.8.8/r"}]}
        rate = {"max_lines": 1000, "max_z_score": 2.5, "channels": channels, "enabled": True}
        api_json(http.put("/v1/config/index-rate", json=rate))
        alerts = f"/v3/pipeline/{ids['pipeline']}/source/{ids['node']}/alert"
        for i in range(rows):  # the first pipeline's source's alerts
            alert = api_json(http.post(alerts, json=_alert(i)))
            ids.setdefault("alert", alert["data"]["id"])
        for i in range(rows - 1):
            member = {"email": f"member-{i}@example.com", "role": "member"}
            api_json(http.post("/v1/config/members", json=member))
            ids.setdefault("member", member["email"])
            # each group holds a member (the first added one is in the first group)
            api_json(
                http.put(f"/v1/config/members/{member['email']}", json={"groups": [groups[i]]})
            )
    return {"Authorization": f"Token {key}"}, ids


# A line an alert kept, as export gives it.
KEPT_LINE = {"_ts": 0, "_line": "GET /api/items 503 took 12ms", "_app": "web",
             "_host": "web-1", "level": "error", "_meta": {"status": 503, "ms": 12.5},
             "_tag": ["prod"], "_file": "/var/log/web.log"}  # fmt: skip


def add_pipeline_usage(
    database_url: str, account: str, pipeline: str, component: str, rows: int
) -> None:
    """``rows`` minutes of the last hour counted for the pipeline's component."""
    from tidegate.db.engine import Database
    from tidegate.models import PipelineUsage

    minute = int(time.time() * 1000) // 60_000 * 60_000

    async def write() -> None:
        database = Database.connect(database_url)
        try:
            async with database.write_sessions() as session:
                for i in range(rows):
                    session.add(
                        PipelineUsage(
                            account_id=account, pipeline_id=pipeline, component_id=component,
                            bucket_ms=minute - i * 60_000, ingress_events=100 + i,
                            ingress_bytes=20_000 + i, egress_events=100 + i,
                            egress_bytes=20_000 + i,
                        )
                    )  # fmt: skip
                await session.commit()
        finally:
            await database.dispose()

    asyncio.run(write())


def add_deliveries(database_url: str, account: str, view_id: str, rows: int) -> None:
    """``rows`` delivered notifications of the view, each having kept 10 lines (the
    evaluator's rows; written straight to the database: firing them takes an alert
    round per row)."""
    from tidegate.db.engine import Database
    from tidegate.models import AlertDelivery

    now = int(time.time() * 1000)

    async def write() -> None:
        database = Database.connect(database_url)
        try:
            async with database.write_sessions() as session:
                for i in range(rows):
                    lines = [{**KEPT_LINE, "_ts": now - i * 1000 - n} for n in range(10)]
                    session.add(
                        AlertDelivery(
                            account_id=account, view_id=view_id, source="view",
                            channel_key="0:webhook", integration="webhook", channel_sealed="x",
                            event="trigger", payload={"count": 10, "matches": lines},
                            status="delivered", attempts=1, fired_ms=now - i * 1000,
                            next_attempt_ms=0, finished_ms=now - i * 1000 + 50,
                        )
                    )  # fmt: skip
                await session.commit()
        finally:
            await database.dispose()

    asyncio.run(write())


def main() -> int:
    parser = side_by_side_args(__doc__, seconds=3)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--only", help="comma-separated route groups (default: all)")
    args = parser.parse_args()
    if not have_wrk():
        return 2
    groups = {
        name: path
        for name, path in ROUTES.items()
        if not args.only or name.split()[0] in args.only.split(",") or name in args.only
    }

    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    sizes: dict[tuple[str, str], int] = {}
    with SideBySide(args.database) as run:
        enterprise = {"Authorization": f"Token {cli_enterprise_token(run.env)}"}
        account_headers, ids = seed(run.tidegate("tidegate"), enterprise, args.rows)
        add_deliveries(run.database_url, ids["account"], ids["view"], args.rows)
        add_pipeline_usage(
            run.database_url, ids["account"], ids["pipeline"], ids["node"], args.rows
        )
        run.floor("floor", "management_floor")
        if args.compare_src:
            run.tidegate(f"tidegate@{args.compare_src}", args.compare_src)

        def target(name: str, group: str) -> tuple[str, dict[str, str]]:
            path = groups[group]
            for placeholder, found in ids.items():
                path = path.replace(f"{{{placeholder}}}", found)
            headers = enterprise if group in ENTERPRISE_READS else account_headers
            return run.url(name, path), headers

        for name in run.servers:
            for group in groups:
                url, headers = target(name, group)
                answer = httpx.get(url, headers=headers, timeout=30)
                if answer.status_code != 200:
                    raise RuntimeError(f"{name} {url}: {answer.status_code} {answer.text[:300]}")
                sizes[name, group] = len(answer.content)
                wrk(url, headers, 1, run.pid(name))  # warm-up
                results[name, group] = []
        for _ in range(args.rounds):
            for group in groups:
                for name in run.servers:
                    url, headers = target(name, group)
                    results[name, group].append(wrk(url, headers, args.seconds, run.pid(name)))
        names = list(run.servers)

    best = {key: min(runs, key=lambda r: r["cpu_ms"]) for key, runs in results.items()}
    print(
        f"management reads, {args.rows} rows, authenticated, 1 worker, {args.database}, "
        f"wrk -t1 -c32 -d{args.seconds}s, best of {args.rounds} (by CPU per request)"
    )
    print(f"{'route group':<20} {'target':<26} {'bytes':>6} {CPU_HEADER}")
    for group in groups:
        floor = best["floor", group]["cpu_ms"]
        for name in names:
            print(
                f"{group:<20} {name:<26} {sizes[name, group]:>6} {cpu_row(best[name, group], floor)}"
            )
    print("x floor: CPU per request over the FastAPI+driver floor's (aim <= 2.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
