"""The search page's way to its first line (docs/web.md, "Time to the first line"): the
first export page is asked beside the session check, not after it, and used only when
the session check lets the page draw; the shell names every module the search page
imports (`modulepreload`), so none is found one level of imports after another."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Browser, BrowserContext, Page, Request, Route, expect
from tests.live import live_client
from tests.waiting import until
from tests.web.conftest import Site
from tests.web.harness import expect_lines, now_ms, sign_in_with_key

MINUTE = 60_000


def _wait_held(page: Page, held: list[Route], what: str) -> None:
    """Until ``held`` has a route (Playwright hands routes over while the test is in
    one of its calls: the check makes one)."""
    until(lambda: page.evaluate("true") and held, what=what)


def _first_pages(requests: list[Request]) -> list[Request]:
    """The export's first pages among ``requests`` (a later page has a pagination_id)."""
    return [
        request
        for request in requests
        if urlparse(request.url).path == "/v2/export"
        and "pagination_id" not in parse_qs(urlparse(request.url).query)
    ]


def _signed_in_and_settled(page: Page, site: Site, key: str, lines: list[str]) -> None:
    """Signed in through the sign-in page, which lands on the search page with no query:
    wait for that page's lines, so its own first export page (no ``query``) is not
    still to be asked when the test starts watching for the next page's."""
    sign_in_with_key(page, site.base_url, key)
    expect_lines(page, lines)


def _end_session(page: Page, site: Site) -> None:
    """Sign the browser's session out on the server; the browser keeps its cookies."""
    cookies = {cookie["name"]: cookie["value"] for cookie in page.context.cookies()}
    with live_client(site.base_url, cookies=cookies) as http:
        ended = http.delete("/v1/auth/session", headers={"X-CSRF-Token": cookies["tidegate_csrf"]})
        assert ended.status_code == 200, ended.text


def test_the_first_lines_are_asked_while_the_session_check_is_still_out(
    site: Site, page: Page
) -> None:
    account = site.account()
    now = now_ms()
    account.ingest([{"line": f"early line {i}", "timestamp": now - i * MINUTE} for i in range(3)])
    _signed_in_and_settled(page, site, account.service_key, [f"early line {i}" for i in range(3)])

    # The session check is held (not answered) until the test lets it go.
    held: list[Route] = []

    def hold(route: Route) -> None:
        if route.request.method == "GET":
            held.append(route)
        else:
            route.continue_()

    page.route("**/v1/auth/session", hold)
    requests: list[Request] = []
    page.on("request", lambda request: requests.append(request))
    with page.expect_request(lambda request: urlparse(request.url).path == "/v2/export") as asked:
        page.goto(site.base_url + "/search?q=early", wait_until="commit")
    _wait_held(page, held, "the session check, held")
    # The export went out while the session check had no answer yet.
    assert len(held) == 1
    assert parse_qs(urlparse(asked.value.url).query)["query"] == ["early"]
    expect(page.get_by_test_id("log-line")).to_have_count(0)

    held[0].continue_()
    expect_lines(page, [f"early line {i}" for i in range(3)])
    expect(page.locator(".summary-bar")).to_contain_text("3 matching lines")
    # That answer is the page's first page: not asked a second time.
    assert len(_first_pages(requests)) == 1
    # The button that needed its own round trip still comes (an owner's key may save).
    expect(page.get_by_test_id("save-view")).to_be_visible()


def test_signed_out_nothing_is_asked_and_a_later_sign_in_searches_afresh(
    site: Site, page: Page
) -> None:
    account = site.account()
    account.ingest([{"line": "after the sign-in", "timestamp": now_ms()}])
    requests: list[Request] = []
    page.on("request", lambda request: requests.append(request))
    page.goto(site.base_url + "/search?q=sign")
    expect(page.get_by_test_id("signin-key")).to_be_visible()
    assert _first_pages(requests) == []

    # Signed in, then the session ended on the server while the browser kept its cookies:
    # the page asks early, is refused (401), and shows the sign-in; after signing in
    # again it searches afresh, never showing the refusal.
    sign_in_with_key(page, site.base_url, account.service_key)
    expect_lines(page, ["after the sign-in"])
    _end_session(page, site)
    requests.clear()
    page.goto(site.base_url + "/search?q=sign")
    expect(page).to_have_url(f"{site.base_url}/signin?next=%2Fsearch%3Fq%3Dsign")
    page.get_by_test_id("signin-key").fill(account.service_key)
    page.get_by_test_id("signin-submit").click()
    expect_lines(page, ["after the sign-in"])
    expect(page.get_by_role("alert")).to_have_count(0)
    statuses = [request.response().status for request in _first_pages(requests)]  # type: ignore[union-attr]
    assert statuses == [401, 200]


def test_a_session_ending_before_the_early_answer_leads_to_the_sign_in(
    site: Site, page: Page
) -> None:
    account = site.account()
    account.ingest([{"line": "never shown", "timestamp": now_ms()}])
    _signed_in_and_settled(page, site, account.service_key, ["never shown"])

    # The first export page is held until the session has ended on the server; the
    # session check meanwhile answers that it is open, so the page draws and waits.
    held: list[Route] = []
    page.route("**/v2/export*", lambda route: held.append(route))
    page.goto(site.base_url + "/search?q=never", wait_until="commit")
    expect(page.get_by_test_id("lines")).to_be_attached()
    _wait_held(page, held, "the first export page, held")
    _end_session(page, site)
    for route in held:
        route.continue_()
    expect(page).to_have_url(f"{site.base_url}/signin")
    expect(page.get_by_test_id("log-line")).to_have_count(0)


def test_the_shell_preloads_every_module_the_search_page_imports(
    site: Site, browser: Browser
) -> None:
    account = site.account()
    account.ingest([{"line": "a first visit", "timestamp": now_ms()}])
    # A browser that has never seen the app: nothing in its cache.
    context: BrowserContext = browser.new_context()
    context.set_default_timeout(60_000)
    try:
        signed_in = context.request.post(
            site.base_url + "/v1/auth/session", data={"key": account.service_key}
        )
        assert signed_in.ok, signed_in.text()
        page = context.new_page()
        scripts: list[str] = []

        def note(request: Request) -> None:
            if request.resource_type == "script" and request.url.endswith(".js"):
                scripts.append(urlparse(request.url).path)

        page.on("request", note)
        page.goto(site.base_url + "/search")
        expect_lines(page, ["a first visit"])
        preloaded = page.eval_on_selector_all(
            "link[rel=modulepreload]", "links => links.map((link) => new URL(link.href).pathname)"
        )
        modules = {path for path in scripts if "/vendor/" not in path}
        assert any(path.endswith("/pages/search.js") for path in modules)
        assert modules <= set(preloaded), sorted(modules - set(preloaded))
    finally:
        context.close()
