"""Browser tests of the web app: a real server (SQLite), a real Chromium. Every test that
uses a server process is marked ``live`` (test_shell.py's in-process tests are not)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect
from tests.conftest import TEST_DB_POOL_SIZE, LiveServer
from tests.web.harness import Account, chromium, enterprise_key, make_account

# A page waits for the API; on a two-core CI machine running the suite in parallel an
# answer can take longer than Playwright's default of 5 s (seen: a board's creation,
# past 20 s with two suites side by side). A bound, not a guess at the speed.
expect.set_options(timeout=60_000)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as (_playwright, found):
        yield found


@dataclass
class Site:
    base_url: str
    enterprise_token: str
    log: Path
    data_dir: Path  # TIDEGATE_DATA_DIR: its SQLite database is data_dir / "tidegate.sqlite3"

    def log_tail(self, lines: int = 60) -> str:
        """The end of the server's log, for a failure's message."""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def account(self) -> Account:
        return make_account(self.base_url, self.enterprise_token)


@contextmanager
def serve_site(workdir: Path, env: dict[str, str]) -> Iterator[Site]:
    """A real server (SQLite under ``workdir``) with ``env`` besides the tests' own
    settings; ``TIDEGATE_PUBLIC_URL`` is its own address, so links it makes lead back."""
    server = LiveServer(
        env={
            "TIDEGATE_DATA_DIR": str(workdir / "var"),
            "TIDEGATE_SECRET_KEY": "test-secret",
            "TIDEGATE_DB_POOL_SIZE": str(TEST_DB_POOL_SIZE),
            **env,
        },
        cwd=workdir,
    )
    server.env["TIDEGATE_PUBLIC_URL"] = server.base_url
    server.start(timeout=120)  # a loaded CI machine can take a while to import and migrate
    try:
        yield Site(server.base_url, enterprise_key(workdir / "var"), server.log, workdir / "var")
    finally:
        server.stop()


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """One real server per test process (starting one takes seconds on a busy machine);
    tests keep apart by tenancy: each makes its own account. (The browser stays one per
    module: Playwright's sync API marks its loop as the thread's running loop between
    calls, which the async tests of other modules could not run beside.)"""
    with serve_site(
        tmp_path_factory.mktemp("web-server"),
        # Template match counts written within a quarter second (10 s in service), and
        # pipeline usage (the editor's event counts per node) within half a second (5 s).
        {
            "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
            "TIDEGATE_TEMPLATE_COUNTS_FLUSH_S": "0.25",
            "TIDEGATE_PIPELINE_USAGE_FLUSH_S": "0.5",
        },
    ) as found:
        yield found


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(60_000)
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
    """A page whose script must not throw: an uncaught error fails the test."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    assert not errors, errors


# The fixtures here that start a server process (test_daily.py has its own server).
SERVER_FIXTURES = {"site", "daily_site"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.live)
