"""The search page's help while reading (issue 22): the query's words marked in the lines."""

from __future__ import annotations

from playwright.sync_api import Page, expect
from tests.web.conftest import Site
from tests.web.harness import expect_lines, now_ms, sign_in_with_key

SECOND = 1000


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
