"""The search page's line list in a real browser (issue 22): virtualised (the DOM holds
a bounded window of rows however deep the scroll; expanded lines and the scroll
position survive), a line's context shown in place, and working with fields (click a
value to filter by it or exclude it; the top values of any field in the facet panel)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Locator, Page, Route, expect
from tests.waiting import until
from tests.web.conftest import Site
from tests.web.harness import Account, expect_lines, log_lines, now_ms, sign_in_with_key

# virtual.js's MAX_ROWS: the most rows the list ever draws.
MAX_ROWS = 300
# The whole page's elements while 20,000 lines are loaded: the header, the facets, the
# histogram and a window of rows (the unvirtualised page held 140,924 at that depth).
MAX_ELEMENTS = 6_000
BATCH = 5_000

LOADED = "Number(document.querySelector('[data-testid=lines]').dataset.count)"
ROWS = "document.querySelectorAll('[data-testid=log-line]').length"
ELEMENTS = "document.getElementsByTagName('*').length"
# Where the page is scrolled, and how the list is drawn (for failure messages).
WHERE = (
    "JSON.stringify({scrollY, innerHeight, height: document.documentElement.scrollHeight,"
    " spacers: [...document.querySelectorAll('[data-testid=lines] .spacer')]"
    ".map((el) => el.style.height)})"
)


def _number(text: str) -> int:
    return int(text.split()[-1])


def _drawn(page: Page) -> list[int]:
    return [_number(text) for text in log_lines(page)]


def _wait(page: Page, expression: str, what: str) -> object:
    """Until ``expression`` (evaluated in the page) is true; its value. (Playwright's
    wait_for_function evaluates a string with eval, which the page's CSP refuses.)"""
    return until(lambda: page.evaluate(expression) or None, timeout=60, what=what)


def deep_back_in_place(page: Page, line: Locator, top: float) -> None:
    until(
        lambda: abs(line.evaluate("(el) => el.getBoundingClientRect().top") - top) < 2 or None,
        timeout=60,
        what="the deep line back where it was",
    )


def test_a_deep_scroll_keeps_the_dom_bounded_and_expanded_lines_survive(
    site: Site, page: Page
) -> None:
    account = site.account()
    now = now_ms()
    total = 20_600
    for start in range(0, total, BATCH):
        account.ingest(
            [
                {"line": f"deep line {i}", "app": "api", "timestamp": now - i * 100}
                for i in range(start, min(total, start + BATCH))
            ]
        )
    sign_in_with_key(page, site.base_url, account.service_key)
    expect(page.get_by_test_id("log-line").first.locator(".text")).to_have_text("deep line 0")

    # Expand a line near the top.
    page.get_by_test_id("log-line").nth(5).locator(".summary").click()
    expect(page.get_by_test_id("log-line").nth(5).locator(".detail")).to_contain_text("api")

    # Scroll down until 20,000 lines are loaded (a page of 500 per scroll to the end).
    loaded = page.evaluate(LOADED)
    most_rows = most_elements = 0
    while loaded < 20_000:
        # As a person does: scroll to the end until older lines come (the end moves
        # once the new lines are laid out, a frame after they arrive).
        _wait(
            page,
            f"(window.scrollTo(0, document.documentElement.scrollHeight), {LOADED} > {loaded})",
            f"more than {loaded} lines loaded",
        )
        loaded = page.evaluate(LOADED)
        most_rows = max(most_rows, page.evaluate(ROWS))
        most_elements = max(most_elements, page.evaluate(ELEMENTS))
        assert most_rows <= MAX_ROWS, most_rows
        assert most_elements <= MAX_ELEMENTS, most_elements
    # The rows drawn at that depth are consecutive lines, in order, and deep ones.
    _wait(page, f"{ROWS} > 0", "rows drawn")
    drawn = _drawn(page)
    assert drawn == list(range(drawn[0], drawn[0] + len(drawn)))
    assert drawn[-1] >= 19_000

    # Expand a line in the middle of the viewport, deep down; note where the page is.
    middle = page.evaluate(
        "(() => { const y = innerHeight / 2; return [...document.querySelectorAll("
        "'[data-testid=log-line]')].find((el) => { const r = el.getBoundingClientRect();"
        " return r.top <= y && r.bottom > y; }).querySelector('.text').textContent })()"
    )
    deep = page.locator("[data-testid=log-line]", has_text=middle)
    deep.locator(".summary").click()
    expect(deep.locator(".detail")).to_be_visible()
    top_before = deep.evaluate("(el) => el.getBoundingClientRect().top")
    scroll_y = page.evaluate("window.scrollY")

    # Back to the top: the first expanded line is still expanded, the deep one is gone.
    page.evaluate("window.scrollTo(0, 0)")
    expect(page.get_by_test_id("log-line").first.locator(".text")).to_have_text("deep line 0")
    expect(page.get_by_test_id("log-line").nth(5)).to_have_class("log-line open")
    expect(page.get_by_test_id("log-line").nth(5).locator(".detail")).to_be_visible()
    expect(deep).to_have_count(0)
    assert page.evaluate(ROWS) <= MAX_ROWS

    # And back down to the same place: the deep line expanded, where it was.
    page.evaluate(f"window.scrollTo(0, {scroll_y})")
    expect(deep.locator(".detail")).to_be_visible()
    deep_back_in_place(page, deep, top_before)
    assert page.evaluate(ROWS) <= MAX_ROWS

    # To another page and Back: the same lines (not searched again), the deep one still
    # expanded and where it was, the counts drawn.
    loaded = page.evaluate(LOADED)
    exports: list[str] = []
    page.on(
        "request",
        lambda request: exports.append(request.url) if "/v2/export" in request.url else None,
    )
    page.get_by_test_id("nav-views").click()
    expect(page.get_by_test_id("log-line")).to_have_count(0)
    page.go_back()
    expect(deep.locator(".detail")).to_be_visible()
    deep_back_in_place(page, deep, top_before)
    assert page.evaluate(LOADED) == loaded
    expect(page.locator(".summary-bar")).to_contain_text("20,600 matching lines")
    assert page.evaluate(ROWS) <= MAX_ROWS
    assert exports == []


def test_scrolling_down_pages_back_through_older_lines_each_once_in_order(
    site: Site, page: Page
) -> None:
    account = site.account()
    now = now_ms()
    total = 730  # a first page of 100, then pages of 500
    account.ingest([{"line": f"line {i:04d}", "timestamp": now - i * 1000} for i in range(total)])
    sign_in_with_key(page, site.base_url, account.service_key)
    expect(page.get_by_test_id("lines")).to_have_attribute("data-count", "100")
    for expected in (600, total):
        # As a person does: scroll to the end until older lines come. The end moves once
        # the lines of the last page are laid out, a frame after their count changes: a
        # single scroll right after the count could still land on the old end, and
        # nothing more would ever load (seen once). No scroll once they have come.
        _wait(
            page,
            f"{LOADED} >= {expected}"
            " || (window.scrollTo(0, document.documentElement.scrollHeight), false)",
            f"{expected} lines loaded",
        )
        expect(page.get_by_test_id("lines")).to_have_attribute("data-count", str(expected))
    expect(page.locator(".sentinel")).to_have_text("No older lines in this range.")
    # Read the whole list a viewport at a time: every line once, in order.
    seen: list[int] = []
    page.evaluate("window.scrollTo(0, 0)")
    while True:
        expect(page.get_by_test_id("log-line").first).to_be_visible()
        drawn = _drawn(page)
        assert drawn == list(range(drawn[0], drawn[0] + len(drawn)))
        seen += [n for n in drawn if not seen or n > seen[-1]]
        if drawn[-1] == total - 1:
            break
        last = drawn[-1]
        # Down a viewport, and again each second while no later line is drawn, as a
        # person keeps scrolling (a second apart: far less than the drawn window, so no
        # line is scrolled past unseen). A single scroll once waited 60 s with nothing
        # past line 713 drawn, two suites side by side; the cause is not known: the
        # message says where the page was, if it happens again.
        polls = itertools.count()

        def scrolled_past(last: int = last, polls: Iterator[int] = polls) -> bool | None:
            if (_drawn(page) or [0])[-1] > last:
                return True
            if next(polls) % 20 == 0:  # at once, then every 20 polls of 0.05 s
                page.evaluate("window.scrollBy(0, innerHeight)")
            return None

        until(
            scrolled_past,
            timeout=60,
            what=lambda last=last: f"lines past {last} drawn; the page: {page.evaluate(WHERE)}",  # type: ignore[misc]
        )
    assert seen == list(range(total))


def _context_of_the_hit(site: Site, page: Page, account: Account) -> Locator:
    """Signed in, "boom" searched: its one hit expanded, its context asked."""
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("search-input").fill("boom")
    page.get_by_test_id("search-input").press("Enter")
    expect_lines(page, ["boom failed"])
    hit = page.get_by_test_id("log-line").first
    hit.locator(".summary").click()
    hit.get_by_test_id("line-context").click()
    return hit


def test_a_lines_context_is_shown_in_place(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    # Two hosts interleaved: the context is the hit's own host and app only.
    lines = []
    for i in range(40):
        lines.append({"line": f"step {i}", "app": "job", "timestamp": now - (40 - i) * 1000})
    account.ingest(lines, host="runner-1")
    account.ingest(
        [{"line": f"noise {i}", "app": "job", "timestamp": now - (40 - i) * 1000 + 500} for i in range(40)],
        host="runner-2",
    )  # fmt: skip
    account.ingest(
        [{"line": "boom failed", "app": "job", "timestamp": now - 20_500}], host="runner-1"
    )
    hit = _context_of_the_hit(site, page, account)

    # Newest first, like the list: the 20 newer lines above the hit, the 20 older below.
    newer = hit.get_by_test_id("context-newer").locator(".text")
    older = hit.get_by_test_id("context-older").locator(".text")
    expect(newer).to_have_text([f"step {i}" for i in range(39, 19, -1)])
    expect(older).to_have_text([f"step {i}" for i in range(19, -1, -1)])
    expect(hit.get_by_test_id("context-line")).to_have_count(40)
    expect(hit).not_to_contain_text("noise")
    # The context rows are not search hits.
    expect(page.get_by_test_id("log-line")).to_have_count(1)

    # All lines of the account, as chosen: the other host's interleaved (its line of the
    # hit's very millisecond, stored before it, comes before it).
    around = hit.get_by_test_id("context-around")
    expect(around).to_have_value("source")
    around.select_option("account")
    expect(newer).to_have_text(
        [f"{name} {i}" for i in range(29, 19, -1) for name in ("noise", "step")]
    )
    expect(older).to_have_text(
        [f"{name} {i}" for i in range(19, 9, -1) for name in ("noise", "step")]
    )
    expect(hit.get_by_test_id("context-around")).to_have_value("account")
    hit.get_by_test_id("context-around").select_option("host")
    expect(newer).to_have_text([f"step {i}" for i in range(39, 19, -1)])

    # Hidden again with the same button.
    hit.get_by_test_id("line-context").click()
    expect(hit.get_by_test_id("context-line")).to_have_count(0)


def test_more_context_is_read_from_the_farthest_line_shown(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    # 45 lines before the hit and 25 after it, one host and app; another host between.
    lines = [
        {"line": f"step {i}", "app": "job", "timestamp": now - (80 - i) * 1000} for i in range(71)
    ]
    lines[45] = {**lines[45], "line": "boom failed"}
    account.ingest(lines, host="runner-1")
    account.ingest(
        [{"line": f"noise {i}", "app": "job", "timestamp": now - (80 - i) * 1000 + 500} for i in range(71)],
        host="runner-2",
    )  # fmt: skip
    hit = _context_of_the_hit(site, page, account)
    newer = hit.get_by_test_id("context-newer").locator(".text")
    older = hit.get_by_test_id("context-older").locator(".text")
    expect(older).to_have_text([f"step {i}" for i in range(44, 24, -1)])

    # Older: 20 more, then the last 5, and no button once there are no more.
    hit.get_by_test_id("context-more-older").click()
    expect(older).to_have_text([f"step {i}" for i in range(44, 4, -1)])
    hit.get_by_test_id("context-more-older").click()
    expect(older).to_have_text([f"step {i}" for i in range(44, -1, -1)])
    expect(hit.get_by_test_id("context-more-older")).to_have_count(0)

    # Newer: 20 shown, then the other 5; the newest first, as the list reads.
    expect(newer).to_have_text([f"step {i}" for i in range(65, 45, -1)])
    hit.get_by_test_id("context-more-newer").click()
    expect(newer).to_have_text([f"step {i}" for i in range(70, 45, -1)])
    expect(hit.get_by_test_id("context-more-newer")).to_have_count(0)
    expect(hit).not_to_contain_text("noise")
    expect(page.get_by_test_id("log-line")).to_have_count(1)


def test_clicking_a_value_filters_by_it_or_excludes_it(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    account.ingest(
        [
            {"line": "checkout ok", "app": "shop", "meta": {"user": "ann lee", "cart": {"size": 3}}, "timestamp": now - 3000},
            {"line": "checkout ok", "app": "shop", "meta": {"user": 'bob "b"', "cart": {"size": 1}}, "timestamp": now - 2000},
            {"line": "checkout slow", "app": "shop", "meta": {"user": "cy", "cart": {"size": 3}}, "timestamp": now - 1000},
        ]
    )  # fmt: skip
    sign_in_with_key(page, site.base_url, account.service_key)
    expect(page.get_by_test_id("log-line")).to_have_count(3)

    # Exclude a value with a space: quoted as the syntax wants.
    oldest = page.get_by_test_id("log-line").nth(2)
    oldest.locator(".summary").click()
    oldest.locator(".meta").get_by_role("button", name="Exclude user ann lee").click()
    expect(page.get_by_test_id("search-input")).to_have_value('-user:=="ann lee"')
    expect_lines(page, ["checkout slow", "checkout ok"])
    assert parse_qs(urlparse(page.url).query)["q"] == ['-user:=="ann lee"']

    # Include a value with quotes in it, and a nested one by its dotted path.
    bob = page.get_by_test_id("log-line").nth(1)
    bob.locator(".summary").click()
    bob.locator(".meta").get_by_role("button", name='bob "b"', exact=True).click()
    expect(page.get_by_test_id("search-input")).to_have_value(
        '-user:=="ann lee" user:=="bob \\"b\\""'
    )
    expect_lines(page, ["checkout ok"])

    page.get_by_test_id("search-input").fill("")
    page.get_by_test_id("search-input").press("Enter")
    expect(page.get_by_test_id("log-line")).to_have_count(3)
    newest = page.get_by_test_id("log-line").first
    newest.locator(".summary").click()
    newest.locator(".meta").get_by_role("button", name="Exclude cart.size 3").click()
    expect(page.get_by_test_id("search-input")).to_have_value("-cart.size:==3")
    expect_lines(page, ["checkout ok"])
    # A built-in field (host) excluded from the fields table.
    only = page.get_by_test_id("log-line").first
    only.locator(".summary").click()
    only.locator(".fields").get_by_role("button", name="Exclude app shop").click()
    expect(page.get_by_test_id("search-input")).to_have_value("-cart.size:==3 -app:==shop")
    expect(page.get_by_test_id("log-line")).to_have_count(0)

    # A meta key named as a built-in field is reached as meta.<key>; a key the syntax
    # cannot name (a space in it) is shown, not offered.
    account.ingest(
        [{"line": "nightly run", "app": "jobs", "meta": {"source": "cron", "odd key": "x1"}}]
    )
    page.get_by_test_id("search-input").fill("app:jobs")
    page.get_by_test_id("search-input").press("Enter")
    job = page.get_by_test_id("log-line").first
    expect(job.locator(".text")).to_have_text("nightly run")
    job.locator(".summary").click()
    expect(job.locator(".meta .value.plain")).to_have_text("x1")
    expect(job.locator(".meta").get_by_role("button", name="x1")).to_have_count(0)
    job.locator(".meta").get_by_role("button", name="cron", exact=True).click()
    expect(page.get_by_test_id("search-input")).to_have_value("app:jobs meta.source:==cron")
    expect_lines(page, ["nightly run"])


def test_the_facet_panel_shows_the_top_values_of_any_field(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    statuses = [200] * 5 + [503] * 3 + [404]
    account.ingest(
        [
            {"line": f'{{"msg":"req {i}","status":{status}}}', "app": "edge", "timestamp": now - i * 1000}
            for i, status in enumerate(statuses)
        ]
    )  # fmt: skip
    sign_in_with_key(page, site.base_url, account.service_key)
    expect(page.get_by_test_id("log-line")).to_have_count(len(statuses))
    picker = page.get_by_test_id("facet-custom")
    page.get_by_test_id("facet-field").fill("status")
    page.get_by_test_id("facet-field-show").click()
    values = picker.get_by_test_id("facet-custom-value")
    expect(values.locator("button.value")).to_have_text(["200", "503", "404"])
    expect(values.locator(".count")).to_have_text(["5", "3", "1"])
    expect(picker).not_to_contain_text("null")
    assert parse_qs(urlparse(page.url).query)["field"] == ["status"]

    # A value filters by it; the field stays picked and is counted for the new query.
    values.locator("button.value", has_text="503").click()
    expect(page.get_by_test_id("search-input")).to_have_value("status:==503")
    expect(page.get_by_test_id("log-line")).to_have_count(3)
    expect(values.locator("button.value")).to_have_text(["503"])

    # Excluding from the facet, after a reload (the field is in the URL).
    page.get_by_test_id("search-input").fill("")
    page.get_by_test_id("search-input").press("Enter")
    page.reload()
    expect(picker.get_by_test_id("facet-custom-field")).to_have_attribute("data-field", "status")
    expect(values.locator("button.value")).to_have_text(["200", "503", "404"])
    values.nth(0).get_by_test_id("value-exclude").click()
    expect(page.get_by_test_id("search-input")).to_have_value("-status:==200")
    expect(page.get_by_test_id("log-line")).to_have_count(4)
    expect(values.locator("button.value")).to_have_text(["503", "404"])


def test_live_tail_keeps_its_newest_lines_in_the_same_bounded_list(site: Site, page: Page) -> None:
    account = site.account()
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("live-toggle").click()
    expect(page.locator(".tail-status .state")).to_have_text("live")
    lines = page.get_by_test_id("lines")
    # Three batches of 500 (waited for one by one, so none is dropped as too fast): the
    # page keeps the newest 1,000 (tail.js's cap) and draws a window of them.
    for batch, kept in ((0, 500), (1, 1000), (2, 1000)):
        account.ingest([{"line": f"live {batch * 500 + i}", "app": "api"} for i in range(500)])
        expect(lines).to_have_attribute("data-count", str(kept))
        expect(page.get_by_test_id("log-line").first.locator(".text")).to_have_text(
            f"live {batch * 500 + 499}"
        )
        assert page.evaluate(ROWS) <= MAX_ROWS
    # Newest on top, in order; the oldest kept is the 1,000th newest.
    drawn = _drawn(page)
    assert drawn == list(range(1499, 1499 - len(drawn), -1))
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    expect(page.get_by_test_id("log-line").last.locator(".text")).to_have_text("live 500")
    assert page.evaluate(ROWS) <= MAX_ROWS


def test_a_line_that_arrived_live_has_its_context(site: Site, page: Page) -> None:
    """Live tail's lines carry their stored ids (published once committed): a line that
    arrived live shows its context (and a link to it), as a searched one does."""
    account = site.account()
    now = now_ms()
    account.ingest(
        [{"line": f"step {i}", "app": "job", "timestamp": now - (5 - i) * 1000} for i in range(3)],
        host="runner-1",
    )
    account.ingest([{"line": "noise", "app": "job", "timestamp": now - 2500}], host="runner-2")
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("live-toggle").click()
    expect(page.locator(".tail-status .state")).to_have_text("live")
    account.ingest([{"line": "boom live", "app": "job", "timestamp": now}], host="runner-1")
    expect_lines(page, ["boom live"])
    hit = page.get_by_test_id("log-line").first
    hit.locator(".summary").click()
    expect(hit.get_by_test_id("copy-link")).to_have_count(1)
    hit.get_by_test_id("line-context").click()
    older = hit.get_by_test_id("context-older").locator(".text")
    expect(older).to_have_text(["step 2", "step 1", "step 0"])
    expect(hit.get_by_test_id("context-newer")).to_contain_text("No newer lines")
    expect(hit).not_to_contain_text("noise")
    # Still live: a line arriving now goes on top, the context stays with its line.
    account.ingest([{"line": "after it", "app": "job"}], host="runner-1")
    rows = page.get_by_test_id("log-line")
    expect(rows).to_have_count(2)
    expect(rows.first.locator(".summary .text")).to_have_text("after it")
    expect(rows.nth(1).get_by_test_id("context-older").locator(".text")).to_have_text(
        ["step 2", "step 1", "step 0"]
    )


def test_live_tail_opened_again_shows_the_lines_it_missed(site: Site, page: Page) -> None:
    """The browser reopens a live tail whose stream broke (here its first answer ends
    after one line) by itself, sending that line's id; the lines stored since are shown,
    then the live ones, none twice."""
    account = site.account()
    now = now_ms()
    account.ingest([{"line": "seen", "app": "job", "timestamp": now - 3000}], host="runner-1")
    with account.http() as http:
        answer = http.get("/v2/export", params={"from": now - 60_000, "to": now + 60_000})
        [seen] = answer.json()["lines"]
    missed = [{"line": f"missed {i}", "app": "job", "timestamp": now - 2000 + i} for i in (1, 2)]
    account.ingest(missed, host="runner-1")

    asked: list[str] = []

    def broken_once(route: Route) -> None:
        asked.append(route.request.url)
        if len(asked) > 1:
            route.continue_()
            return
        events = f"retry: 100\nevent: ready\ndata: {{}}\n\nid: {seen['_id']}\ndata: {json.dumps(seen)}\n\n"
        route.fulfill(status=200, content_type="text/event-stream", body=events)

    sign_in_with_key(page, site.base_url, account.service_key)
    page.route("**/v1/tail?*", broken_once)
    page.get_by_test_id("live-toggle").click()
    expect_lines(page, ["missed 2", "missed 1", "seen"])
    # Reopened by the EventSource (Chromium adds its Last-Event-ID below what a route
    # sees): a fresh stream would have shown none of the lines stored before it.
    assert len(asked) == 2
    expect(page.locator(".tail-status .state")).to_have_text("live")
    account.ingest([{"line": "live now", "app": "job"}], host="runner-1")
    expect_lines(page, ["live now", "missed 2", "missed 1", "seen"])


def _add_field(page: Page, name: str) -> None:
    page.get_by_test_id("facet-field").fill(name)
    page.get_by_test_id("facet-field-show").click()


def _values_of(field: Locator) -> Locator:
    return field.get_by_test_id("facet-custom-value").locator("button.value")


def test_the_field_picker_shows_several_fields_and_counts_them_live(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    users = ["ann", "ann", "ann", "bob", "bob"]
    statuses = [200, 200, 503, 503, 200]
    account.ingest(
        [
            {"line": f'{{"msg":"req {i}","status":{status},"user":"{user}"}}', "app": "edge", "timestamp": now - (i + 5) * 1000}
            for i, (status, user) in enumerate(zip(statuses, users, strict=True))
        ]
    )  # fmt: skip
    sign_in_with_key(page, site.base_url, account.service_key)
    expect(page.get_by_test_id("log-line")).to_have_count(5)
    picker = page.get_by_test_id("facet-custom")
    fields = picker.get_by_test_id("facet-custom-field")
    _add_field(page, "status")
    _add_field(page, "user")
    expect(fields).to_have_count(2)
    expect(_values_of(fields.nth(0))).to_have_text(["200", "503"])
    expect(fields.nth(0).locator(".count")).to_have_text(["3", "2"])
    expect(_values_of(fields.nth(1))).to_have_text(["ann", "bob"])
    assert parse_qs(urlparse(page.url).query)["field"] == ["status", "user"]

    # A field the API has no top values for says so in its own place; the others stay.
    _add_field(page, "file")
    expect(fields).to_have_count(3)
    expect(fields.nth(2).locator(".error")).to_be_visible()
    expect(_values_of(fields.nth(0))).to_have_text(["200", "503"])
    fields.nth(2).get_by_test_id("facet-field-remove").click()
    expect(fields).to_have_count(2)
    assert parse_qs(urlparse(page.url).query)["field"] == ["status", "user"]

    # Kept in the address: after a reload both are counted again.
    page.reload()
    expect(fields).to_have_count(2)
    expect(_values_of(fields.nth(1))).to_have_text(["ann", "bob"])

    # Live: the same fields, counted in the lines the stream brings.
    page.get_by_test_id("live-toggle").click()
    expect(page.locator(".tail-status .state")).to_have_text("live")
    expect(picker).to_contain_text("Live")
    expect(fields).to_have_count(2)
    account.ingest(
        [
            {"line": f'{{"msg":"live {i}","status":404,"user":"cy"}}', "app": "edge"}
            for i in range(2)
        ]
        + [{"line": '{"msg":"live 2","status":500,"user":"cy"}', "app": "edge"}]
    )
    expect(page.get_by_test_id("log-line")).to_have_count(3)
    expect(_values_of(fields.nth(0))).to_have_text(["404", "500"])
    expect(fields.nth(0).locator(".count")).to_have_text(["2", "1"])
    expect(_values_of(fields.nth(1))).to_have_text(["cy"])
    # Removed while live: the other field's counts stay.
    fields.nth(1).get_by_test_id("facet-field-remove").click()
    expect(fields).to_have_count(1)
    expect(_values_of(fields.nth(0))).to_have_text(["404", "500"])
