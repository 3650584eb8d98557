"""Views in a real browser: save the current search as a view, find it by category,
open it as a search, rename it, add an alert channel, see its delivery log, delete it."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Page, expect
from tests.web.conftest import Site
from tests.web.harness import expect_lines, now_ms, sign_in_with_key


def test_a_search_is_saved_as_a_view_opened_renamed_alerted_and_deleted(
    site: Site, page: Page
) -> None:
    account = site.account()
    now = now_ms()
    account.ingest(
        [{"line": "payment failed", "app": "billing", "level": "error", "timestamp": now - 1000}],
        host="pay-1",
    )
    account.ingest(
        [{"line": "payment ok", "app": "billing", "level": "info", "timestamp": now - 2000}],
        host="pay-1",
    )
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("search-input").fill("payment level:error")
    page.get_by_test_id("search-input").press("Enter")
    expect(page.get_by_test_id("log-line")).to_have_count(1)
    page.get_by_test_id("facet-host").get_by_text("pay-1").click()
    expect(page.get_by_test_id("log-line")).to_have_count(1)

    page.get_by_test_id("save-view").click()
    page.get_by_test_id("view-name").fill("Failed payments")
    page.get_by_test_id("view-category").fill("Billing")
    page.get_by_test_id("view-save-submit").click()
    expect(page.get_by_role("status")).to_contain_text("Saved view “Failed payments”")
    with account.http() as http:
        [view] = http.get("/v1/config/view").json()
    assert (view["name"], view["query"], view["hosts"], view["category"]) == (
        "Failed payments", "payment level:error", ["pay-1"], ["Billing"],
    )  # fmt: skip

    page.get_by_test_id("search-input").fill("")
    page.get_by_test_id("search-input").press("Enter")
    page.get_by_test_id("nav-views").click()
    expect(page.locator("h2")).to_have_text(["Billing"])
    row = page.get_by_test_id("view-row")
    expect(row).to_have_count(1)
    row.get_by_role("link", name="Failed payments").click()
    expect(page.get_by_test_id("search-input")).to_have_value("payment level:error")
    assert parse_qs(urlparse(page.url).query)["hosts"] == ["pay-1"]
    expect(page.get_by_test_id("log-line")).to_have_count(1)
    expect_lines(page, ["payment failed"])

    page.get_by_test_id("nav-views").click()
    page.once("dialog", lambda dialog: dialog.accept("Payments failing"))
    page.get_by_test_id("view-row").get_by_role("button", name="Rename").click()
    expect(page.get_by_test_id("view-row")).to_contain_text("Payments failing")

    page.get_by_test_id("view-alerts").click()
    expect(page.locator(".alerts")).to_contain_text("No alerts on this view.")
    expect(page.locator(".alerts")).to_contain_text("Nothing delivered yet.")
    page.get_by_test_id("alert-integration").select_option("webhook")
    page.get_by_test_id("alert-target").fill("https://hooks.example.com/tidegate")
    page.get_by_test_id("alert-add").click()
    expect(page.get_by_test_id("view-row")).to_contain_text("1 alert channel(s)")
    with account.http() as http:
        [view] = http.get("/v1/config/view").json()
    assert view["name"] == "Payments failing"
    assert view["query"] == "payment level:error"
    [channel] = view["channels"]
    assert channel["integration"] == "webhook"
    assert channel["url"] == "https://hooks.example.com/tidegate"

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_test_id("view-row").get_by_role("button", name="Delete").click()
    expect(page.get_by_test_id("view-row")).to_have_count(0)
    with account.http() as http:
        assert http.get("/v1/config/view").json() == []
