"""Shared fixtures: real databases (an SQLite file and a PostgreSQL database, both built
by the Alembic migrations), the app in process over HTTPX, and a real server process.

Isolation between tests comes from tenancy rather than rollback: every test makes its
own enterprise (see ``factories``), so no test can see another's data, exactly as no
tenant can see another's.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from tests import property_sizes  # noqa: F401  (loads the Hypothesis profile first)
from tests.launcher import FD_PLACEHOLDER, Launcher
from tests.live import ServerProcess, live_async_client, live_client, live_request, stop_process

from tidegate.app import create_app
from tidegate.config import Settings
from tidegate.db.migrate import upgrade_database

PG_ADMIN_DSN = os.environ.get(
    "TIDEGATE_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("TIDEGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# This test session's Redis namespace (TIDEGATE_REDIS_PREFIX): two suites run side by
# side on one Redis server (CI beside a developer's run) never share a key or channel
# (sign-in failure counters, the demo-logs leader, live tail and tap control channels).
REDIS_PREFIX = f"tidegate-test-{uuid.uuid4().hex[:8]}:"
BACKENDS = ["sqlite", "postgres"]
# PostgreSQL connections of each app the suite starts (in process or as a server worker):
# a suite runs dozens of apps against one PostgreSQL at once (and CI may run beside another
# suite), so each takes a small share instead of the derived one, which assumes an app is
# alone with the server (docs/decisions.md, "PostgreSQL connections").
TEST_DB_POOL_SIZE = 6
REDIS_LIMITER_TIMEOUT_S = 10.0
# Every app and server of the suite hashes passwords under OWASP's argon2id minimum
# (19 MiB, 2 passes): the suite hashes and verifies some two hundred passwords, at
# 0.16 s of CPU each under the default profile. tests/auth/test_passwords.py holds the
# default to RFC 9106's; TIDEGATE_PASSWORD_HASH_PROFILE=rfc9106-low-memory runs the
# suite under it.
os.environ.setdefault("TIDEGATE_PASSWORD_HASH_PROFILE", "owasp-minimum")


async def _create_pg_database(template: str | None = None) -> str:
    """A new database of a unique name: empty, or a copy of ``template``."""
    name = f"tidegate_test_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        copy = f' TEMPLATE "{template}"' if template else ""
        await conn.execute(f'CREATE DATABASE "{name}"{copy}')
    finally:
        await conn.close()
    return name


async def _drop_pg_database(name: str) -> None:
    conn = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def pg_url(name: str) -> str:
    return f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"


@pytest.fixture(scope="session", params=BACKENDS)
async def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[str]:
    """A migrated, empty database of each backend, shared by the session."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "tidegate.sqlite3"
        url = f"sqlite+aiosqlite:///{path}"
        await upgrade_database(url)
        yield url
        return
    name = await _create_pg_database()
    url = pg_url(name)
    try:
        await upgrade_database(url)
        yield url
    finally:
        # The shared servers on this database stop before it is dropped.
        await asyncio.to_thread(SHARED_SERVERS.stop_using, url)
        await _drop_pg_database(name)


def make_settings(database_url: str, data_dir: Path, **overrides: Any) -> Settings:
    base = Settings(
        database_url=database_url,
        redis_url=None,
        redis_prefix=REDIS_PREFIX,
        data_dir=data_dir,
        secret_key="test-secret",
        rate_limit_per_minute=0,
        session_rate_limit_per_minute=0,
        max_body_bytes=1024 * 1024,
        bootstrap=False,
        db_pool_size=TEST_DB_POOL_SIZE,
        # No alert runner in the test process's apps: it would take SQLite's write lock
        # every second, and hold it while a test's loop waits on a live server sharing
        # the database (tests/alerts drive evaluation themselves; live servers run it).
        alerts_enabled=False,
        # No archive runner either: tests/archive drive rounds themselves.
        archive_enabled=False,
        # Nor retention sweeps (the first 1-30 s after start): tests that store lines past
        # an account's retention (segments, retention) sweep themselves, and the app's
        # own sweep deleted their lines mid-test on a loaded machine.
        retention_enabled=False,
        # Nor the lower CPU priority of a heavy account's reads (logs.fair_share): a
        # read past a quarter second of CPU (a first DuckDB read) niced the account's
        # next reads for a minute, and niced threads crawl on a loaded machine (a segments
        # test took 141 s instead of 48). tests/logs/test_fair_reads.py turns it on.
        read_heavy_cpu_s=0,
        # An open stream's credential re-checked every quarter second (3 s in service):
        # the revocation tests wait for one re-check each.
        tail_recheck_s=0.25,
        # A limit that is set holds: the limiter's Redis fails open after 0.2 s in
        # service, which a loaded machine's first script call can take, and a test
        # counting 429s then got a 200. tests/api/test_rate_limit.py's hung Redis sets
        # the service value.
        rate_limit_redis_timeout_s=REDIS_LIMITER_TIMEOUT_S,
    )
    return base.with_overrides(**overrides)


class AppClient(httpx.AsyncClient):
    """An HTTPX client bound to one running app (lifespan entered)."""

    database_url: str
    settings: Settings


async def open_client(settings: Settings) -> tuple[AppClient, Any]:
    app = create_app(settings)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    client = AppClient(transport=httpx.ASGITransport(app=app), base_url="http://tidegate.test")
    client.database_url = settings.database_url
    client.settings = settings
    return client, lifespan


@asynccontextmanager
async def running_client(settings: Settings) -> AsyncIterator[AppClient]:
    """``open_client``, closed (client and lifespan) at the end of the block."""
    http, lifespan = await open_client(settings)
    try:
        yield http
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


@pytest.fixture(scope="session")
async def client(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AppClient]:
    """The app over in-process ASGI, on each database backend; no rate limit."""
    async with running_client(make_settings(database_url, tmp_path_factory.mktemp("data"))) as http:
        yield http


class DatabaseTemplates:
    """A migrated database of each backend made once per test process, copied for each
    test that needs a store of its own (PostgreSQL: ``CREATE DATABASE ... TEMPLATE``;
    SQLite: a copy of the file): a test whose work is database-wide (a scheduler, a
    cursor over every account's lines) sees nothing of another test's."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sqlite: Path | None = None
        self.pg: str | None = None
        self.copies: list[str] = []

    async def fresh(self, backend: str) -> str:
        if backend == "sqlite":
            if self.sqlite is None:
                self.sqlite = self.root / "template.sqlite3"
                await upgrade_database(f"sqlite+aiosqlite:///{self.sqlite}")
            copy = self.root / f"{uuid.uuid4().hex[:12]}.sqlite3"
            shutil.copyfile(self.sqlite, copy)
            return f"sqlite+aiosqlite:///{copy}"
        if self.pg is None:
            self.pg = await _create_pg_database()
            await upgrade_database(pg_url(self.pg))
        name = await _create_pg_database(template=self.pg)
        self.copies.append(name)
        return pg_url(name)

    async def drop(self, url: str) -> None:
        name = url.rsplit("/", 1)[-1]
        if name in self.copies:
            self.copies.remove(name)
            await _drop_pg_database(name)

    async def close(self) -> None:
        for name in [*self.copies, *([self.pg] if self.pg else [])]:
            await _drop_pg_database(name)


@pytest.fixture(scope="session")
async def database_templates(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[DatabaseTemplates]:
    templates = DatabaseTemplates(tmp_path_factory.mktemp("templates"))
    try:
        yield templates
    finally:
        await templates.close()


@pytest.fixture(params=BACKENDS)
async def isolated_client(
    request: pytest.FixtureRequest, database_templates: DatabaseTemplates, tmp_path: Path
) -> AsyncIterator[AppClient]:
    """The app in process, as ``client``, on a database of this test's own."""
    url = await database_templates.fresh(request.param)
    http, lifespan = await open_client(make_settings(url, tmp_path / "data"))
    try:
        yield http
    finally:
        await http.aclose()
        await lifespan.__aexit__(None, None, None)
        await database_templates.drop(url)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# One launcher per test process (tests/launcher.py); TIDEGATE_TEST_LAUNCHER=0 starts every
# server as a process of its own instead.
LAUNCHER = Launcher()
USE_LAUNCHER = os.environ.get("TIDEGATE_TEST_LAUNCHER", "1") != "0"


class LiveServer:
    """``tidegate serve`` in its own process, talking real HTTP on a loopback port.

    The harness binds the port and hands the listening socket to the server
    (``serve --fd``), holding it until the server has stopped: a port picked free and
    bound later by the server could be taken in between by another test's server, and
    the start-up probe would then be answered by that one (a test on a loaded machine
    talked to a stranger's server, then to a closed port)."""

    def __init__(
        self,
        *,
        env: dict[str, str],
        workers: int = 1,
        cwd: Path,
        args: tuple[str, ...] = (),
        launched: bool = USE_LAUNCHER,
    ) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(1024)
        self.port = self.socket.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **env}
        self.workers = workers
        self.args = args
        self.cwd = cwd
        # Forked by the test process's launcher (tests/launcher.py), or a process of its own.
        self.launched = launched
        self.process: ServerProcess | None = None
        self.log = cwd / "server.log"

    def start(self, *, timeout: float = 90.0) -> None:
        args = [
            "serve",
            "--host", "127.0.0.1", "--port", str(self.port), "--workers", str(self.workers),
            "--fd", FD_PLACEHOLDER, *self.args,
        ]  # fmt: skip
        if self.launched:
            self.process = LAUNCHER.spawn(
                args, env=self.env, cwd=str(self.cwd), log=str(self.log), fd=self.socket.fileno()
            )
        else:
            fd = str(self.socket.fileno())
            with self.log.open("ab") as log:
                self.process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tidegate",
                        *(fd if a == FD_PLACEHOLDER else a for a in args),
                    ],
                    env=self.env,
                    cwd=self.cwd,
                    stdout=log,
                    stderr=log,
                    pass_fds=(self.socket.fileno(),),
                )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"server exited early:\n{self.log.read_text()}")
            try:
                # The port is listening from the start (the harness's socket), so a probe
                # waits in its queue until the server answers; a short one, repeated, so
                # that a server that died is seen by the check above.
                probe = max(1.0, min(3.0, deadline - time.monotonic()))
                if (
                    live_request("GET", self.base_url + "/healthz", timeout=probe).status_code
                    == 200
                ):
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not start:\n{self.log.read_text()}")

    def url(self, path: str) -> str:
        return self.base_url + path

    def client(self, **kwargs: Any) -> httpx.Client:
        """A client bound to this server, with the live timeout (``tests.live``)."""
        return live_client(self.base_url, **kwargs)

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """An async client bound to this server, with the live timeout."""
        return live_async_client(self.base_url, **kwargs)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request to ``path`` on this server, with the live timeout."""
        return live_request(method, self.base_url + path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def stop(self) -> None:
        stop_process(self.process)
        # The port closes with the server: nothing connects to a stopped one.
        self.socket.close()

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush. The harness's copy of the listening socket
        closes with it, so a client connecting after the kill is refused at once
        (held open, its connection would wait in the queue for its whole timeout)."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        self.socket.close()


class LiveServers:
    """The servers one test started. Every fixture that makes something a server uses
    (a database) depends on this registry and stops the servers before tearing that
    down, so a database is never dropped under a running server, whatever order the
    test names its fixtures in."""

    def __init__(self) -> None:
        self.servers: list[LiveServer] = []

    def add(self, server: LiveServer) -> None:
        self.servers.append(server)

    def stop_all(self) -> None:
        for server in self.servers:
            server.stop()


@pytest.fixture
def live_servers() -> Iterator[LiveServers]:
    registry = LiveServers()
    try:
        yield registry
    finally:
        registry.stop_all()


def live_base_env(workdir: Path) -> dict[str, str]:
    """What every live server of the tests is started with, before a test's own
    environment (which may override any of it)."""
    return {
        "TIDEGATE_DATA_DIR": str(workdir / "var"),
        "TIDEGATE_SECRET_KEY": "test-secret",
        "TIDEGATE_DB_POOL_SIZE": str(TEST_DB_POOL_SIZE),
        "TIDEGATE_REDIS_PREFIX": REDIS_PREFIX,
        # As make_settings: no lower priority for heavy accounts' reads.
        "TIDEGATE_READ_HEAVY_CPU_S": "0",
        # As make_settings: no retention sweeps. Most live servers share the session's
        # database with in-process tests that store lines received days ago, and whose
        # compactor empties those days' partitions; a server's sweep dropped such an
        # empty partition while the test process still knew it as existing
        # (store._known_partitions), and the test's next write of that day failed ("no
        # partition of relation log_lines found for row"). Production writes only today's
        # and tomorrow's partitions, which retention never drops.
        "TIDEGATE_RETENTION_ENABLED": "0",
        # As make_settings: a limiter's Redis does not fail open under load.
        "TIDEGATE_RATE_LIMIT_REDIS_TIMEOUT_S": str(REDIS_LIMITER_TIMEOUT_S),
    }


@pytest.fixture
def live_server_factory(tmp_path: Path, live_servers: LiveServers) -> Iterator[Any]:
    """Start real servers: ``live_server_factory(env={...}, workers=N, args=(...))``."""
    started: list[LiveServer] = []

    def start(
        *, env: dict[str, str] | None = None, workers: int = 1, args: tuple[str, ...] = ()
    ) -> LiveServer:
        workdir = tmp_path / f"server{len(started)}"
        workdir.mkdir()
        server = LiveServer(
            env={**live_base_env(workdir), **(env or {})}, workers=workers, cwd=workdir, args=args
        )
        started.append(server)
        live_servers.add(server)
        server.start()
        return server

    yield start
    for server in started:
        server.stop()


class SharedServers:
    """Servers started once per test process, one for each distinct environment, for the
    tests that only need a server to talk to: each such test makes its own account, so
    they share a server as tenants share one. A test that stops, restarts or reads the
    log of its server starts its own with ``live_server_factory``."""

    def __init__(self) -> None:
        self.servers: dict[tuple[tuple[str, str], ...], LiveServer] = {}

    def get(self, env: dict[str, str], workdir: Callable[[], Path]) -> LiveServer:
        key = tuple(sorted(env.items()))
        server = self.servers.get(key)
        if server is None or (server.process is not None and server.process.poll() is not None):
            cwd = workdir()
            server = LiveServer(env={**live_base_env(cwd), **env}, cwd=cwd)
            self.servers[key] = server
            server.start()
        return server

    def stop_using(self, database_url: str) -> None:
        for key, server in list(self.servers.items()):
            if dict(key).get("TIDEGATE_DATABASE_URL") == database_url:
                server.stop()
                del self.servers[key]

    def stop_all(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers.clear()


SHARED_SERVERS = SharedServers()


@pytest.fixture(scope="session")
def shared_live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``shared_live_server(env={...})``: a running server with that environment (one
    worker), started by the first test that asks for it in this test process and stopped
    at the end of the session (or before its database is dropped)."""

    def get(*, env: dict[str, str]) -> LiveServer:
        return SHARED_SERVERS.get(env, lambda: tmp_path_factory.mktemp("shared-server"))

    try:
        yield get
    finally:
        SHARED_SERVERS.stop_all()


@pytest.fixture
async def fresh_pg_url(live_servers: LiveServers) -> AsyncIterator[str]:
    """An empty PostgreSQL database of its own (not migrated), dropped afterwards: after
    the test's live servers stopped (they may be using it)."""
    name = await _create_pg_database()
    try:
        yield pg_url(name)
    finally:
        await asyncio.to_thread(live_servers.stop_all)
        await _drop_pg_database(name)


# The fixtures that start a real server process (tests/web marks its own).
LIVE_FIXTURES = {"live_server_factory", "shared_live_server", "fuzz_target"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that start a real server process are marked ``live`` (``make test-fast``
    leaves them out; ``make test`` runs everything). First, before ``-m`` deselects:
    marked after it, as this hook once did, they all ran in ``make test-fast``."""
    for item in items:
        if LIVE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.live)


class _LiveTestsLast:
    """What is done once every conftest has marked its live tests (tests/web marks its
    own)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """The order in which the workers get the tests."""
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        items[:] = _live_tests_first(items, workers)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_LiveTestsLast(), "tidegate-live-tests-last")


def _live_tests_first(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """The order in which xdist hands the tests out (``--dist worksteal``: each worker
    starts on one contiguous share, idle ones take half of a busy one's queue): every
    share begins with its part of the live tests, which are few but the longest (a
    minute for one of them), so none is left to start last while the others idle.
    Within each kind the order is pytest's, which keeps a module's tests together."""
    live = [item for item in items if item.get_closest_marker("live")]
    rest = [item for item in items if not item.get_closest_marker("live")]
    ordered: list[pytest.Item] = []
    for share in range(workers):
        ordered += live[share * len(live) // workers : (share + 1) * len(live) // workers]
        ordered += rest[share * len(rest) // workers : (share + 1) * len(rest) // workers]
    return ordered


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed test that started servers shows the end of each server's log in its
    report: the test's temporary directory, where the log is, is gone by the time a CI
    failure is read (pytest keeps the last three runs')."""
    report = yield
    if report.when == "call" and report.failed:
        servers = getattr(item, "funcargs", {}).get("live_servers")
        for server in servers.servers if isinstance(servers, LiveServers) else ():
            if server.log.exists():
                lines = server.log.read_text(errors="replace").splitlines()[-80:]
                report.sections.append((f"end of {server.log}", "\n".join(lines)))
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The launcher goes with the test process (and stops any server left running)."""
    LAUNCHER.close()
