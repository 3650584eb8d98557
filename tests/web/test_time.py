"""The search page's typed time ranges and the zone shown (issue 22), in a real browser
whose time zone is not UTC: relative ranges (`-2h`) kept in the URL and moving with
now, `A .. B` ranges of relative or absolute ends read in the browser's zone, and a
range that cannot be read said so without searching."""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import parse_qs, urlparse
from zoneinfo import ZoneInfo

from playwright.sync_api import Browser, expect
from tests.web.conftest import Site
from tests.web.harness import expect_lines, now_ms, sign_in_with_key

MINUTE = 60_000
ZONE = "Asia/Kolkata"  # UTC+05:30 all year: a half-hour offset catches a wrong zone


def test_typed_ranges_and_the_zone(site: Site, browser: Browser) -> None:
    account = site.account()
    now = now_ms()
    # t0 15 minutes ago, then one every 30 minutes back: never near a typed bound.
    account.ingest([{"line": f"t{k}", "timestamp": now - (15 + 30 * k) * MINUTE} for k in range(8)])
    context = browser.new_context(viewport={"width": 1280, "height": 860}, timezone_id=ZONE)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        sign_in_with_key(page, site.base_url, account.service_key)
        # (ICU may name the zone by its older name.)
        expect(page.get_by_test_id("time-zone")).to_have_text(
            re.compile(r"^Asia/(Kolkata|Calcutta) \(UTC\+05:30\)$")
        )
        expect(page.get_by_test_id("log-line")).to_have_count(8)

        typed = page.get_by_test_id("time-input")
        typed.fill("-2h")
        typed.press("Enter")
        expect_lines(page, ["t0", "t1", "t2", "t3"])
        assert parse_qs(urlparse(page.url).query)["range"] == ["2h"]
        expect(page.get_by_test_id("time-range").locator("option:checked")).to_have_text("Last 2h")
        expect(typed).to_have_value("")
        page.reload()
        expect_lines(page, ["t0", "t1", "t2", "t3"])

        typed.fill("now-100m .. now-40m")
        typed.press("Enter")
        expect_lines(page, ["t1", "t2"])
        query = parse_qs(urlparse(page.url).query)
        assert "range" not in query
        assert int(query["to"][0]) - int(query["from"][0]) == 60 * MINUTE
        expect(page.get_by_test_id("time-range")).to_have_value("custom")

        # Absolute ends in the browser's zone (to the second; the end covers its second).
        def local(ms: int) -> str:
            return datetime.fromtimestamp(ms / 1000, ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M:%S")

        start, end = now - 170 * MINUTE, now - 70 * MINUTE
        typed.fill(f"{local(start)} .. {local(end)}")
        typed.press("Enter")
        expect_lines(page, ["t2", "t3", "t4", "t5"])
        query = parse_qs(urlparse(page.url).query)
        assert int(query["from"][0]) == start // 1000 * 1000
        assert int(query["to"][0]) == end // 1000 * 1000 + 999

        # What cannot be read is said, and the search stays as it was.
        url = page.url
        typed.fill("yesterday at noon")
        typed.press("Enter")
        expect(page.get_by_role("alert")).to_contain_text('time: cannot read "yesterday at noon"')
        assert page.url == url
        expect_lines(page, ["t2", "t3", "t4", "t5"])
        assert not errors, errors
    finally:
        context.close()
