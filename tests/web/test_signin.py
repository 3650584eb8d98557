"""Signing in (a key, an enterprise key and an account, e-mail and password from an
invitation), signing out, and a readonly member who sees no edit controls and whose
edits the server refuses anyway."""

from __future__ import annotations

from urllib.parse import quote, urlparse

from playwright.sync_api import Page, expect
from tests.live import live_client
from tests.web.conftest import Site
from tests.web.harness import Account, expect_lines, now_ms, sign_in_with_key


def _invite_on_the_members_page(
    page: Page, site: Site, owner: Account, email: str, role: str
) -> str:
    """The owner invites through the members page; the path of the link it shows."""
    sign_in_with_key(page, site.base_url, owner.service_key)
    page.get_by_test_id("nav-members").click()
    page.get_by_test_id("member-email").fill(email)
    page.get_by_test_id("member-role").select_option(role)
    page.get_by_test_id("member-invite").click()
    link = urlparse(page.get_by_test_id("member-invitation-link").inner_text().strip())
    row = page.get_by_test_id("member-row").filter(has_text=email)
    expect(row).to_contain_text("invited, no password yet")
    expect(row.get_by_label("Role")).to_have_value(role)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_test_id("signin-key")).to_be_visible()
    return f"{link.path}?{link.query}"


def _accept_and_sign_in(page: Page, site: Site, invitation: str, email: str) -> None:
    page.goto(site.base_url + invitation)
    page.get_by_test_id("new-password").fill("a long readonly password")
    page.get_by_test_id("new-password-again").fill("a long readonly password")
    page.get_by_test_id("new-password-submit").click()
    expect(page.get_by_role("status")).to_contain_text("Your password is set")
    page.get_by_test_id("signin-email").fill(email)
    page.get_by_test_id("signin-password").fill("a long readonly password")
    page.get_by_test_id("signin-submit").click()
    expect(page.get_by_test_id("search-input")).to_be_visible()


def test_a_wrong_key_is_refused_and_a_good_one_opens_the_page_asked_for(
    site: Site, page: Page
) -> None:
    account = site.account()
    account.ingest([{"line": "hello from the account"}])
    page.goto(site.base_url + "/rules")
    expect(page).to_have_url(f"{site.base_url}/signin?next=%2Frules")
    page.get_by_test_id("signin-key").fill("sta_" + "0" * 40)
    page.get_by_test_id("signin-submit").click()
    expect(page.get_by_role("alert")).to_be_visible()
    assert page.context.cookies() == []

    page.get_by_test_id("signin-key").fill(account.service_key)
    page.get_by_test_id("signin-submit").click()
    expect(page).to_have_url(f"{site.base_url}/rules")
    cookies = {cookie["name"]: cookie for cookie in page.context.cookies()}
    assert cookies["tidegate_session"]["httpOnly"] is True
    assert cookies["tidegate_session"]["sameSite"] == "Lax"
    assert cookies["tidegate_csrf"]["httpOnly"] is False
    # The page keeps no key: nothing in its storage.
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    assert account.service_key not in page.content()

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_test_id("signin-key")).to_be_visible()
    old = {"tidegate_session": cookies["tidegate_session"]["value"]}
    with live_client(site.base_url, cookies=old) as http:
        assert http.get("/v1/auth/session").status_code == 401
    page.goto(site.base_url + "/search")
    expect(page).to_have_url(f"{site.base_url}/signin?next=%2Fsearch")


def test_a_sign_out_the_server_refuses_says_so_and_keeps_the_session(
    site: Site, page: Page
) -> None:
    """Without its CSRF cookie the server refuses the sign-out (403): the page must not
    show the sign-in form over a session that is still open."""
    account = site.account()
    sign_in_with_key(page, site.base_url, account.service_key)
    live = {c["name"]: c["value"] for c in page.context.cookies()}["tidegate_session"]
    page.context.clear_cookies(name="tidegate_csrf")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_test_id("sign-out-failed")).to_contain_text("still signed in")
    expect(page.get_by_test_id("signin-key")).to_have_count(0)
    with live_client(site.base_url, cookies={"tidegate_session": live}) as http:
        assert http.get("/v1/auth/session").status_code == 200


def test_an_enterprise_key_picks_one_of_its_accounts(site: Site, page: Page) -> None:
    started = now_ms()
    first = site.account()
    second = site.account()
    first.ingest([{"line": "in the first account"}])
    second.ingest([{"line": "in the second account"}])
    page.goto(site.base_url + "/signin")
    page.get_by_test_id("signin-key").fill(site.enterprise_token)
    page.get_by_test_id("signin-submit").click()
    choice = page.get_by_test_id("signin-account")
    expect(choice).to_be_visible()
    choice.select_option(second.account_id)
    page.get_by_test_id("signin-submit").click()
    expect(page.get_by_test_id("log-line")).to_have_count(1)
    expect_lines(page, ["in the second account"])
    # The header says who signed in, and switches accounts.
    expect(page.get_by_test_id("signed-in-as")).to_have_text("enterprise key")
    expect(page.get_by_test_id("account-switch")).to_have_value(second.account_id)
    expect(page.get_by_test_id("current-account")).to_be_hidden()
    page.locator("#account-switch").select_option(first.account_id)
    expect(page.get_by_test_id("log-line").first).to_contain_text("in the first account")
    expect(page.get_by_test_id("log-line")).to_have_count(1)

    # An alert's link names its view's account (alerts.notification.app_link): opened
    # while the session acts in another, the app switches before opening the view.
    def view_link(account: Account) -> tuple[str, str]:
        with account.http() as http:
            created = http.post("/v1/config/view", json={"name": "Ours", "query": "account"})
            assert created.status_code == 200, created.text
        window = f"from={started - 60_000}&to={now_ms() + 60_000}"
        view = quote(created.json()["viewID"], safe="")
        return (
            f"{site.base_url}/views/{view}?account={account.account_id}&{window}",
            f"{site.base_url}/search?q=account&{window}",
        )

    link, search = view_link(second)
    page.goto(link)
    expect(page).to_have_url(search)
    expect_lines(page, ["in the second account"])
    expect(page.get_by_test_id("account-switch")).to_have_value(second.account_id)

    # Signed out, the same kind of link: after the key, no account to pick; its own.
    link, search = view_link(first)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_test_id("signin-key")).to_be_visible()
    page.goto(link)
    page.get_by_test_id("signin-key").fill(site.enterprise_token)
    page.get_by_test_id("signin-submit").click()
    expect(page).to_have_url(search)
    expect_lines(page, ["in the first account"])
    expect(page.get_by_test_id("account-switch")).to_have_value(first.account_id)


def test_a_readonly_member_sees_no_edit_controls_and_the_server_refuses_edits(
    site: Site, page: Page
) -> None:
    owner = site.account()
    owner.ingest([{"line": "visible to readers", "app": "api"}])
    with owner.http() as http:
        board = http.post(
            "/v1/config/board",
            json={
                "title": "Ops",
                "graphs": [
                    {
                        "id": "g1",
                        "kind": "count",
                        "title": "All",
                        "query": "",
                        "width": 1,
                        "height": "m",
                    }
                ],
            },
        )
        assert board.status_code == 200, board.text
        rule = http.post(
            "/v1/config/ingestion/exclusions",
            json={"title": "noise", "query": "noise", "active": True},
        )
        assert rule.status_code == 200, rule.text
    email = "reader@example.com"
    _accept_and_sign_in(
        page, site, _invite_on_the_members_page(page, site, owner, email, "readonly"), email
    )
    expect(page.locator("#role")).to_have_text("readonly")
    # The header names the person and the account they are in.
    expect(page.get_by_test_id("signed-in-as")).to_have_text(email)
    expect(page.get_by_test_id("current-account")).to_contain_text(owner.account_id)
    expect(page.get_by_test_id("log-line")).to_have_count(1)
    expect(page.get_by_test_id("live-toggle")).to_be_visible()
    expect(page.get_by_test_id("save-view")).to_have_count(0)

    page.get_by_test_id("nav-boards").click()
    page.get_by_role("link", name="Ops").click()
    expect(page.get_by_test_id("board-graph")).to_have_count(1)
    for hidden in ("board-title", "board-create", "graph-add"):
        expect(page.get_by_test_id(hidden)).to_have_count(0)
    expect(page.locator(".graph-controls, button.edit")).to_have_count(0)

    page.get_by_test_id("nav-rules").click()
    expect(page.get_by_test_id("rule-row")).to_have_count(1)
    expect(page.get_by_test_id("rule-new")).to_have_count(0)
    expect(page.get_by_test_id("rule-toggle")).to_have_count(0)
    expect(page.locator("button.edit")).to_have_count(0)

    page.get_by_test_id("nav-members").click()
    expect(page.get_by_test_id("member-row")).to_have_count(2)
    expect(page.get_by_test_id("member-invite")).to_have_count(0)
    expect(page.locator("button.edit, [data-testid=member-row] select")).to_have_count(0)

    # Keys act as the account: a readonly member may not even list them.
    page.get_by_test_id("nav-keys").click()
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.get_by_test_id("key-create")).to_have_count(0)
    expect(page.get_by_test_id("key-delete")).to_have_count(0)

    # The server refuses the edits anyway, with the session's own cookie and CSRF token.
    statuses = page.evaluate(
        """async () => {
            const csrf = document.cookie.split('; ').find((c) => c.startsWith('tidegate_csrf=')).split('=')[1];
            const send = (method, path, body) => fetch(path, {method, credentials: 'same-origin',
                headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf},
                body: JSON.stringify(body)}).then((r) => r.status);
            return [
                await send('POST', '/v1/config/board', {title: 'mine'}),
                await send('POST', '/v1/config/ingestion/exclusions', {title: 't', query: 'x'}),
                await send('POST', '/v1/config/keys?type=service', {}),
            ];
        }"""
    )
    assert statuses == [403, 403, 403]
    with owner.http() as http:
        assert [b["title"] for b in http.get("/v1/config/board").json()] == ["Ops"]


def test_back_after_another_signs_in_never_shows_the_first_ones_lines(
    site: Site, page: Page
) -> None:
    """The search page is kept for Back (static/kept.js), but never across a change of
    who is signed in: the next person going Back gets a search of their own."""
    first = site.account()
    second = site.account()
    first.ingest([{"line": "the first one's line"}])
    second.ingest([{"line": "the second one's line"}])
    sign_in_with_key(page, site.base_url, first.service_key)
    expect_lines(page, ["the first one's line"])
    expect(page.locator(".results")).to_have_attribute("aria-busy", "false")  # finished
    page.get_by_test_id("nav-views").click()  # the search is kept for Back
    expect(page.get_by_test_id("log-line")).to_have_count(0)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_test_id("signin-key")).to_be_visible()
    # Another person at the same browser goes Back: signs in there, to the views page.
    page.go_back()
    expect(page).to_have_url(f"{site.base_url}/signin?next=%2Fviews")
    page.get_by_test_id("signin-key").fill(second.service_key)
    page.get_by_test_id("signin-submit").click()
    expect(page).to_have_url(f"{site.base_url}/views")
    page.go_back()  # the first one's search, as it was left
    expect(page).to_have_url(f"{site.base_url}/search")
    expect_lines(page, ["the second one's line"])
