"""A person's preferences in the browser (issue 22): the UTC switch and query history,
kept by the server for the person, so they hold after a reload and in another browser
of the same person; a browser signed in with a key keeps them for the page only."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from urllib.parse import parse_qs, urlparse
from zoneinfo import ZoneInfo

from playwright.sync_api import Browser, Locator, Page, Route, expect
from tests.web.conftest import Site
from tests.web.harness import (
    Account,
    expect_lines,
    make_person,
    now_ms,
    sign_in_as_person,
    sign_in_with_key,
)

MINUTE = 60_000
ZONE = "Asia/Kolkata"  # UTC+05:30 all year: a half-hour offset catches a wrong zone
KOLKATA = re.compile(r"^Asia/(Kolkata|Calcutta) \(UTC\+05:30\)$")
PREFERENCES = "/v1/auth/preferences"
HISTORY = PREFERENCES + "/query-history"


@contextmanager
def browser_of(browser: Browser, site: Site, email: str | None, key: str = "") -> Iterator[Page]:
    """A browser of its own (a context in the Kolkata zone), signed in on the search page
    as the person, or with ``key``; its page must not throw."""
    context = browser.new_context(viewport={"width": 1280, "height": 860}, timezone_id=ZONE)
    context.set_default_timeout(60_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        if email is None:
            sign_in_with_key(page, site.base_url, key, next_path="/search")
        else:
            sign_in_as_person(page, site.base_url, email, next_path="/search")
        yield page
        assert not errors, errors
    finally:
        context.close()


def shown(ms: int, zone: str = "UTC") -> str:
    """A time as the page writes it, in ``zone``."""
    return in_zone(ms, zone) + f".{ms % 1000:03d}"


def in_zone(ms: int, zone: str) -> str:
    return datetime.fromtimestamp(ms / 1000, ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S")


def input_value(ms: int, zone: str) -> str:
    """What a ``datetime-local`` input holds for ``ms`` to the second: the HTML
    standard's normalized form, which leaves out seconds that are zero."""
    value = in_zone(ms, zone).replace(" ", "T")
    return value.removesuffix(":00")


@contextmanager
def kept(page: Page, method: str, path: str = PREFERENCES) -> Iterator[None]:
    """What the block does, then the server's 200 to the page's ``method`` of ``path``
    (what it changed is kept)."""
    with page.expect_response(lambda r: r.url.endswith(path) and r.request.method == method) as got:
        yield
    assert got.value.status == 200, got.value.text()


def click_and_save(page: Page, testid: str) -> None:
    with kept(page, "PATCH"):
        page.get_by_test_id(testid).click()


def first_time(page: Page) -> Locator:
    return page.get_by_test_id("log-line").first.locator("time")


def test_the_utc_switch_is_remembered_for_the_person(site: Site, browser: Browser) -> None:
    account = site.account()
    email = make_person(account)
    now = now_ms()
    # The newest line, on a whole minute (a range's input leaves out seconds that are
    # zero, which a test on the clock's seconds met once a minute); t1 to t3 every 30
    # minutes back.
    first = (now - 16 * MINUTE) // MINUTE * MINUTE + 877
    account.ingest([{"line": f"t{k}", "timestamp": first - 30 * k * MINUTE} for k in range(4)])

    with browser_of(browser, site, email) as page:
        zone, switch = page.get_by_test_id("time-zone"), page.get_by_test_id("utc-switch")
        expect(zone).to_have_text(KOLKATA)
        expect(switch).to_have_attribute("aria-pressed", "false")
        expect_lines(page, ["t0", "t1", "t2", "t3"])
        expect(first_time(page)).to_have_text(shown(first, ZONE))

        click_and_save(page, "utc-switch")
        expect(zone).to_have_text("UTC")
        expect(switch).to_have_attribute("aria-pressed", "true")
        # The lines already drawn are drawn again in UTC, without a new search.
        expect(first_time(page)).to_have_text(shown(first))
        expect(page.get_by_test_id("histogram").locator("canvas")).to_have_count(1)

        # Typed absolute times are read in UTC now (the same wall time as Kolkata's
        # would be 5:30 later).
        start, end = first - 70 * MINUTE, first - 20 * MINUTE
        typed = page.get_by_test_id("time-input")
        typed.fill(f"{in_zone(start, 'UTC')} .. {in_zone(end, 'UTC')}")
        typed.press("Enter")
        expect_lines(page, ["t1", "t2"])
        query = parse_qs(urlparse(page.url).query)
        assert int(query["from"][0]) == start // 1000 * 1000
        assert int(query["to"][0]) == end // 1000 * 1000 + 999
        # The range is shown in UTC too.
        expect(page.get_by_test_id("range-from")).to_have_value(input_value(start, "UTC"))

        page.reload()
        expect(page.get_by_test_id("utc-switch")).to_have_attribute("aria-pressed", "true")
        expect(page.get_by_test_id("time-zone")).to_have_text("UTC")
        expect_lines(page, ["t1", "t2"])
        expect(first_time(page)).to_have_text(shown(first - 30 * MINUTE))
        expect(page.get_by_test_id("range-from")).to_have_value(input_value(start, "UTC"))

    # Another browser of the same person: UTC too; switched off there, off after a reload.
    with browser_of(browser, site, email) as other:
        expect(other.get_by_test_id("time-zone")).to_have_text("UTC")
        expect(other.get_by_test_id("utc-switch")).to_have_attribute("aria-pressed", "true")
        expect_lines(other, ["t0", "t1", "t2", "t3"])
        expect(first_time(other)).to_have_text(shown(first))
        click_and_save(other, "utc-switch")
        expect(other.get_by_test_id("time-zone")).to_have_text(KOLKATA)
        expect(first_time(other)).to_have_text(shown(first, ZONE))
        other.reload()
        expect(other.get_by_test_id("time-zone")).to_have_text(KOLKATA)
        expect(other.get_by_test_id("utc-switch")).to_have_attribute("aria-pressed", "false")


def test_a_key_has_the_switch_for_the_page_only(site: Site, browser: Browser) -> None:
    account = site.account()
    account.ingest([{"line": "k0", "timestamp": now_ms() - 5 * MINUTE}])
    with browser_of(browser, site, None, key=account.service_key) as page:
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url) if PREFERENCES in r.url else None)
        expect_lines(page, ["k0"])
        page.get_by_test_id("utc-switch").click()
        expect(page.get_by_test_id("time-zone")).to_have_text("UTC")
        page.reload()
        expect_lines(page, ["k0"])
        expect(page.get_by_test_id("time-zone")).to_have_text(KOLKATA)
        expect(page.get_by_test_id("utc-switch")).to_have_attribute("aria-pressed", "false")
        # Nothing asked of the preferences, which a key does not have.
        assert asked == []


def search(page: Page, query: str, lines: list[str]) -> None:
    """Type a query and run it; wait for its lines and for it to be remembered."""
    box = page.get_by_test_id("search-input")
    box.fill(query)
    with kept(page, "POST", HISTORY):
        box.press("Enter")
    expect_lines(page, lines)


def history(page: Page) -> list[str]:
    return [text.strip() for text in page.get_by_test_id("query-history-query").all_inner_texts()]


def url_query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


# The lines of person_with_three_lines, newest first.
THREE = ["gamma three", "beta two", "alpha one"]


def person_with_three_lines(site: Site) -> tuple[Account, str]:
    """A new account holding THREE, from the last minutes, and a person of it (their
    e-mail)."""
    account = site.account()
    email = make_person(account)
    now = now_ms()
    account.ingest(
        [{"line": line, "timestamp": now - (n + 1) * MINUTE} for n, line in enumerate(THREE)]
    )
    return account, email


def star(page: Page, query: str) -> None:
    """Stars ``query``'s line in the page's open history; the server has kept it."""
    line = page.get_by_test_id("query-history-item").filter(has_text=query)
    with kept(page, "POST", PREFERENCES + "/starred"):
        line.locator("xpath=..").get_by_test_id("query-history-star").click()


def three_starred(page: Page) -> Locator:
    """alpha, beta and gamma run, then starred in that order (listed gamma, beta, alpha)
    with the history open; the starred lines' queries."""
    expect_lines(page, THREE)
    for query, line in (("alpha", "alpha one"), ("beta", "beta two"), ("gamma", "gamma three")):
        search(page, query, [line])
    page.get_by_test_id("query-history-toggle").click()
    for query in ("alpha", "beta", "gamma"):
        star(page, query)
    queries = page.get_by_test_id("query-history-starred-item").get_by_test_id(
        "query-history-query"
    )
    expect(queries).to_have_text(["gamma", "beta", "alpha"])
    return queries


def test_query_history_per_person(site: Site, browser: Browser) -> None:
    account, email = person_with_three_lines(site)
    with browser_of(browser, site, email) as page:
        expect_lines(page, THREE)
        page.get_by_test_id("query-history-toggle").click()
        expect(page.get_by_test_id("query-history")).to_contain_text("No queries yet")
        page.get_by_test_id("query-history-toggle").click()
        expect(page.get_by_test_id("query-history")).to_be_hidden()

        search(page, "alpha", ["alpha one"])
        search(page, "beta", ["beta two"])
        search(page, "alpha", ["alpha one"])
        # A query that does not parse is not remembered.
        box = page.get_by_test_id("search-input")
        box.fill("level:(")
        box.press("Enter")
        expect(page.get_by_test_id("query-error")).to_be_visible()

        page.get_by_test_id("query-history-toggle").click()
        items = page.get_by_test_id("query-history-item")
        expect(page.get_by_test_id("query-history-query")).to_have_text(["alpha", "beta"])
        # Choosing one runs it (and it is the newest again).
        with kept(page, "POST", HISTORY):
            items.nth(1).click()
        expect_lines(page, ["beta two"])
        expect(page.get_by_test_id("query-history")).to_be_hidden()
        expect(box).to_have_value("beta")
        assert parse_qs(urlparse(page.url).query)["q"] == ["beta"]

    # The same person in another browser: the history is theirs, newest first, and the
    # keyboard reaches it from the search box.
    with browser_of(browser, site, email) as other:
        expect_lines(other, THREE)
        box = other.get_by_test_id("search-input")
        box.press("Alt+ArrowDown")
        items = other.get_by_test_id("query-history-item")
        expect(other.get_by_test_id("query-history-query")).to_have_text(["beta", "alpha"])
        expect(items.first).to_be_focused()
        other.keyboard.press("ArrowDown")
        expect(items.nth(1)).to_be_focused()
        with kept(other, "POST", HISTORY):
            other.keyboard.press("Enter")
        expect_lines(other, ["alpha one"])
        assert parse_qs(urlparse(other.url).query)["q"] == ["alpha"]

        with kept(other, "DELETE", HISTORY):
            other.get_by_test_id("query-history-toggle").click()
            other.get_by_test_id("query-history-clear").click()
        expect(other.get_by_test_id("query-history")).to_contain_text("No queries yet")
        # Cleared on the server: after a reload only the search the reload ran is there.
        with kept(other, "POST", HISTORY):
            other.reload()
        expect_lines(other, ["alpha one"])
        other.get_by_test_id("query-history-toggle").click()
        expect(other.get_by_test_id("query-history-query")).to_have_text(["alpha"])

    # Another person of the same account has a history of their own.
    with browser_of(browser, site, make_person(account)) as stranger:
        stranger.get_by_test_id("query-history-toggle").click()
        expect(stranger.get_by_test_id("query-history")).to_contain_text("No queries yet")


def test_the_history_keeps_each_searchs_range_and_filters(site: Site, browser: Browser) -> None:
    """Choosing an entry runs its query with the range as it was chosen (a preset or a
    typed relative range stays relative; a typed absolute range stays those bounds) and
    with its host, app and level filters and the field picker's fields."""
    account = site.account()
    email = make_person(account)
    now = now_ms()
    account.ingest([{"line": "red one", "timestamp": now - 3 * MINUTE}], host="web-1")
    account.ingest([{"line": "red two", "timestamp": now - 2 * MINUTE}], host="web-2")
    old = now - 180 * MINUTE
    account.ingest([{"line": "red old", "timestamp": old}], host="web-1")
    start, end = (old - 10 * MINUTE) // 1000 * 1000, (old + 10 * MINUTE) // 1000 * 1000
    typed = f"{in_zone(start, 'UTC')}Z .. {in_zone(end, 'UTC')}Z"

    with browser_of(browser, site, email) as page:
        # A preset with a host filter (from the address, as a shared link runs it).
        with kept(page, "POST", HISTORY):
            page.goto(f"{site.base_url}/search?q=red&range=1h&hosts=web-1&field=status")
        expect_lines(page, ["red one"])
        # A typed absolute range.
        page.get_by_test_id("time-input").fill(typed)
        search(page, "old", ["red old"])
        absolute = url_query(page)
        assert absolute["from"] == [str(start)]
        assert int(absolute["to"][0]) // 1000 * 1000 == end
        # A typed relative range, without the host filter.
        with kept(page, "POST", HISTORY):
            page.goto(f"{site.base_url}/search?q=two&range=24h")
        page.get_by_test_id("time-input").fill("-2h")
        search(page, "two", ["red two"])
        assert url_query(page)["range"] == ["2h"]

        page.get_by_test_id("query-history-toggle").click()
        expect(page.get_by_test_id("query-history-query")).to_have_text(["two", "old", "red"])
        ranges = page.get_by_test_id("query-history-range")
        expect(ranges.nth(0)).to_have_text("Last 2h")
        expect(ranges.nth(1)).to_have_text(re.compile(r"^\d{4}-.* \u2013 \d{4}-"))
        expect(ranges.nth(2)).to_have_text("Last hour · hosts: web-1 · fields: status")

        # The preset with its filter, whatever the page's range and filters are now.
        with kept(page, "POST", HISTORY):
            page.get_by_test_id("query-history-item").nth(2).click()
        expect_lines(page, ["red one"])
        chosen = url_query(page)
        assert (chosen["q"], chosen["range"], chosen["hosts"]) == (["red"], ["1h"], ["web-1"])
        assert chosen["field"] == ["status"]  # the picker's field, gone from the page since
        picked = page.get_by_test_id("facet-custom").get_by_test_id("facet-custom-field")
        expect(picked).to_have_count(1)
        expect(page.get_by_test_id("time-range")).to_have_value("1h")
        # The absolute one: its bounds, not relative to now.
        page.get_by_test_id("query-history-toggle").click()
        with kept(page, "POST", HISTORY):
            page.get_by_test_id("query-history-item").filter(has_text="old").click()
        expect_lines(page, ["red old"])
        chosen = url_query(page)
        assert (chosen["q"], chosen["from"], chosen["to"]) == (
            ["old"],
            absolute["from"],
            absolute["to"],
        )
        assert chosen["hosts"] == ["web-1"]  # as it ran: the filter was on then
        expect(page.get_by_test_id("time-range")).to_have_value("custom")

    # Another browser of the person: the entries are kept by the server.
    with browser_of(browser, site, email) as other:
        expect_lines(other, ["red two", "red one", "red old"])
        other.get_by_test_id("query-history-toggle").click()
        expect(other.get_by_test_id("query-history-query")).to_have_text(["old", "red", "two"])
        with kept(other, "POST", HISTORY):
            other.get_by_test_id("query-history-item").filter(has_text="two").click()
        expect_lines(other, ["red two"])
        chosen = url_query(other)
        assert chosen["range"] == ["2h"]
        assert "from" not in chosen
        assert "field" not in chosen  # it ran with none
        expect(other.get_by_test_id("time-range")).to_have_value("2h")


def test_the_history_is_filtered_and_forgotten_entry_by_entry(site: Site, browser: Browser) -> None:
    """The filter box narrows the list to the entries holding its words (any case) and
    Enter there runs the first; one entry is forgotten by its button or by Delete, on the
    server too, the others kept in their order."""
    _, email = person_with_three_lines(site)
    with browser_of(browser, site, email) as page:
        expect_lines(page, THREE)
        for query, lines in (
            ("alpha", ["alpha one"]),
            ("beta", ["beta two"]),
            ("gamma", ["gamma three"]),
            ("two", ["beta two"]),
        ):
            search(page, query, lines)
        page.get_by_test_id("query-history-toggle").click()
        queries = page.get_by_test_id("query-history-query")
        expect(queries).to_have_text(["two", "gamma", "beta", "alpha"])
        box = page.get_by_test_id("query-history-filter")
        box.fill("MM")
        expect(queries).to_have_text(["gamma"])
        box.fill("no such words")
        expect(queries).to_have_count(0)
        expect(page.get_by_test_id("query-history-none")).to_be_visible()
        box.fill("")
        expect(queries).to_have_text(["two", "gamma", "beta", "alpha"])

        # Its button forgets one entry; the others keep their order.
        with kept(page, "POST", HISTORY + "/forget"):
            page.get_by_test_id("query-history-remove").nth(2).click()
        expect(queries).to_have_text(["two", "gamma", "alpha"])
        expect(page.get_by_test_id("query-history")).to_be_visible()
        # Delete on an entry reached with the keyboard forgets it; the focus goes to the
        # entry that took its place.
        page.get_by_test_id("query-history-toggle").click()
        page.get_by_test_id("search-input").press("Alt+ArrowDown")
        items = page.get_by_test_id("query-history-item")
        expect(items.first).to_be_focused()
        with kept(page, "POST", HISTORY + "/forget"):
            page.keyboard.press("Delete")
        expect(queries).to_have_text(["gamma", "alpha"])
        expect(items.first).to_be_focused()
        # Up from the first entry reaches the filter box; Enter there runs the first match.
        page.keyboard.press("ArrowUp")
        expect(box).to_be_focused()
        box.press_sequentially("ph")
        expect(queries).to_have_text(["alpha"])
        with kept(page, "POST", HISTORY):
            box.press("Enter")
        expect_lines(page, ["alpha one"])
        expect(page.get_by_test_id("search-input")).to_have_value("alpha")

    # Forgotten on the server: another browser of the person has what is left.
    with browser_of(browser, site, email) as other:
        expect_lines(other, THREE)
        other.get_by_test_id("query-history-toggle").click()
        expect(other.get_by_test_id("query-history-query")).to_have_text(["alpha", "gamma"])


def test_a_starred_search_stays_first_until_unstarred(site: Site, browser: Browser) -> None:
    """An entry's star keeps it among the starred searches, listed first with the range
    and filters it was starred with: choosing it runs them, clearing the history keeps
    it, another browser of the person has it; its star again unstars it."""
    _, email = person_with_three_lines(site)
    with browser_of(browser, site, email) as page:
        expect_lines(page, THREE)
        with kept(page, "POST", HISTORY):
            page.goto(f"{site.base_url}/search?q=beta&range=24h")
        expect_lines(page, ["beta two"])
        search(page, "alpha", ["alpha one"])
        page.get_by_test_id("query-history-toggle").click()
        expect(page.get_by_test_id("query-history-starred-item")).to_have_count(0)
        beta_star = page.get_by_test_id("query-history-star").and_(
            page.locator("[data-query=beta]")
        )
        expect(beta_star).to_have_attribute("aria-pressed", "false")
        star(page, "beta")
        starred = page.get_by_test_id("query-history-starred-item")
        expect(starred).to_have_count(1)
        expect(starred.get_by_test_id("query-history-query")).to_have_text("beta")
        expect(starred.get_by_test_id("query-history-range")).to_have_text("Last 24 hours")
        expect(beta_star.first).to_have_attribute("aria-pressed", "true")
        # "*" on an entry reached with the keyboard stars it too, and again unstars it.
        page.get_by_test_id("query-history-filter").press("ArrowDown")
        page.keyboard.press("ArrowDown")
        alpha = page.get_by_test_id("query-history-item").filter(has_text="alpha")
        expect(alpha).to_be_focused()
        with kept(page, "POST", PREFERENCES + "/starred"):
            page.keyboard.press("*")
        expect(starred.get_by_test_id("query-history-query")).to_have_text(["alpha", "beta"])
        expect(alpha).to_be_focused()
        with kept(page, "POST", PREFERENCES + "/starred/forget"):
            page.keyboard.press("*")
        expect(starred.get_by_test_id("query-history-query")).to_have_text(["beta"])
        # Clearing the history leaves the starred search.
        with kept(page, "DELETE", HISTORY):
            page.get_by_test_id("query-history-clear").click()
        expect(page.get_by_test_id("query-history-item")).to_have_count(0)
        expect(starred).to_have_count(1)
        # Chosen: runs with its range, whatever the page's is now.
        page.get_by_test_id("query-history-toggle").click()
        expect(page.get_by_test_id("query-history")).to_be_hidden()
        # The range's change runs alpha again; it is remembered once its lines came (a
        # search the starred one's click overtook before that would not be: the history
        # holds what was shown).
        with kept(page, "POST", HISTORY):
            page.get_by_test_id("time-range").select_option("1h")
        page.get_by_test_id("query-history-toggle").click()
        with kept(page, "POST", HISTORY):
            starred.click()
        expect_lines(page, ["beta two"])
        assert url_query(page)["range"] == ["24h"]

    # Another browser of the person: starred on the server; unstarred there.
    with browser_of(browser, site, email) as other:
        expect_lines(other, THREE)
        other.get_by_test_id("query-history-toggle").click()
        starred = other.get_by_test_id("query-history-starred-item")
        expect(starred.get_by_test_id("query-history-query")).to_have_text(["beta"])
        with kept(other, "POST", PREFERENCES + "/starred/forget"):
            starred.locator("xpath=..").get_by_test_id("query-history-star").click()
        expect(starred).to_have_count(0)
        # The history is untouched: what ran since it was cleared (the range's change
        # ran alpha again, then the starred beta).
        ran = other.get_by_test_id("query-history-item").get_by_test_id("query-history-query")
        expect(ran).to_have_text(["beta", "alpha"])
    with browser_of(browser, site, email) as third:
        expect_lines(third, THREE)
        third.get_by_test_id("query-history-toggle").click()
        ran = third.get_by_test_id("query-history-item").get_by_test_id("query-history-query")
        expect(ran).to_have_text(["beta", "alpha"])
        expect(third.get_by_test_id("query-history-starred-item")).to_have_count(0)


def test_a_starred_search_is_named_and_found_by_its_name(site: Site, browser: Browser) -> None:
    """A starred search's pencil (or F2 on it) names it in place: the name is shown
    with the query under it, the filter box finds it by its name, Escape keeps the name
    it had, a blank name takes it away; another browser of the person has the name."""
    _, email = person_with_three_lines(site)
    starred = PREFERENCES + "/starred"
    with browser_of(browser, site, email) as page:
        expect_lines(page, THREE)
        search(page, "beta", ["beta two"])
        search(page, "alpha", ["alpha one"])
        page.get_by_test_id("query-history-toggle").click()
        star(page, "beta")
        item = page.get_by_test_id("query-history-starred-item")
        expect(item.get_by_test_id("query-history-name-text")).to_have_count(0)

        # Its pencil: a box, focused; Enter names it.
        page.get_by_test_id("query-history-rename").click()
        name = page.get_by_test_id("query-history-name")
        expect(name).to_be_focused()
        name.fill("Beta's lines")
        with kept(page, "POST", starred + "/name"):
            name.press("Enter")
        expect(item.get_by_test_id("query-history-name-text")).to_have_text("Beta's lines")
        expect(item.get_by_test_id("query-history-query")).to_have_text("beta")
        expect(item).to_be_focused()
        # The filter box finds it by its name (no query holds the word).
        page.get_by_test_id("query-history-filter").fill("LINES")
        expect(page.get_by_test_id("query-history-query")).to_have_text(["beta"])
        page.get_by_test_id("query-history-filter").fill("")

        # F2 on it reached with the keyboard; Escape keeps the name, and the list open.
        page.get_by_test_id("query-history-filter").press("ArrowDown")
        expect(item).to_be_focused()
        page.keyboard.press("F2")
        expect(name).to_have_value("Beta's lines")
        name.fill("not kept")
        name.press("Escape")
        expect(page.get_by_test_id("query-history")).to_be_visible()
        expect(item.get_by_test_id("query-history-name-text")).to_have_text("Beta's lines")
        expect(item).to_be_focused()
        # Blank: the name taken away, the query shown alone.
        page.keyboard.press("F2")
        name.fill("  ")
        with kept(page, "POST", starred + "/name"):
            name.press("Enter")
        expect(item.get_by_test_id("query-history-name-text")).to_have_count(0)
        page.get_by_test_id("query-history-rename").click()
        name.fill("Second look")
        with kept(page, "POST", starred + "/name"):
            name.press("Enter")
        expect(item.get_by_test_id("query-history-name-text")).to_have_text("Second look")

    # Another browser of the person: the name, and the search it names runs.
    with browser_of(browser, site, email) as other:
        expect_lines(other, THREE)
        other.get_by_test_id("query-history-toggle").click()
        item = other.get_by_test_id("query-history-starred-item")
        expect(item.get_by_test_id("query-history-name-text")).to_have_text("Second look")
        with kept(other, "POST", HISTORY):
            item.click()
        expect_lines(other, ["beta two"])


def test_a_name_being_typed_outlives_the_list_drawn_again(site: Site, browser: Browser) -> None:
    """The list drawn again while a starred search's name is typed (here: the history
    opened, the pencil clicked, then the answer holding another browser's star) keeps
    the box where it was, with what it holds and the focus; Enter names the search."""
    _, email = person_with_three_lines(site)
    starred = PREFERENCES + "/starred"
    with browser_of(browser, site, email) as page, browser_of(browser, site, email) as other:
        expect_lines(page, THREE)
        search(page, "beta", ["beta two"])
        search(page, "alpha", ["alpha one"])
        page.get_by_test_id("query-history-toggle").click()
        star(page, "beta")
        page.get_by_test_id("query-history-toggle").click()

        # Another browser stars alpha: the first page learns it when its list opens.
        expect_lines(other, THREE)
        other.get_by_test_id("query-history-toggle").click()
        star(other, "alpha")

        # The page's question held until the box is open and half typed in.
        held: list[Route] = []
        page.route(
            f"**{PREFERENCES}",
            lambda route: (
                held.append(route) if route.request.method == "GET" else route.continue_()
            ),
        )
        page.get_by_test_id("query-history-toggle").click()
        page.get_by_test_id("query-history-rename").click()
        name = page.get_by_test_id("query-history-name")
        expect(name).to_be_focused()
        name.press_sequentially("Half")
        while not held:  # the route's handler runs while Playwright is waited on
            page.wait_for_timeout(20)
        with page.expect_response(lambda r: r.url.endswith(PREFERENCES)):
            held[0].continue_()
        queries = page.get_by_test_id("query-history-starred-item").get_by_test_id(
            "query-history-query"
        )
        expect(queries).to_have_text(["alpha"])  # drawn again: beta's line is the box
        expect(name).to_be_focused()
        expect(name).to_have_value("Half")
        name.press_sequentially(" done")
        with kept(page, "POST", starred + "/name"):
            name.press("Enter")
        beta_line = page.get_by_test_id("query-history-starred-item").filter(has_text="beta")
        expect(beta_line.get_by_test_id("query-history-name-text")).to_have_text("Half done")


def test_a_starred_search_is_dragged_into_place(site: Site, browser: Browser) -> None:
    """A starred search dragged by its handle onto another starred line goes before it
    (dropped on the line's upper half) or after it (the lower half); another browser of
    the person has the order."""
    _, email = person_with_three_lines(site)
    move = PREFERENCES + "/starred/move"
    with browser_of(browser, site, email) as page:
        queries = three_starred(page)

        def line(query: str) -> Locator:
            return page.locator(f".history-row[data-query='{query}']")

        def drag(query: str, onto: str, *, lower: bool) -> None:
            target = line(onto)
            box = target.bounding_box()
            assert box is not None
            y = box["height"] - 2 if lower else 2
            with kept(page, "POST", move):
                line(query).get_by_test_id("query-history-drag").drag_to(
                    target, target_position={"x": box["width"] / 2, "y": y}
                )

        drag("alpha", "gamma", lower=False)  # before the first
        expect(queries).to_have_text(["alpha", "gamma", "beta"])
        drag("alpha", "beta", lower=True)  # after the last
        expect(queries).to_have_text(["gamma", "beta", "alpha"])
        drag("gamma", "alpha", lower=False)  # down, before another
        expect(queries).to_have_text(["beta", "gamma", "alpha"])

    with browser_of(browser, site, email) as other:
        expect_lines(other, THREE)
        other.get_by_test_id("query-history-toggle").click()
        expect(
            other.get_by_test_id("query-history-starred-item").get_by_test_id("query-history-query")
        ).to_have_text(["beta", "gamma", "alpha"])


def test_a_starred_search_is_moved_with_the_keyboard(site: Site, browser: Browser) -> None:
    """Alt+Up and Alt+Down on a starred search move it among the starred (the focus
    stays on it; at either end nothing moves); another browser of the person has the
    order."""
    _, email = person_with_three_lines(site)
    move = PREFERENCES + "/starred/move"
    with browser_of(browser, site, email) as page:
        queries = three_starred(page)
        starred = page.get_by_test_id("query-history-starred-item")

        # Down from the top, twice: last; the focus follows it.
        gamma = starred.filter(has_text="gamma")
        gamma.focus()
        with kept(page, "POST", move):
            page.keyboard.press("Alt+ArrowDown")
        expect(queries).to_have_text(["beta", "gamma", "alpha"])
        expect(gamma).to_be_focused()
        with kept(page, "POST", move):
            page.keyboard.press("Alt+ArrowDown")
        expect(queries).to_have_text(["beta", "alpha", "gamma"])
        expect(gamma).to_be_focused()
        # At the end nothing moves (nor is sent); plain Down still goes to the history.
        sent: list[str] = []
        page.on("request", lambda request: sent.append(request.url))
        page.keyboard.press("Alt+ArrowDown")
        expect(queries).to_have_text(["beta", "alpha", "gamma"])
        expect(gamma).to_be_focused()
        # Up once: the one move sent since (the Down at the end sent none).
        with kept(page, "POST", move):
            page.keyboard.press("Alt+ArrowUp")
        assert [url for url in sent if url.endswith(move)] == [f"{site.base_url}{move}"]
        expect(queries).to_have_text(["beta", "gamma", "alpha"])
        expect(gamma).to_be_focused()
        page.keyboard.press("ArrowDown")
        expect(starred.filter(has_text="alpha")).to_be_focused()

    with browser_of(browser, site, email) as other:
        expect_lines(other, THREE)
        other.get_by_test_id("query-history-toggle").click()
        expect(
            other.get_by_test_id("query-history-starred-item").get_by_test_id("query-history-query")
        ).to_have_text(["beta", "gamma", "alpha"])


def test_the_history_opened_shows_what_another_browser_changed(
    site: Site, browser: Browser
) -> None:
    """A page loaded before the person starred and ran searches in another browser shows
    them when its history is opened again, without a reload."""
    _, email = person_with_three_lines(site)
    with browser_of(browser, site, email) as first, browser_of(browser, site, email) as second:
        expect_lines(first, THREE)
        search(first, "alpha", ["alpha one"])
        first.get_by_test_id("query-history-toggle").click()
        expect(first.get_by_test_id("query-history-item")).to_have_count(1)
        first.get_by_test_id("query-history-toggle").click()

        expect_lines(second, THREE)
        search(second, "beta", ["beta two"])
        second.get_by_test_id("query-history-toggle").click()
        star(second, "beta")

        with first.expect_response(
            lambda r: r.url.endswith(PREFERENCES) and r.request.method == "GET"
        ):
            first.get_by_test_id("query-history-toggle").click()
        starred = first.get_by_test_id("query-history-starred-item")
        expect(starred.get_by_test_id("query-history-query")).to_have_text(["beta"])
        ran = first.get_by_test_id("query-history-item").get_by_test_id("query-history-query")
        expect(ran).to_have_text(["beta", "alpha"])
