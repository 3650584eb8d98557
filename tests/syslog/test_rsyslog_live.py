"""Debian's rsyslog forwarding to a real ``tidegate serve`` with the platform's template
(``[logdna@48950 key="..."]``), over plain TCP on each backend and over TLS (rsyslog's
gtls driver, a certificate made in the test); the lines are then found by export.

rsyslog runs as a plain process with a configuration, work directory and pid file of
its own (``rsyslogd -n -f <conf> -i <pidfile>``), never as the system service; lines
reach it through its own TCP input, written by util-linux ``logger``. ``.ci/run``
installs ``rsyslog`` and ``rsyslog-gnutls``; without them these tests fail, loudly.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import free_port
from tests.factories import make_tenant
from tests.live import live_get, live_post, stop_process
from tests.syslog.certs import self_signed
from tests.syslog.helpers import rfc5424, send

RSYSLOGD = "/usr/sbin/rsyslogd"
WAIT_S = 60.0

# The platform's rsyslog template (its TCP+TLS setup), with the key filled in.
TEMPLATE = (
    'template(name="LogDNAFormat" type="string" string="<%PRI%>%protocol-version% '
    "%timegenerated:::date-rfc3339% %HOSTNAME% %app-name% %procid% %msgid% "
    '[logdna@48950 key=\\"{key}\\"] %msg%")'
)


def _config(*, workdir: Path, listen: int, target: int, key: str, ca: Path | None) -> str:
    tls = f'global(DefaultNetstreamDriverCAFile="{ca}")\n' if ca is not None else ""
    forward = (
        'StreamDriver="gtls" StreamDriverMode="1" StreamDriverAuthMode="x509/name" '
        'StreamDriverPermittedPeers="localhost"'
        if ca is not None
        else ""
    )
    return "\n".join(
        [
            f'global(workDirectory="{workdir}")',
            tls,
            'module(load="imtcp")',
            f'input(type="imtcp" address="127.0.0.1" port="{listen}" ruleset="forward")',
            TEMPLATE.replace("{key}", key),
            'ruleset(name="forward") {',
            f'  action(type="omfwd" target="127.0.0.1" port="{target}" protocol="tcp" '
            f'template="LogDNAFormat" action.resumeInterval="1" {forward})',
            "}",
            "",
        ]
    )


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"rsyslogd exited:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"rsyslogd did not listen:\n{log.read_text()}")


class Rsyslog:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *, target: int, key: str, ca: Path | None) -> None:
        workdir = self.directory / "work"
        workdir.mkdir()
        conf = self.directory / "rsyslog.conf"
        conf.write_text(_config(workdir=workdir, listen=self.port, target=target, key=key, ca=ca))
        log = self.directory / "rsyslogd.log"
        pidfile = self.directory / "rsyslogd.pid"
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [RSYSLOGD, "-n", "-f", str(conf), "-i", str(pidfile)], stdout=out, stderr=out
            )
        _wait_for_port(self.port, self.process, log)

    def logger(self, *args: str) -> None:
        subprocess.run(
            ["logger", "--tcp", "-n", "127.0.0.1", "-P", str(self.port), *args],
            check=True,
            timeout=30,
        )

    def stop(self) -> None:
        stop_process(self.process)


@pytest.fixture
def rsyslog(tmp_path: Path) -> Iterator[Rsyslog]:
    if not Path(RSYSLOGD).exists() or shutil.which("logger") is None:
        pytest.fail("rsyslogd or logger is missing: apt-get install rsyslog (see .ci/run)")
    daemon = Rsyslog(tmp_path / "rsyslog")
    daemon.directory.mkdir()
    try:
        yield daemon
    finally:
        daemon.stop()


def _exported(base_url: str, headers: dict[str, str], count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + WAIT_S
    now = int(time.time())
    while True:
        response = live_get(
            f"{base_url}/v2/export",
            params={"from": now - 86400, "to": now + 86400},
            headers=headers,
        )
        assert response.status_code == 200, response.text
        lines: list[dict[str, Any]] = response.json()["lines"]
        if len(lines) >= count or time.monotonic() > deadline:
            assert len(lines) == count, lines
            return lines
        time.sleep(0.2)


async def _syslog_account(base_url: str, database_url: str) -> tuple[dict[str, str], str]:
    tenant = await make_tenant(database_url)
    account = live_post(
        f"{base_url}/v3/enterprise/account",
        json={
            "company": "Acme",
            "owneremail": f"o-{uuid.uuid4().hex[:6]}@example.com",
            "enable_syslog": True,
        },
        headers=tenant.headers,
    ).json()["data"]
    headers = tenant.as_account(account["account_id"])
    response = live_post(
        f"{base_url}/v1/config/keys", params={"type": "ingestion"}, headers=headers
    )
    assert response.status_code == 200, response.text
    return headers, str(response.json()["key"])


def _server_env(database_url: str, port: int) -> dict[str, str]:
    return {
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        "TIDEGATE_SYSLOG_PORT": str(port),
    }


@pytest.fixture(params=["sqlite", "postgres"])
def server_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database of the test's own (the server migrates it): nothing else writes to it."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'syslog.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


async def test_rsyslog_forwards_over_tcp(
    server_db: str, live_server_factory: Any, rsyslog: Rsyslog
) -> None:
    database_url = server_db
    port = free_port()
    # Two workers, both listening on the port (SO_REUSEPORT; docs/syslog.md).
    server = live_server_factory(env=_server_env(database_url, port), workers=2)
    headers, key = await _syslog_account(server.base_url, database_url)
    await asyncio.to_thread(rsyslog.start, target=port, key=key, ca=None)
    rsyslog.logger("--rfc3164", "-t", "backup", "-p", "cron.info", "nightly backup done")
    rsyslog.logger("--rfc5424", "-t", "payments", "-p", "local0.err", "card declined id=42")
    # Connections of their own, which the kernel spreads over both workers.
    for number in range(8):
        await send(port, (rfc5424(key, f"direct {number}", app="direct") + "\n").encode())
    lines = _exported(server.base_url, headers, 10)
    assert sorted(line["_line"] for line in lines if line["_app"] == "direct") == [
        f"direct {number}" for number in range(8)
    ]
    by_app = {line["_app"]: line for line in lines if line["_app"] != "direct"}
    assert set(by_app) == {"backup", "payments"}
    assert by_app["backup"]["_line"] == "nightly backup done"
    assert by_app["backup"]["level"] == "INFO"
    assert by_app["backup"]["_meta"]["facility"] == "cron"
    assert by_app["payments"]["_line"] == "card declined id=42"
    assert by_app["payments"]["level"] == "ERROR"
    assert by_app["payments"]["_host"] == socket.gethostname()
    assert not any(key in repr(line) for line in lines)


async def test_rsyslog_forwards_over_tls(
    tmp_path: Path, live_server_factory: Any, rsyslog: Rsyslog
) -> None:
    if not any(Path("/usr/lib").glob("*/rsyslog/lmnsd_gtls.so")):
        pytest.fail("rsyslog's gtls driver is missing: apt-get install rsyslog-gnutls")
    cert, key_file = self_signed(tmp_path)
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'tls.sqlite3'}"
    port = free_port()
    server = live_server_factory(
        env={
            **_server_env(database_url, port),
            "TIDEGATE_SYSLOG_TLS_CERT": str(cert),
            "TIDEGATE_SYSLOG_TLS_KEY": str(key_file),
        }
    )
    headers, key = await _syslog_account(server.base_url, database_url)
    await asyncio.to_thread(rsyslog.start, target=port, key=key, ca=cert)
    rsyslog.logger("--rfc5424", "-t", "vault", "-p", "auth.warning", "token renewed over tls")
    lines = _exported(server.base_url, headers, 1)
    assert lines[0]["_line"] == "token renewed over tls"
    assert (lines[0]["_app"], lines[0]["level"]) == ("vault", "WARNING")
