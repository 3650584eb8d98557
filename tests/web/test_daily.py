"""The web app for daily use (issue 22), on a server with the platform's default rate
limits and alerts that fire within a second: a person's searches never meet the keys'
50 a minute; a 429 is waited out, saying when; an alert's link opens its view over the
window that fired; a view's alert channels are edited and removed on the page; the
header and the favicon."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, Response, Route, expect
from tests.alerts.receivers import ThreadedReceiver
from tests.web.conftest import Site, serve_site
from tests.web.harness import (
    expect_lines,
    make_person,
    now_ms,
    sign_in_as_person,
    sign_in_with_key,
)

SEARCHES = 30
DOCUMENTED_PER_MINUTE = 50


@pytest.fixture(scope="module")
def daily_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The rate limits left at their defaults (the other web tests turn the keys' off),
    alerts evaluated several times a second and allowed to reach a webhook on loopback
    (``TIDEGATE_PUBLIC_URL`` is the server's own address: alert links lead here)."""
    env = {
        "TIDEGATE_ALERT_TICK_S": "0.2",
        "TIDEGATE_ALERT_SETTLE_S": "0.5",
        "TIDEGATE_DESTINATION_ALLOW": "127.0.0.1",
    }
    with serve_site(tmp_path_factory.mktemp("web-daily-server"), env) as found:
        yield found


def test_thirty_searches_in_a_row_never_meet_a_rate_limit(daily_site: Site, page: Page) -> None:
    account = daily_site.account()
    now = now_ms()
    account.ingest(
        [
            {"line": f"request {i} served", "app": "api", "timestamp": now - i}
            for i in range(SEARCHES)
        ]
    )
    api_calls: list[int] = []

    def record(response: Response) -> None:
        path = urlparse(response.url).path
        if path.startswith(("/v1/", "/v2/", "/v3/")):
            api_calls.append(response.status)

    # A person (e-mail and password): each search also goes into their query history.
    email = make_person(account)
    page.on("response", record)
    sign_in_as_person(page, daily_site.base_url, email)
    summary = page.locator(".summary-bar")
    for i in range(SEARCHES):
        page.get_by_test_id("search-input").fill(f'"request {i} served"')
        page.get_by_test_id("search-input").press("Enter")
        expect_lines(page, [f"request {i} served"])
        # Both calls of a search answered: the lines, then the counts.
        expect(summary).to_contain_text("1 matching lines")
        expect(page.locator(".results")).to_have_attribute("aria-busy", "false")
    page.remove_listener("response", record)
    # More calls than the key's budget, and not one refused.
    assert len(api_calls) > DOCUMENTED_PER_MINUTE
    assert 429 not in api_calls, api_calls
    expect(page.get_by_test_id("rate-limit-notice")).to_be_hidden()

    # (The key's own 50 a minute, and the session budget's limit, are checked with a
    # held clock in tests/api/test_rate_limit_sessions.py: over a live server the
    # budget refills while the requests are sent.)


def test_an_alert_channel_is_edited_fires_links_to_its_window_and_is_removed(
    daily_site: Site, page: Page
) -> None:
    account = daily_site.account()
    with account.http() as http:
        created = http.post(
            "/v1/config/view", json={"name": "Payments failing", "query": "payment failed"}
        )
        assert created.status_code == 200, created.text
        view_id = created.json()["viewID"]

    def channels() -> list[dict[str, object]]:
        with account.http() as http:
            [view] = http.get("/v1/config/view").json()
        found: list[dict[str, object]] = view["channels"]
        return found

    with ThreadedReceiver() as receiver:
        hook = f"{receiver.base_url}/hook"
        sign_in_with_key(page, daily_site.base_url, account.service_key)
        page.get_by_test_id("nav-views").click()
        row = page.get_by_test_id("view-row")
        row.get_by_test_id("view-alerts").click()
        # Two channels: an e-mail one, and a webhook at the end of 15 minutes.
        page.get_by_test_id("alert-integration").select_option("email")
        page.get_by_test_id("alert-target").fill("ops@example.com")
        page.get_by_test_id("alert-add").click()
        expect(row).to_contain_text("1 alert channel(s)")
        row.get_by_test_id("view-alerts").click()
        page.get_by_test_id("alert-integration").last.select_option("webhook")
        page.get_by_test_id("alert-target").last.fill(hook)
        page.get_by_test_id("alert-add").click()
        expect(row).to_contain_text("2 alert channel(s)")
        assert [(c["integration"], c["immediate"]) for c in channels()] == [
            ("email", False),
            ("webhook", False),
        ]

        # Edited in place: at once, for one line.
        row.get_by_test_id("view-alerts").click()
        webhook = page.get_by_test_id("alert-channel").filter(has_text="webhook")
        webhook.get_by_test_id("alert-edit").click()
        webhook.get_by_test_id("alert-immediate").check()
        webhook.get_by_test_id("alert-limit").fill("1")
        webhook.get_by_test_id("alert-interval").select_option("30")
        webhook.get_by_test_id("alert-save").click()
        # Saved, the list is drawn again with its panel closed; opening it before then
        # would close the old one instead.
        expect(page.locator("li.alerts")).to_have_count(0)
        row.get_by_test_id("view-alerts").click()
        expect(page.get_by_test_id("alert-channel").filter(has_text="webhook")).to_contain_text(
            "at once"
        )
        [email, edited] = channels()
        assert (email["integration"], email["emails"]) == ("email", ["ops@example.com"])
        assert (edited["integration"], edited["url"]) == ("webhook", hook)
        assert (edited["immediate"], edited["triggerlimit"], edited["triggerinterval"]) == (
            True, 1, "30",
        )  # fmt: skip

        # It fires; its link opens the view over the window that fired.
        account.ingest([{"line": "payment failed: card declined", "app": "billing"}])
        posted = receiver.wait_for("/hook", timeout=120)
        if not posted:
            with account.http() as http:
                log = http.get(f"/v1/config/view/{view_id}/alerts").text
            raise AssertionError(
                f"the alert was not delivered; its delivery log: {log}\n"
                f"the server's log:\n{daily_site.log_tail()}"
            )
        delivered = posted[0].json()
    link = urlparse(delivered["url"])
    assert f"{link.scheme}://{link.netloc}" == daily_site.base_url
    assert link.path == f"/views/{view_id}"
    query = {name: value for name, [value] in parse_qs(link.query).items()}
    assert query.pop("account") == account.account_id
    window = {name: int(value) for name, value in query.items()}
    assert window["to"] - window["from"] == 30_000
    page.goto(delivered["url"])
    expect(page).to_have_url(
        f"{daily_site.base_url}/search?q=payment+failed&from={window['from']}&to={window['to']}"
    )
    expect(page.get_by_test_id("search-input")).to_have_value("payment failed")
    expect(page.get_by_test_id("time-range")).to_have_value("custom")
    expect_lines(page, ["payment failed: card declined"])

    # The delivery log shows the firing, and behind its count the line that fired it.
    page.get_by_test_id("nav-views").click()
    row.get_by_test_id("view-alerts").click()
    delivery = page.get_by_test_id("delivery-row")
    expect(delivery).to_have_count(1)
    delivery.get_by_test_id("delivery-lines").locator("summary").click()
    expect(delivery.get_by_test_id("delivery-line")).to_have_text(
        ["web-1 / billing payment failed: card declined"]
    )

    # Removed: only the webhook goes.
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_test_id("alert-channel").filter(has_text="webhook").get_by_test_id(
        "alert-remove"
    ).click()
    expect(row).to_contain_text("1 alert channel(s)")
    assert [c["integration"] for c in channels()] == ["email"]

    # A link to a view that is gone says so.
    page.goto(f"{daily_site.base_url}/views/no-such-view")
    expect(page.get_by_test_id("view-missing")).to_be_visible()


def test_the_header_names_who_and_where_and_the_favicon_is_served(
    daily_site: Site, page: Page
) -> None:
    account = daily_site.account()
    sign_in_with_key(page, daily_site.base_url, account.service_key)
    expect(page.get_by_test_id("signed-in-as")).to_have_text("service key")
    expect(page.get_by_test_id("current-account")).to_contain_text(account.account_id)
    expect(page.get_by_test_id("account-switch")).to_be_hidden()
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert icon is not None
    for path in (icon, "/favicon.ico"):
        answer = page.request.get(daily_site.base_url + path)
        assert answer.status == 200
        assert answer.headers["content-type"] == "image/svg+xml"
        assert answer.body().startswith(b"<svg")


# Each part of the header, where it was drawn: (test id or text, top, bottom, right).
HEADER_BOXES = """() => {
  const header = document.getElementById("top");
  const parts = [...header.querySelectorAll("a, .who > *:not([hidden])")];
  return {
    height: header.getBoundingClientRect().height,
    width: document.documentElement.clientWidth,
    parts: parts.map((part) => {
      const box = part.getBoundingClientRect();
      return [part.dataset.testid || part.textContent, box.top, box.bottom, box.right];
    }),
  };
}"""


def test_the_header_keeps_to_one_line_with_a_long_name_at_1280_pixels(
    daily_site: Site, page: Page
) -> None:
    """A long e-mail and an account shown as its name and id: both are cut (whole in
    their title), while every link and the sign-out button stay on one line, in view."""
    account = daily_site.account()
    email = make_person(account, name="maria.lopez-fernandez.operations")
    sign_in_as_person(page, daily_site.base_url, email)
    person = page.get_by_test_id("signed-in-as")
    expect(person).to_have_text(email)
    expect(person).to_have_attribute("title", email)
    expect(page.get_by_test_id("current-account")).to_have_attribute(
        "title", re.compile(account.account_id)
    )
    drawn = page.evaluate(HEADER_BOXES)
    assert drawn["height"] == 48, drawn
    one_line = 30  # a line of the header's text is about 20 px; two are about 40
    assert len(drawn["parts"]) >= 12, drawn  # the brand, nine links, who, sign-out
    for name, top, bottom, right in drawn["parts"]:
        assert top >= 0, (name, drawn)
        assert bottom <= drawn["height"], (name, drawn)
        assert bottom - top <= one_line, (name, drawn)
        assert right <= drawn["width"], (name, drawn)


# Every text the rate-limit notice shows, recorded as it changes (a wait can be short).
RECORD_NOTICES = """() => {
  window.noticesSeen = [];
  const notice = document.querySelector("[data-testid=rate-limit-notice]");
  new MutationObserver(() => {
    if (!notice.hidden) window.noticesSeen.push(notice.textContent);
  }).observe(notice, { attributes: true, childList: true, characterData: true, subtree: true });
}"""


def _is_tail(url: str) -> bool:
    return urlparse(url).path == "/v1/tail"


def _too_many(route: Route, *, retry_after: int) -> None:
    """The server's 429, answered in the browser."""
    route.fulfill(
        status=429,
        headers={"Retry-After": str(retry_after)},
        content_type="application/json",
        body=json.dumps(
            {"error": "Rate limit exceeded", "code": "TooManyRequests", "status": "error"}
        ),
    )


def test_a_429_is_waited_out_and_the_page_says_when_it_retries(
    daily_site: Site, page: Page
) -> None:
    """The page's side of a 429 (the server's side: tests/api/test_rate_limit*.py). The
    first sign-in request is answered 429 with ``Retry-After: 2`` in the browser (a real
    limit cannot be met at a known moment without a race against its window); the page
    says when it retries, waits, and its retry reaches the server and signs in."""
    account = daily_site.account()
    refused: list[str] = []

    def refuse_the_first(route: Route) -> None:
        if route.request.method == "POST" and not refused:
            refused.append(route.request.url)
            _too_many(route, retry_after=2)
        else:
            route.continue_()

    page.route("**/v1/auth/session", refuse_the_first)
    page.goto(daily_site.base_url + "/signin")
    page.evaluate(RECORD_NOTICES)
    page.get_by_test_id("signin-key").fill(account.service_key)
    page.get_by_test_id("signin-submit").click()
    expect(page.get_by_test_id("nav-boards")).to_be_visible()
    expect(page.get_by_test_id("rate-limit-notice")).to_be_hidden()
    assert len(refused) == 1
    seen = page.evaluate("window.noticesSeen")
    assert seen, "the page never said it was waiting"
    # When, in the zone the app shows times in (the browser's here), to the second.
    assert re.fullmatch(r"Too many requests: retrying in 2 s \(at \d\d:\d\d:\d\d\)", seen[0]), seen

    # Live tail: a stream refused with a 429 is waited out too, then opened again. (An
    # EventSource is not told why it could not open; the page asks the address once.)
    tail_refusals: list[str] = []

    def refuse_twice(route: Route) -> None:
        if len(tail_refusals) < 2:
            tail_refusals.append(route.request.resource_type)
            _too_many(route, retry_after=1)
        else:
            route.continue_()

    page.route(_is_tail, refuse_twice)
    page.evaluate(RECORD_NOTICES)
    page.get_by_test_id("live-toggle").click()
    expect(page.locator(".tail-status .state")).to_have_text("live")
    assert tail_refusals == ["eventsource", "fetch"]
    assert page.evaluate("window.noticesSeen")[0].startswith("Too many requests: retrying in 1 s")
    expect(page.get_by_test_id("rate-limit-notice")).to_be_hidden()
    account.ingest([{"line": "live after the wait", "app": "api"}])
    expect_lines(page, ["live after the wait"])

    # A stream refused because the session has ended: to the sign-in page, as any call.
    page.unroute(_is_tail)
    page.route(_is_tail, lambda route: route.fulfill(status=401, body="{}"))
    page.get_by_test_id("live-toggle").click()  # off: the search runs again
    expect(page.get_by_test_id("log-line")).to_have_count(1)
    page.get_by_test_id("live-toggle").click()
    expect(page.get_by_test_id("signin-key")).to_be_visible()
