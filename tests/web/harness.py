"""Driving the web app in a real browser: Debian's Chromium through Playwright, against a
real ``tidegate serve``; tenants made through the public API only.

Shared by the browser tests and bench/bench_web_first_line.py."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
from playwright.sync_api import Browser, Locator, Page, Playwright, expect, sync_playwright
from tests.live import live_client

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[tuple[Playwright, Browser]]:
    """Debian's Chromium (never a downloaded one). Missing is an error, not a skip:
    `.ci/run` installs it."""
    if not CHROMIUM.exists():
        raise RuntimeError(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield playwright, browser
        finally:
            browser.close()


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class Account:
    base_url: str
    account_id: str
    service_key: str
    ingestion_key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Token {self.service_key}"}

    def http(self) -> httpx.Client:
        return live_client(self.base_url, headers=self.headers)

    def ingest(self, lines: Sequence[dict[str, Any]], *, host: str = "web-1") -> None:
        with live_client(self.base_url) as http:
            response = http.post(
                "/logs/ingest",
                params={"hostname": host, "now": now_ms()},
                headers={"apikey": self.ingestion_key},
                json={"lines": list(lines)},
            )
            assert response.status_code == 200, response.text


def enterprise_key(data_dir: Path) -> str:
    """The key of the enterprise a fresh server creates on first start."""
    return (data_dir / "enterprise-key").read_text().strip()


def make_account(base_url: str, enterprise_token: str) -> Account:
    """A child account with a service key and an ingestion key, through the public API."""
    with live_client(base_url) as http:
        headers = {"Authorization": f"Token {enterprise_token}"}
        created = http.post(
            "/v3/enterprise/account",
            headers=headers,
            json={"company": "Acme", "owneremail": f"owner-{uuid.uuid4().hex[:8]}@example.com"},
        )
        assert created.status_code == 201, created.text
        account_id = created.json()["data"]["account_id"]
        delegated = {**headers, "x-delegate-account-id": account_id}
        keys = {}
        for kind in ("service", "ingestion"):
            key = http.post("/v1/config/keys", params={"type": kind}, headers=delegated, json={})
            assert key.status_code in (200, 201), key.text
            keys[kind] = key.json()["key"]
    return Account(base_url, account_id, keys["service"], keys["ingestion"])


PASSWORD = "a long enough password"  # every person's the tests make


def make_person(account: Account, *, name: str = "person") -> str:
    """A readonly member of the account with a password (invited, invitation accepted
    through the API); their e-mail (``name``, a dash and a unique part, at example.com)."""
    email = f"{name}-{uuid.uuid4().hex[:8]}@example.com"
    with account.http() as http:
        invited = http.post(
            "/v1/config/members", json={"email": email, "role": "readonly", "groups": []}
        )
        assert invited.status_code == 200, invited.text
        token = parse_qs(urlparse(invited.json()["invitation"]["link"]).query)["token"][0]
        accepted = http.post(
            "/v1/auth/invitation/accept", json={"token": token, "password": PASSWORD}
        )
        assert accepted.status_code == 200, accepted.text
    return email


def sign_in_as_person(page: Page, base_url: str, email: str, *, next_path: str = "") -> None:
    """Through the sign-in page, with the e-mail and password of ``make_person``."""
    page.goto(f"{base_url}/signin" + (f"?next={next_path}" if next_path else ""))
    page.get_by_test_id("signin-email").fill(email)
    page.get_by_test_id("signin-password").fill(PASSWORD)
    page.get_by_test_id("signin-submit").click()
    expect(page.get_by_test_id("nav-boards")).to_be_visible()


def sign_in_with_key(page: Page, base_url: str, key: str, *, next_path: str = "") -> None:
    """Through the sign-in page, as a person pasting a key."""
    target = f"{base_url}/signin" + (f"?next={next_path}" if next_path else "")
    page.goto(target)
    page.get_by_test_id("signin-key").fill(key)
    page.get_by_test_id("signin-submit").click()
    expect(page.get_by_test_id("nav-boards")).to_be_visible()


def expect_lines(page: Page | Locator, lines: Sequence[str]) -> None:
    """Wait until the shown lines (of the page, or of one part of it) are ``lines``, top
    to bottom (a list read at once may still be the one a new search is replacing)."""
    expect(page.locator("[data-testid=log-line] .text")).to_have_text(list(lines))


def log_lines(page: Page | Locator) -> list[str]:
    """The text of every shown line (of the page, or of one part of it), top to bottom."""
    return [text.strip() for text in page.locator("[data-testid=log-line] .text").all_inner_texts()]
