"""The search page in a real browser: the right lines newest first, the query and range
in the URL, inline query errors, facets, expanding a line and picking a value, zooming
the histogram, scrolling back through export pages, and live tail."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Page, Route, expect
from tests.waiting import until
from tests.web.conftest import Site
from tests.web.harness import expect_lines, now_ms, sign_in_with_key

MINUTE = 60_000


def test_the_search_bar_does_not_move_when_the_first_lines_come(site: Site, page: Page) -> None:
    """The buttons stay where they were drawn while the first search finishes: the
    "Save as view" button, which needs a round trip of its own after the lines, used to
    be added then, and moved Search and Live under a pointer on its way to them."""
    account = site.account()
    account.ingest([{"line": "a line", "timestamp": now_ms()}])
    held: list[Route] = []
    page.route("**/v2/export*", lambda route: held.append(route))
    sign_in_with_key(page, site.base_url, account.service_key)
    # Playwright hands routes over while the test is in one of its calls: the check makes one.
    until(lambda: page.evaluate("true") and held, what="the first export page, held")
    bar = ("search-input", "live-toggle")
    drawn = {name: page.get_by_test_id(name).bounding_box() for name in bar}
    assert all(drawn.values()), drawn

    for route in held:
        route.continue_()
    page.unroute("**/v2/export*")
    expect(page.get_by_test_id("log-line")).to_have_count(1)
    expect(page.get_by_test_id("save-view")).to_be_visible()
    assert {name: page.get_by_test_id(name).bounding_box() for name in bar} == drawn


def test_search_shows_the_matching_lines_newest_first_and_keeps_the_query_in_the_url(
    site: Site, page: Page
) -> None:
    account = site.account()
    other = site.account()
    now = now_ms()
    account.ingest(
        [
            {
                "line": f"boom number {i}",
                "app": "api",
                "level": "error",
                "timestamp": now - i * MINUTE,
            }
            for i in range(5)
        ]
        + [{"line": "boom elsewhere", "app": "worker", "timestamp": now - 30_000}]
        + [{"line": "quiet line", "app": "api", "timestamp": now - 10_000}]
    )
    other.ingest([{"line": "boom from another tenant", "app": "api", "timestamp": now}])

    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("search-input").fill("boom app:api")
    page.get_by_test_id("search-input").press("Enter")
    expect(page.get_by_test_id("log-line")).to_have_count(5)
    expect_lines(page, [f"boom number {i}" for i in range(5)])
    query = parse_qs(urlparse(page.url).query)
    assert query["q"] == ["boom app:api"]
    assert query["range"] == ["24h"]

    # The facets count the matching lines per value.
    expect(page.get_by_test_id("facet-app")).to_contain_text("api")
    expect(page.get_by_test_id("facet-level")).to_contain_text("error5")

    # A reload (or a shared link) opens the same search.
    page.reload()
    expect(page.get_by_test_id("search-input")).to_have_value("boom app:api")
    expect(page.get_by_test_id("log-line")).to_have_count(5)

    # Another range from the presets goes to the URL too.
    page.get_by_test_id("time-range").select_option("15m")
    expect(page.get_by_test_id("log-line")).to_have_count(5)
    assert parse_qs(urlparse(page.url).query)["range"] == ["15m"]


def test_a_query_that_does_not_parse_is_shown_where_it_stopped(site: Site, page: Page) -> None:
    account = site.account()
    account.ingest([{"line": "status 500 seen", "app": "api"}])
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("search-input").fill("status")
    page.get_by_test_id("search-input").press("Enter")
    expect(page.get_by_test_id("log-line")).to_have_count(1)
    expect(page.locator(".summary-bar")).to_contain_text("1 matching lines")
    expect(page.get_by_test_id("histogram").locator("canvas")).to_have_count(1)
    expect(page.get_by_test_id("facet-app")).to_contain_text("api")

    page.get_by_test_id("search-input").fill("status:(500 OR")
    page.get_by_test_id("search-input").press("Enter")
    problem = page.get_by_test_id("query-error")
    expect(problem).to_contain_text(re.compile(r"column \d+"))
    column = int(re.search(r"column (\d+)", problem.inner_text()).group(1))  # type: ignore[union-attr]
    caret_line = problem.locator("pre").inner_text().splitlines()[-1]
    assert caret_line.index("^") == column - 1
    expect(page.get_by_test_id("log-line")).to_have_count(0)
    # Nothing of the previous search is left under the error.
    expect(page.get_by_test_id("histogram").locator("canvas")).to_have_count(0)
    expect(page.locator(".summary-bar")).to_have_text("")
    expect(page.locator(".facets")).to_have_text("")


def test_a_line_expands_to_its_meta_and_a_picked_value_narrows_the_query(
    site: Site, page: Page
) -> None:
    account = site.account()
    now = now_ms()
    account.ingest(
        [
            {"line": "order placed", "app": "shop", "meta": {"order": {"id": 17}, "user": "ann"}, "timestamp": now - 2000},
            {"line": "order placed", "app": "shop", "meta": {"order": {"id": 18}, "user": "bob"}, "timestamp": now - 1000},
        ],
        host="shop-1",
    )  # fmt: skip
    sign_in_with_key(page, site.base_url, account.service_key)
    expect(page.get_by_test_id("log-line")).to_have_count(2)
    newest = page.get_by_test_id("log-line").first
    newest.locator(".summary").click()
    detail = newest.locator(".detail")
    expect(detail).to_contain_text("shop-1")
    expect(detail.locator(".meta")).to_contain_text("order")
    detail.get_by_role("button", name="bob", exact=True).click()
    expect(page.get_by_test_id("search-input")).to_have_value("user:==bob")
    expect(page.get_by_test_id("log-line")).to_have_count(1)
    # The nested value is picked by its dotted path.
    page.get_by_test_id("log-line").first.locator(".summary").click()
    page.get_by_test_id("log-line").first.get_by_role("button", name="18", exact=True).click()
    expect(page.get_by_test_id("search-input")).to_have_value("user:==bob order.id:==18")
    expect(page.get_by_test_id("log-line")).to_have_count(1)


def test_a_json_line_expands_to_its_parsed_fields(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    account.ingest(
        [
            {"line": '{"message":"paid","status":503,"user":{"id":42}}', "timestamp": now - 2000},
            {"line": '{"message":"paid","status":200,"user":{"id":7}}', "timestamp": now - 1000},
        ]
    )
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("search-input").fill("status:>=500")
    page.get_by_test_id("search-input").press("Enter")
    expect(page.get_by_test_id("log-line")).to_have_count(1)
    line = page.get_by_test_id("log-line").first
    # The lines come before the count and the histogram: those must not move a line a
    # person is about to click (a click here once landed where the line had been).
    before = line.bounding_box()
    expect(page.locator("section.results")).to_have_attribute("aria-busy", "false")
    assert line.bounding_box() == before
    line.locator(".summary").click()
    meta = line.locator(".detail .meta")
    expect(meta).to_contain_text("_status: 503")
    expect(meta).to_contain_text("message: paid")
    line.get_by_role("button", name="42", exact=True).click()
    expect(page.get_by_test_id("search-input")).to_have_value("status:>=500 user.id:==42")
    expect(page.get_by_test_id("log-line")).to_have_count(1)


def test_facet_values_filter_the_lines(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    account.ingest([{"line": "from web", "timestamp": now - 1000}], host="web-1")
    account.ingest([{"line": "from db", "timestamp": now - 2000}], host="db-1")
    sign_in_with_key(page, site.base_url, account.service_key)
    expect(page.get_by_test_id("log-line")).to_have_count(2)
    page.get_by_test_id("facet-host").get_by_text("db-1").click()
    expect(page.get_by_test_id("log-line")).to_have_count(1)
    expect_lines(page, ["from db"])
    assert parse_qs(urlparse(page.url).query)["hosts"] == ["db-1"]


def test_brushing_the_histogram_zooms_the_range(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    # One line every 10 minutes over the last 6 hours.
    stamps = [now - i * 10 * MINUTE for i in range(36)]
    account.ingest([{"line": f"tick {i}", "timestamp": ts} for i, ts in enumerate(stamps)])
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("time-range").select_option("6h")
    expect(page.get_by_test_id("log-line")).to_have_count(36)

    # The histogram comes after the lines (its own request), and until it has come the
    # previous search's (24 h, the same 36 lines) is still drawn and is then replaced:
    # wait until the results are no longer busy, then for the plot to be laid out,
    # before reading where it is.
    expect(page.locator("section.results")).to_have_attribute("aria-busy", "false")
    expect(page.locator(".summary-bar")).to_contain_text("36 matching lines")
    plot = page.locator("[data-testid=histogram] .u-over")
    expect(plot).to_be_visible()
    box = plot.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=8)
    page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=8)
    page.mouse.up()

    expect(page).to_have_url(re.compile(r"from=\d+&to=\d+"))
    query = parse_qs(urlparse(page.url).query)
    start, end = int(query["from"][0]), int(query["to"][0])
    assert now - 6 * 60 * MINUTE < start < end < now
    inside = sorted((ts for ts in stamps if start <= ts <= end), reverse=True)
    assert 0 < len(inside) < len(stamps)
    expect(page.get_by_test_id("log-line")).to_have_count(len(inside))
    expect(page.get_by_test_id("time-range")).to_have_value("custom")
    expect_lines(page, [f"tick {stamps.index(ts)}" for ts in inside])


def test_live_tail_shows_lines_ingested_after_the_toggle(site: Site, page: Page) -> None:
    account = site.account()
    account.ingest([{"line": "from before", "app": "api"}])
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("search-input").fill("app:api")
    page.get_by_test_id("search-input").press("Enter")
    expect(page.get_by_test_id("log-line")).to_have_count(1)

    page.get_by_test_id("live-toggle").click()
    expect(page.get_by_test_id("live-toggle")).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".tail-status .state")).to_have_text("live")
    expect(page.get_by_test_id("log-line")).to_have_count(0)
    # The facets describe the stream, not "none".
    expect(page.get_by_test_id("facet-app")).to_contain_text("waiting for lines")

    account.ingest([{"line": "first live", "app": "api"}, {"line": "not api", "app": "cron"}])
    account.ingest([{"line": "second live", "app": "api"}])
    expect(page.get_by_test_id("log-line")).to_have_count(2)
    expect_lines(page, ["second live", "first live"])
    live_apps = page.get_by_test_id("facet-app")
    expect(live_apps.locator(".facet-value")).to_have_text(["api"])
    expect(live_apps.locator(".count")).to_have_text(["2"])
    expect(page.get_by_test_id("facet-host").locator(".facet-value")).to_have_text(["web-1"])
    expect(page.locator(".facets")).not_to_contain_text("none")
    expect(page.get_by_test_id("tail-rate")).not_to_have_text("0.0 lines/s")

    # Paused: new lines are held back, then shown on resume.
    page.get_by_test_id("tail-pause").click()
    account.ingest([{"line": "while paused", "app": "api"}])
    expect(page.get_by_test_id("tail-pause")).to_have_text("Resume (1 new)")
    expect(page.get_by_test_id("log-line")).to_have_count(2)
    page.get_by_test_id("tail-pause").click()
    expect(page.get_by_test_id("log-line")).to_have_count(3)
    expect(page.locator("[data-testid=log-line] .text").first).to_have_text("while paused")

    # Off again: back to the search, which now finds the new lines.
    page.get_by_test_id("live-toggle").click()
    expect(page.get_by_test_id("log-line")).to_have_count(4)
