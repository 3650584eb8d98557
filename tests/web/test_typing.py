"""The search page's help while typing and reading (issue 22): completion of field names
and values in the search box, the query's words marked in the lines, and copying a line
or a link to it (the link opened shows that line)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from playwright.sync_api import BrowserContext, Page, Request, expect
from tests.web.conftest import Site
from tests.web.harness import expect_lines, now_ms, sign_in_with_key

SECOND = 1000
MINUTE = 60 * SECOND

ITEMS = "[data-testid=completion-item] .completion-text"


def _aggregations(page: Page) -> list[dict[str, list[str]]]:
    """The query parameters of every /v1/aggregate request the page sends from now on."""
    seen: list[dict[str, list[str]]] = []

    def record(request: Request) -> None:
        url = urlparse(request.url)
        if url.path == "/v1/aggregate":
            seen.append(parse_qs(url.query))

    page.on("request", record)
    return seen


def test_completion_names_the_fields_of_lines_the_query_left_out(site: Site, page: Page) -> None:
    """Field names come from the range's lines (GET /v1/aggregate/fields), not only from
    those the query being refined loaded."""
    account = site.account()
    now = now_ms()
    account.ingest(
        [
            {"line": "checkout paid", "app": "shop", "meta": {"order": {"total": 12}}, "timestamp": now - 2 * SECOND},
            {"line": "disk full", "app": "ops", "meta": {"volume": "/var"}, "timestamp": now - SECOND},
        ]
    )  # fmt: skip
    sign_in_with_key(page, site.base_url, account.service_key)
    expect(page.get_by_test_id("log-line")).to_have_count(2)
    box = page.get_by_test_id("search-input")
    box.fill("disk")
    box.press("Enter")
    expect_lines(page, ["disk full"])
    completion = page.get_by_test_id("completion")
    box.fill("")
    box.press_sequentially("ord")
    expect(completion.locator(ITEMS)).to_have_text(["order.total:"])
    box.fill("")
    box.press_sequentially("vol")
    expect(completion.locator(ITEMS)).to_have_text(["volume:"])


def test_completion_offers_field_names_then_their_top_values(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    account.ingest(
        [
            {"line": "request served", "app": "api", "meta": {"region": "eu-west", "user": {"id": 7}}, "timestamp": now - 3 * SECOND},
            {"line": "request served", "app": "api", "meta": {"region": "eu-west"}, "timestamp": now - 2 * SECOND},
            {"line": "request failed", "app": "worker", "meta": {"region": "us-east"}, "timestamp": now - 1 * SECOND},
        ]
    )  # fmt: skip
    sign_in_with_key(page, site.base_url, account.service_key)
    expect(page.get_by_test_id("log-line")).to_have_count(3)
    aggregations = _aggregations(page)
    box = page.get_by_test_id("search-input")
    completion = page.get_by_test_id("completion")
    expect(completion).to_be_hidden()

    # A field name from the loaded lines' meta, and the built-in ones.
    box.click()
    box.press_sequentially("re")
    expect(completion.locator(ITEMS)).to_have_text(["region:"])
    box.fill("")
    box.press_sequentially("u")
    expect(completion.locator(ITEMS)).to_have_text(["user.id:"])
    box.fill("")
    box.press_sequentially("a")
    expect(completion.locator(ITEMS)).to_have_text(["app:"])
    # Escape closes the list and keeps what was typed.
    box.press("Escape")
    expect(completion).to_be_hidden()
    expect(box).to_have_value("a")

    # Tab accepts; the field's top values follow, most frequent first, with counts.
    box.fill("")
    box.press_sequentially("request reg")
    expect(completion.locator(ITEMS)).to_have_text(["region:"])
    box.press("Tab")
    expect(box).to_have_value("request region:")
    expect(completion.locator(ITEMS)).to_have_text(["eu-west", "us-east"])
    expect(completion.locator("[data-testid=completion-item] .count")).to_have_text(["2", "1"])
    expect(completion).to_have_text("eu-west2us-east1")  # nothing else in the list
    # Typing narrows them; arrows and Enter pick one (Enter does not search then).
    box.press_sequentially("u")
    expect(completion.locator(ITEMS)).to_have_text(["us-east"])
    box.press("ArrowDown")
    expect(completion.get_by_test_id("completion-item")).to_have_attribute("aria-selected", "true")
    box.press("Enter")
    expect(box).to_have_value("request region:us-east ")
    expect(completion).to_be_hidden()
    expect(page.get_by_test_id("log-line")).to_have_count(3)
    # Enter with no item chosen runs the search.
    box.press("Enter")
    expect_lines(page, ["request failed"])

    # The values of host, app and level; a click picks one, at the cursor.
    box.fill("request  level:error")
    box.evaluate("(el) => el.setSelectionRange(8, 8)")
    box.press_sequentially("-ap")
    expect(completion.locator(ITEMS)).to_have_text(["app:"])
    completion.get_by_test_id("completion-item").click()
    expect(box).to_have_value("request -app: level:error")
    expect(completion.locator(ITEMS)).to_have_text(["api", "worker"])
    completion.get_by_text("worker").click()
    expect(box).to_have_value("request -app:worker level:error")
    expect(completion).to_be_hidden()

    # Each field's values were asked for once, over the search's range: the region's
    # (after reg… was typed again) come from what the page kept.
    box.fill("")
    box.press_sequentially("region:e")
    expect(completion.locator(ITEMS)).to_have_text(["eu-west"])
    asked = [
        params.get("fields", [""])[0] for params in aggregations if params.get("buckets") == ["1"]
    ]
    assert sorted(asked) == ["", "region"], aggregations
    for params in aggregations:
        if params.get("buckets") == ["1"]:
            assert "query" not in params
            assert params["top"] == ["20"]


def test_the_querys_words_and_phrases_are_marked_in_the_lines(site: Site, page: Page) -> None:
    account = site.account()
    now = now_ms()
    hostile = '<script>window.hacked = 1</script><img src=x onerror="window.hacked = 2"> error'
    account.ingest(
        [
            {"line": "Disk FULL: ERROR in the api app", "app": "api", "timestamp": now - 3 * SECOND},
            {"line": "user_error, terror and error-prone disk", "app": "api", "timestamp": now - 2 * SECOND},
            {"line": hostile, "app": "api", "timestamp": now - 1 * SECOND},
            {"line": "disk error elsewhere", "app": "cron", "timestamp": now - 4 * SECOND},
        ]
    )  # fmt: skip
    sign_in_with_key(page, site.base_url, account.service_key)
    box = page.get_by_test_id("search-input")

    # A term at a word's start, any case; not the field test nor the negated term.
    box.fill("(error OR -disk) app:api")
    box.press("Enter")
    expect_lines(
        page,
        [hostile, "user_error, terror and error-prone disk", "Disk FULL: ERROR in the api app"],
    )
    rows = page.get_by_test_id("log-line")
    expect(rows.nth(0).get_by_test_id("hit")).to_have_text(["error"])
    expect(rows.nth(1).get_by_test_id("hit")).to_have_text(["error"])
    expect(rows.nth(2).get_by_test_id("hit")).to_have_text(["ERROR"])
    # The hostile line is text: nothing of it ran or became an element.
    expect(rows.nth(0).locator(".text")).to_have_text(hostile)
    assert page.locator("[data-testid=lines] script, [data-testid=lines] img").count() == 0
    assert page.evaluate("window.hacked") is None

    # A phrase anywhere, a term as the prefix it matches.
    box.fill('"disk full" err')
    box.press("Enter")
    expect_lines(page, ["Disk FULL: ERROR in the api app"])
    expect(rows.first.get_by_test_id("hit")).to_have_text(["Disk FULL", "ERR"])
    expect(rows.first.locator(".text")).to_have_text("Disk FULL: ERROR in the api app")

    # A query of fields only marks nothing.
    box.fill("app:cron")
    box.press("Enter")
    expect_lines(page, ["disk error elsewhere"])
    expect(rows.first.get_by_test_id("hit")).to_have_count(0)


def _clipboard(page: Page) -> str:
    return str(page.evaluate("navigator.clipboard.readText()"))


def test_a_line_and_a_link_to_it_are_copied_and_the_link_opens_that_line(
    site: Site, context: BrowserContext, page: Page
) -> None:
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.base_url)
    account = site.account()
    now = now_ms()
    # 600 lines a second apart: the linked one is 300 lines down its link's ten
    # minutes, past the first export page of 100.
    account.ingest(
        [
            {
                "line": f"tick {i} from the clock",
                "app": "clock",
                "meta": {"n": i},
                "timestamp": now - i * SECOND,
            }
            for i in range(600)
        ]
        + [{"line": "tock elsewhere", "app": "other", "timestamp": now - 300 * SECOND}]
    )
    sign_in_with_key(page, site.base_url, account.service_key)
    page.goto(f"{site.base_url}/search?q=tick&range=1h")
    target = page.locator("[data-testid=log-line]", has_text="tick 40 from")
    target.locator(".summary").click()
    target.get_by_test_id("copy-line").click()
    expect(target.get_by_test_id("copy-line")).to_have_attribute("data-copied", "true")
    assert _clipboard(page) == "tick 40 from the clock"

    # The link: the same search over the minutes around the line, and the line's id.
    line_id = target.get_attribute("data-id")
    target.get_by_test_id("copy-link").click()
    expect(target.get_by_test_id("copy-link")).to_have_attribute("data-copied", "true")
    link = _clipboard(page)
    parsed = urlparse(link)
    query = parse_qs(parsed.query)
    assert parsed.path == "/search"
    assert query["q"] == ["tick"]
    assert query["line"] == [line_id]
    assert query["account"] == [account.account_id]  # whoever opens it may be elsewhere
    assert "range" not in query
    start, end = int(query["from"][0]), int(query["to"][0])
    assert end - start == 10 * MINUTE
    assert start < now - 40 * SECOND < end

    # Opened: the line expanded, marked and on screen.
    opened = context.new_page()
    opened.goto(link)
    linked = opened.locator("[data-testid=log-line].linked")
    expect(linked).to_have_count(1)
    expect(linked.locator(".summary .text")).to_have_text("tick 40 from the clock")
    expect(linked.locator(".detail")).to_contain_text("n: 40")
    expect(linked).to_be_in_viewport()
    opened.close()

    # A line deeper than the first page: the page reads on until it has it.
    with account.http() as http:
        answer = http.get(
            "/v2/export",
            params={"from": now - 600 * SECOND, "to": now, "query": "tick 300 from", "size": 5},
        )
        assert answer.status_code == 200, answer.text
        [record] = [
            line for line in answer.json()["lines"] if line["_line"] == "tick 300 from the clock"
        ]
    ts = record["_ts"]
    deep = f"{site.base_url}/search?q=tick&from={ts - 5 * MINUTE}&to={ts + 5 * MINUTE}&line={record['_id']}"
    opened = context.new_page()
    opened.goto(deep)
    linked = opened.locator("[data-testid=log-line].linked")
    expect(linked.locator(".summary .text")).to_have_text("tick 300 from the clock")
    expect(linked.locator(".detail")).to_be_visible()
    expect(linked).to_be_in_viewport()
    assert int(opened.get_by_test_id("lines").get_attribute("data-count") or 0) > 100
    opened.close()


def test_copying_without_the_clipboard_api_falls_back_to_the_copy_command(
    site: Site, context: BrowserContext, page: Page
) -> None:
    """Served over plain http to another machine, the page has no Clipboard API (not a
    secure context): the copy command does it."""
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.base_url)
    # The page sees no navigator.clipboard; the test keeps it to read the result.
    page.add_init_script(
        "window.testClipboard = navigator.clipboard;"
        "Object.defineProperty(Navigator.prototype, 'clipboard', { get: () => undefined });"
    )
    account = site.account()
    account.ingest([{"line": 'say "hi" & <b>bye</b>', "app": "api"}])
    sign_in_with_key(page, site.base_url, account.service_key)
    row = page.get_by_test_id("log-line")
    expect(row).to_have_count(1)
    row.locator(".summary").click()
    row.get_by_test_id("copy-line").click()
    expect(row.get_by_test_id("copy-line")).to_have_attribute("data-copied", "true")
    assert page.evaluate("window.testClipboard.readText()") == 'say "hi" & <b>bye</b>'
