"""Boards, exclusion rules, keys, usage and pipelines in a real browser, each checked
against the public API the page uses."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Page, expect
from tests.live import live_client
from tests.waiting import until
from tests.web.conftest import Site
from tests.web.harness import expect_lines, now_ms, sign_in_with_key


def test_a_board_draws_its_graphs_from_the_aggregation_endpoint(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    account.ingest(
        [{"line": f"hit {i}", "app": "api", "timestamp": now - i * 60_000} for i in range(30)]
    )
    account.ingest(
        [{"line": f"job {i}", "app": "cron", "timestamp": now - i * 90_000} for i in range(10)],
        host="batch-1",
    )
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("nav-boards").click()
    expect(page.get_by_text("No boards yet.")).to_be_visible()  # the page is drawn
    page.get_by_test_id("board-title").fill("Production")
    page.get_by_test_id("board-create").click()
    expect(page.locator("h1")).to_have_text("Production")

    page.get_by_test_id("graph-title").fill("Lines by app")
    page.get_by_test_id("graph-split").select_option("app")
    page.get_by_test_id("graph-add").click()
    graph = page.get_by_test_id("board-graph")
    expect(graph).to_have_count(1)
    expect(graph.locator("canvas")).to_have_count(1)
    expect(graph.locator(".u-legend")).to_contain_text("api")
    expect(graph.locator(".u-legend")).to_contain_text("cron")
    # The legend reads without hovering: each series' total over the range.
    expect(graph.locator(".u-legend")).to_contain_text("30 in all")
    expect(graph.locator(".u-legend")).to_contain_text("10 in all")
    expect(graph.locator(".u-legend")).not_to_contain_text("--")

    page.get_by_test_id("graph-kind").select_option("top")
    page.get_by_test_id("graph-title").fill("Top hosts")
    page.get_by_test_id("graph-field").select_option("host")
    page.get_by_test_id("graph-add").click()
    expect(page.get_by_test_id("board-graph")).to_have_count(2)
    table = page.get_by_test_id("board-graph").nth(1).locator("table")
    expect(table.locator("tbody tr")).to_have_count(2)
    expect(table.locator("tbody tr").first).to_contain_text("web-1")
    expect(table.locator("tbody tr").first).to_contain_text("30")

    # Resized and moved: saved on the board, so a reload draws the same.
    page.get_by_test_id("board-graph").nth(1).get_by_label("Width").select_option("2")
    page.get_by_test_id("board-graph").nth(1).get_by_title("Move left").click()
    expect(page.get_by_test_id("board-graph").first).to_contain_text("Top hosts")
    expect(page.get_by_test_id("board-saved")).to_have_text("All changes saved")
    page.reload()
    expect(page.get_by_test_id("board-graph")).to_have_count(2)
    expect(page.get_by_test_id("board-graph").first).to_contain_text("Top hosts")
    expect(page.get_by_test_id("board-graph").first).to_have_class(re.compile(r"\bw2\b"))
    with account.http() as http:
        boards = http.get("/v1/config/board").json()
        board = http.get(f"/v1/config/board/{boards[0]['boardid']}").json()
    assert [graph["title"] for graph in board["graphs"]] == ["Top hosts", "Lines by app"]
    assert board["graphs"][1] | {"id": ""} == {
        "id": "", "kind": "count", "title": "Lines by app", "query": "", "split": "app", "width": 1, "height": "m",
    }  # fmt: skip


def test_an_exclusion_rule_is_previewed_then_saved_and_toggled(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    account.ingest(
        [{"line": f"noisy debug {i}", "app": "redis", "level": "debug", "timestamp": now - i * 1000} for i in range(7)]
        + [{"line": "redis info", "app": "redis", "level": "info", "timestamp": now - 500}]
        + [{"line": "api debug", "app": "api", "level": "debug", "timestamp": now - 400}]
        + [{"line": "too old", "app": "redis", "level": "debug", "timestamp": now - 2 * 3600_000}],
        host="cache-1",
    )  # fmt: skip
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("nav-rules").click()
    page.get_by_test_id("rule-new").click()
    page.get_by_test_id("rule-title").fill("Redis debug")
    page.get_by_test_id("rule-apps").fill("red*")
    page.get_by_test_id("rule-hosts").fill("cache-1")
    page.get_by_test_id("rule-query").fill("level:debug")
    page.get_by_test_id("rule-preview-button").click()
    expect(page.get_by_test_id("rule-preview-count")).to_have_text(
        "7 of the last hour's stored lines would have been excluded."
    )
    preview = page.get_by_test_id("rule-preview")
    expect(preview.get_by_test_id("log-line")).to_have_count(7)
    expect_lines(preview, [f"noisy debug {i}" for i in range(7)])

    page.get_by_test_id("rule-indexonly").uncheck()
    page.get_by_test_id("rule-save").click()
    expect(page.get_by_test_id("rule-row")).to_have_count(1)
    with account.http() as http:
        [rule] = http.get("/v1/config/ingestion/exclusions").json()
    assert rule | {"id": ""} == {
        "id": "", "title": "Redis debug", "hosts": ["cache-1"], "apps": ["red*"],
        "query": "level:debug", "active": True, "indexonly": False,
    }  # fmt: skip

    # The rule works at ingestion, and the toggle turns it off.
    account.ingest([{"line": "excluded now", "app": "redis", "level": "debug"}], host="cache-1")
    page.get_by_test_id("rule-toggle").uncheck()
    with account.http() as http:
        until(
            lambda: not http.get("/v1/config/ingestion/exclusions").json()[0]["active"],
            every=0.1,
            what="the rule turned off",
        )
        account.ingest([{"line": "kept again", "app": "redis", "level": "debug"}], host="cache-1")
        lines = http.get(
            "/v2/export",
            params={"from": now - 60_000, "to": now_ms() + 1000, "query": "excluded OR kept"},
        ).json()["lines"]
    assert [line["_line"] for line in lines] == ["kept again"]


def test_a_parsing_template_is_previewed_saved_activated_and_its_fields_found(
    site: Site, page: Page
) -> None:
    account = site.account()
    now = now_ms()
    account.ingest(
        [{"line": f"GET /cart/{i} took {10 * i}ms user=u{i}", "timestamp": now - i * 1000} for i in range(3)]
        + [{"line": "unrelated text", "timestamp": now - 5000}]
    )  # fmt: skip
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("nav-parsing").click()
    expect(page.get_by_text("No parsing templates")).to_be_visible()
    page.get_by_test_id("template-new").click()
    page.get_by_test_id("template-name").fill("Cart requests")
    page.get_by_test_id("template-pattern").fill(
        r"^%{WORD:method} %{URIPATH:path} took %{INT:took_ms:int}ms user=(?P<user>\w+)"
    )
    page.get_by_test_id("template-preview-button").click()
    expect(page.get_by_test_id("template-preview-count")).to_have_text(
        "3 of the latest 4 lines match; fields: method, path, took_ms, user"
    )
    rows = page.get_by_test_id("template-preview-line")
    expect(rows).to_have_count(4)
    expect(rows.first.get_by_test_id("template-preview-fields")).to_have_text(
        '{"method":"GET","path":"/cart/0","took_ms":0,"user":"u0"}'
    )
    expect(
        page.get_by_test_id("template-preview-fields").filter(has_text="no match")
    ).to_have_count(1)
    page.get_by_test_id("template-save").click()  # saved as a draft
    expect(page.get_by_test_id("template-row")).to_have_count(1)
    expect(page.get_by_test_id("template-row-state")).to_have_text("draft")
    account.ingest([{"line": "GET /cart/77 took 5ms user=draft"}])  # a draft does nothing
    page.get_by_test_id("template-activate").click()
    expect(page.get_by_test_id("template-row-state")).to_have_text("active")
    account.ingest([{"line": "POST /cart/99 took 250ms user=zoe"}])

    # A second template's preview: the lines the active one takes never reach it.
    page.get_by_test_id("template-new").click()
    page.get_by_test_id("template-name").fill("Verbs")
    page.get_by_test_id("template-pattern").fill(r"^(?P<verb>[A-Z]+) ")
    page.get_by_test_id("template-preview-button").click()
    expect(page.get_by_test_id("template-preview-count")).to_have_text(
        "0 of the latest 6 lines match; 5 taken first by earlier templates; fields: verb"
    )
    expect(page.get_by_test_id("template-preview-taken")).to_have_count(5)
    expect(page.get_by_test_id("template-preview-taken").first).to_have_text(
        "taken first by “Cart requests”"
    )

    # Found with field:value on the search page, its fields shown when expanded.
    page.goto(f"{site.base_url}/search")
    page.get_by_test_id("search-input").fill("user:zoe took_ms:>200")
    page.get_by_test_id("search-input").press("Enter")
    expect_lines(page, ["POST /cart/99 took 250ms user=zoe"])
    line = page.get_by_test_id("log-line").first
    line.locator(".summary").click()
    expect(line.locator(".detail .meta")).to_contain_text("took_ms: 250")
    expect(line.locator(".detail .meta")).to_contain_text("user: zoe")
    with account.http() as http:
        found = http.get(
            "/v2/export",
            params={"from": now - 60_000, "to": now_ms() + 1000, "query": "user:draft OR user:zoe"},
        ).json()["lines"]
    assert [(line["_line"], line.get("_meta")) for line in found] == [
        ("POST /cart/99 took 250ms user=zoe", {"method": "POST", "path": "/cart/99", "took_ms": 250, "user": "zoe"})
    ]  # fmt: skip


def test_the_parsing_page_shows_each_templates_lines_parsed_and_what_it_sets(
    site: Site, page: Page
) -> None:
    account = site.account()
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("nav-parsing").click()
    page.get_by_test_id("template-new").click()
    page.get_by_test_id("template-name").fill("Jobs")
    page.get_by_test_id("template-pattern").fill(
        r"^%{TIMESTAMP_ISO8601:_ts} %{NOTSPACE:_host} job=%{WORD:job}"
    )
    page.get_by_test_id("template-state").select_option("active")
    page.get_by_test_id("template-save").click()
    expect(page.get_by_test_id("template-row-matched")).to_have_text("0")
    expect(page.get_by_test_id("template-row-last-match")).to_have_count(0)

    written = [
        datetime.fromtimestamp(now_ms() / 1000 - 60 - i, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for i in range(3)
    ]
    account.ingest(
        [{"line": f"{written[i]} batch-{i} job=j{i}"} for i in range(3)] + [{"line": "not a job"}]
    )
    with account.http() as http:  # the worker's count reaches the database
        until(
            lambda: http.get("/v1/config/parsing/templates").json()[0]["matched_lines"] == 3,
            what="the template's count",
        )
    page.reload()
    expect(page.get_by_test_id("template-row-matched")).to_contain_text("3")
    expect(page.get_by_test_id("template-row-last-match")).to_contain_text("last ")

    # The preview says what the template would set of the line itself.
    page.get_by_role("button", name="Edit").click()
    page.get_by_test_id("template-preview-button").click()
    expect(page.get_by_test_id("template-preview-count")).to_have_text(
        "3 of the latest 4 lines match; fields: _ts, _host, job"
    )
    sets = page.get_by_test_id("template-preview-sets")
    expect(sets).to_have_count(3)
    expect(sets.filter(has_text="host batch-1")).to_have_count(1)
    expect(sets.first).to_contain_text(f"time {written[0][:10]}")


def test_keys_are_created_shown_and_deleted(site: Site, page: Page) -> None:
    account = site.account()
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("nav-keys").click()
    expect(page.get_by_test_id("key-row")).to_have_count(2)
    page.get_by_test_id("key-type").select_option("service")
    page.get_by_test_id("key-name").fill("ci")
    page.get_by_test_id("key-create").click()
    expect(page.get_by_test_id("key-secret")).to_have_text(re.compile(r"sta_"))
    secret = page.get_by_test_id("key-secret").inner_text().strip()
    assert re.fullmatch(r"sta_[0-9a-f]{40}", secret)
    expect(page.get_by_test_id("key-row")).to_have_count(3)

    with live_client(site.base_url, headers={"Authorization": f"Token {secret}"}) as http:
        assert http.get("/v1/config/keys").status_code == 200
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_test_id("key-row").filter(has_text="ci").get_by_test_id("key-delete").click()
        expect(page.get_by_test_id("key-row")).to_have_count(2)
        assert http.get("/v1/config/keys").status_code == 401


def test_usage_charts_lines_and_bytes_per_day(site: Site, page: Page) -> None:
    account = site.account()
    account.ingest([{"line": "x" * 100} for _ in range(12)])
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("nav-usage").click()
    expect(page.get_by_test_id("usage-chart").locator("canvas")).to_have_count(1)
    with account.http() as http:
        usage = http.get("/v1/usage").json()
    today = usage["days"][-1]
    assert today["lines_stored"] == 12
    row = page.locator("table.list tbody tr").first
    expect(row).to_contain_text(today["day"])
    expect(row.locator("td").nth(1)).to_have_text("12")


def test_a_pipeline_is_drawn_as_its_graph_of_nodes(site: Site, page: Page) -> None:
    account = site.account()
    with account.http() as http:
        pipeline = http.post("/v3/pipeline", json={"title": "Edge"}).json()["data"]
        base = f"/v3/pipeline/{pipeline['id']}"
        route = http.post("/v3/pipeline/gateway-route", json={"title": "in"})
        assert route.status_code in (200, 201), route.text
        route_id = route.json()["data"]["id"]
        source = http.post(
            f"{base}/source",
            json={"type": "http", "title": "Webhook", "gateway_route_id": route_id},
        )
        assert source.status_code in (200, 201), source.text
        source_id = source.json()["data"]["id"]
        keep = {
            "type": "filter",
            "title": "Keep errors",
            "inputs": [source_id],
            "user_config": {
                "action": "allow",
                "condition": {
                    "expressions": [{"field": ".level", "str_operator": "equal", "value": "error"}]
                },
            },
        }
        processor = http.post(f"{base}/processor", json=keep)
        assert processor.status_code in (200, 201), processor.text
        processor_id = processor.json()["data"]["id"]
        for title in ("Store", "Drop"):
            sink = http.post(
                f"{base}/destination",
                json={"type": "blackhole", "title": title, "inputs": [processor_id]},
            )
            assert sink.status_code in (200, 201), sink.text
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("nav-pipelines").click()
    page.get_by_test_id("pipeline-row").get_by_role("link", name="Edge").click()
    graph = page.get_by_test_id("pipeline-graph")
    expect(graph.get_by_test_id("pipeline-node")).to_have_count(4)
    expect(graph.locator("path.edge")).to_have_count(3)
    # Columns by depth: the source left of the filter, left of both sinks.
    xs = {
        name: float(graph.get_by_test_id("pipeline-node").filter(has_text=name).locator("rect").get_attribute("x") or "nan")
        for name in ("Webhook", "Keep errors", "Store", "Drop")
    }  # fmt: skip
    assert xs["Webhook"] < xs["Keep errors"] < xs["Store"] == xs["Drop"]
    # The pipeline has no description: nothing stands in for it, on either page.
    assert pipeline["description"] is None
    expect(page.locator("main h1")).to_have_text("Edge")
    assert "null" not in page.locator("main").inner_text()
    page.go_back()
    expect(page.get_by_test_id("pipeline-row")).to_have_count(1)
    assert "null" not in page.locator("main").inner_text()


def _iso(ms: int) -> str:
    """``ms`` as the time box reads an absolute time with its own zone (to the second)."""
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def test_a_graph_has_a_range_of_its_own_or_the_boards(site: Site, page: Page) -> None:
    """A graph given a range is drawn over it whatever the board's range, says which it
    is, and keeps it in the board; set back to the board's range, it follows the board
    again and the board holds no range for it."""
    account = site.account()
    now = now_ms()
    account.ingest([{"line": "now", "timestamp": now - 60_000}], host="recent-1")
    account.ingest([{"line": "then", "timestamp": now - 3 * 3_600_000}], host="earlier-1")
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("nav-boards").click()
    expect(page.get_by_text("No boards yet.")).to_be_visible()
    page.get_by_test_id("board-title").fill("Ranges")
    page.get_by_test_id("board-create").click()
    expect(page.locator("h1")).to_have_text("Ranges")
    page.get_by_test_id("board-range").select_option("1h")

    # Two tables of the top hosts: one over the board's range, one over 7 days.
    for title, own in (("Near", ""), ("Week", "7d")):
        page.get_by_test_id("graph-kind").select_option("top")
        page.get_by_test_id("graph-title").fill(title)
        page.get_by_test_id("graph-field").select_option("host")
        page.get_by_test_id("graph-range").select_option(own)
        page.get_by_test_id("graph-add").click()
    graphs = page.get_by_test_id("board-graph")
    expect(graphs).to_have_count(2)
    boards, week = (
        graphs.filter(has=page.locator("h3", has_text=title)) for title in ("Near", "Week")
    )
    expect(boards.locator("tbody tr")).to_have_text([re.compile(r"^recent-1\s*1$")])
    expect(week.locator("tbody tr")).to_have_count(2)
    expect(week.get_by_test_id("board-graph-range")).to_have_text("Last 7 days")
    expect(boards.get_by_test_id("board-graph-range")).to_have_count(0)
    expect(page.get_by_test_id("board-saved")).to_have_text("All changes saved")
    with account.http() as http:
        [listed] = http.get("/v1/config/board").json()
        stored = http.get(f"/v1/config/board/{listed['boardid']}").json()["graphs"]
    assert [graph.get("range") for graph in stored] == [None, "7d"]
    assert "range" not in stored[0]

    # The board's range widened: the first follows it, the week's stays its own.
    page.get_by_test_id("board-range").select_option("24h")
    expect(boards.locator("tbody tr")).to_have_count(2)
    page.get_by_test_id("board-range").select_option("15m")
    expect(boards.locator("tbody tr")).to_have_count(1)
    expect(week.locator("tbody tr")).to_have_count(2)
    # The week's graph given the board's range again: kept so after a reload.
    week.get_by_label("Range").select_option("")
    expect(page.get_by_test_id("board-saved")).to_have_text("All changes saved")
    with account.http() as http:
        stored = http.get(f"/v1/config/board/{listed['boardid']}").json()["graphs"]
    assert [("range" in graph) for graph in stored] == [False, False]
    # The board's range is in the address: a reload (or the link) draws the same.
    page.get_by_test_id("board-range").select_option("7d")
    assert parse_qs(urlparse(page.url).query)["range"] == ["7d"]
    page.reload()
    expect(page.get_by_test_id("board-range")).to_have_value("7d")
    expect(page.get_by_test_id("board-graph")).to_have_count(2)
    expect(page.get_by_test_id("board-graph-range")).to_have_count(0)
    expect(page.get_by_test_id("board-graph").last.locator("tbody tr")).to_have_count(2)
    page.get_by_test_id("board-range").select_option("24h")
    assert "range" not in parse_qs(urlparse(page.url).query)

    # A typed range, as on the search page: relative (its own option, in the address),
    # then absolute bounds (the custom option names them; from/to in the address).
    near = page.get_by_test_id("board-graph").first
    typed = page.get_by_test_id("board-time-input")
    typed.fill("-90m")
    typed.press("Enter")
    expect(page.get_by_test_id("board-range")).to_have_value("90m")
    expect(page.get_by_test_id("board-range").locator("option:checked")).to_have_text("Last 90m")
    assert parse_qs(urlparse(page.url).query)["range"] == ["90m"]
    expect(near.locator("tbody tr")).to_have_text([re.compile(r"^recent-1\s*1$")])
    typed.fill("nonsense")
    typed.press("Enter")
    expect(page.get_by_test_id("board-time-error")).to_contain_text("time: cannot read")
    expect(page.get_by_test_id("board-range")).to_have_value("90m")  # unchanged
    start, end = now - 4 * 3_600_000, now - 2 * 3_600_000
    typed.fill(f"{_iso(start)} .. {_iso(end)}")
    typed.press("Enter")
    expect(page.get_by_test_id("board-time-error")).to_have_text("")
    expect(page.get_by_test_id("board-range")).to_have_value("custom")
    expect(near.locator("tbody tr")).to_have_text([re.compile(r"^earlier-1\s*1$")])
    address = parse_qs(urlparse(page.url).query)
    assert "range" not in address
    assert (int(address["from"][0]) // 1000, int(address["to"][0]) // 1000) == (
        start // 1000,
        end // 1000,
    )
    page.reload()
    expect(page.get_by_test_id("board-range")).to_have_value("custom")
    expect(page.get_by_test_id("board-graph").first.locator("tbody tr")).to_have_text(
        [re.compile(r"^earlier-1\s*1$")]
    )
    # A graph's own range may be any relative one (set in its JSON): it names it.
    with account.http() as http:
        board = http.get(f"/v1/config/board/{listed['boardid']}").json()
        graphs = board["graphs"]
        graphs[1]["range"] = "3d"
        changed = http.patch(f"/v1/config/board/{listed['boardid']}", json={"graphs": graphs})
        assert changed.status_code == 200, changed.text
    page.reload()
    expect(page.get_by_test_id("board-graph-range")).to_have_text("Last 3d")
    expect(page.get_by_test_id("board-graph").last.get_by_label("Range")).to_have_value("3d")

    # Or absolute bounds, typed in the graph's controls as in the board's box (a typo is
    # said and changes nothing): kept in the graph, named in its head and its select,
    # drawn over them whatever the board's range.
    page.get_by_test_id("board-range").select_option("15m")
    near, week = (
        page.get_by_test_id("board-graph").filter(has=page.locator("h3", has_text=title))
        for title in ("Near", "Week")
    )
    expect(near.locator("tbody tr")).to_have_text([re.compile(r"^recent-1\s*1$")])
    week.get_by_label("Range").select_option("custom")
    own = week.get_by_test_id("graph-time-input")
    expect(own).to_be_focused()
    own.fill("yesterday")
    own.press("Enter")
    expect(week.get_by_test_id("graph-time-error")).to_contain_text("time: cannot read")
    own.fill(f"{_iso(start)} .. {_iso(end)}")
    own.press("Enter")
    expect(page.get_by_test_id("board-saved")).to_have_text("All changes saved")
    expect(week.locator("tbody tr")).to_have_text([re.compile(r"^earlier-1\s*1$")])
    with account.http() as http:
        stored = http.get(f"/v1/config/board/{listed['boardid']}").json()["graphs"]
    bounds = {"from": start // 1000 * 1000, "to": end // 1000 * 1000}
    assert stored[1]["range"] == bounds
    named = re.compile(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.000 \u2013 \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.000$"
    )
    expect(week.get_by_test_id("board-graph-range")).to_have_text(named)
    expect(week.get_by_label("Range").locator("option:checked")).to_have_text(named)
    page.reload()
    expect(week.get_by_label("Range")).to_have_value("custom")
    expect(week.locator("tbody tr")).to_have_text([re.compile(r"^earlier-1\s*1$")])
    expect(near.locator("tbody tr")).to_have_text([re.compile(r"^recent-1\s*1$")])

    # The minute's refresh leaves a graph's controls alone while they are in use (a
    # range half typed); the turn after they are left draws the graphs again.
    page.clock.install()
    page.reload()
    expect(week.locator("tbody tr")).to_have_text([re.compile(r"^earlier-1\s*1$")])
    week.get_by_label("Range").select_option("custom")
    own.fill("-2")
    typing = own.element_handle()
    page.clock.fast_forward(61_000)
    assert typing.evaluate("box => box.isConnected && document.activeElement === box")
    expect(own).to_have_value("-2")
    own.press("Escape")
    page.locator("h1").click()
    page.clock.fast_forward(60_000)
    assert not typing.evaluate("box => box.isConnected")
    expect(week.locator("tbody tr")).to_have_text([re.compile(r"^earlier-1\s*1$")])
