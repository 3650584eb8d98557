"""OpenStack Swift itself (PyPI ``swift``, pinned in the lock) on 127.0.0.1, for the
``swift`` archive tests: a one-node cluster as Swift's "all in one" guide builds it, in
a temporary folder (free ports): rings of one device for the account, container and
object servers (``swift-ring-builder``), those three servers and the proxy, whose
pipeline has TempAuth (Swift's v1 authentication; tokens kept in memcached, Debian's
``memcached`` started here) and the Static Large Object middleware. No Keystone: the
proxy checks TempAuth tokens, not Keystone's (docs/archiving.md)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from tests.conftest import free_port
from tests.live import live_get, serving, until

BIN = Path(sys.executable).parent
PROJECT = "logs"
USER = "archiver"
PASSWORD = "s3cret-tempauth"


@dataclass(frozen=True)
class SwiftServer:
    endpoint: str
    """``http://127.0.0.1:<proxy port>``"""
    memcached_port: int

    def expire_tokens(self) -> None:
        """Every TempAuth token given so far forgotten (memcached's ``flush_all``): the
        proxy answers 401 to them, as to expired ones."""
        with socket.create_connection(("127.0.0.1", self.memcached_port), timeout=30) as sock:
            sock.sendall(b"flush_all\r\n")
            assert sock.recv(64).startswith(b"OK"), "memcached did not flush"

    @property
    def authurl(self) -> str:
        return f"{self.endpoint}/auth/v1.0"

    def _session(self) -> tuple[str, str]:
        answer = live_get(
            self.authurl, headers={"X-Auth-User": f"{PROJECT}:{USER}", "X-Auth-Key": PASSWORD}
        )
        assert answer.status_code == 200, answer.text
        return answer.headers["x-storage-url"], answer.headers["x-auth-token"]

    def read(self, container: str, name: str) -> tuple[bytes, dict[str, str]]:
        """An object's bytes (a large object's: joined by Swift) and its headers, read
        with a token of its own (no tidegate code)."""
        storage, token = self._session()
        got = live_get(f"{storage}/{container}/{name}", headers={"X-Auth-Token": token})
        assert got.status_code == 200, got.text
        return got.content, dict(got.headers)

    def manifest(self, container: str, name: str) -> list[dict[str, object]]:
        """A Static Large Object's manifest as Swift stored it."""
        storage, token = self._session()
        got = live_get(
            f"{storage}/{container}/{name}",
            params={"multipart-manifest": "get"},
            headers={"X-Auth-Token": token},
        )
        assert got.status_code == 200, got.text
        value: list[dict[str, object]] = got.json()
        return value

    def names(self, container: str) -> list[str]:
        storage, token = self._session()
        got = live_get(f"{storage}/{container}", headers={"X-Auth-Token": token})
        if got.status_code == 404:
            return []
        assert got.status_code in (200, 204), got.text
        return got.text.split()


_SERVER_CONF = """[DEFAULT]
devices = {root}/node
mount_check = false
bind_ip = 127.0.0.1
bind_port = {port}
workers = 0
swift_dir = {root}/etc
log_name = {kind}-server
[pipeline:main]
pipeline = {kind}-server
[app:{kind}-server]
use = egg:swift#{kind}
"""
_PROXY_CONF = """[DEFAULT]
bind_ip = 127.0.0.1
bind_port = {port}
workers = 0
swift_dir = {root}/etc
[pipeline:main]
pipeline = catch_errors proxy-logging cache tempauth slo dlo proxy-logging proxy-server
[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
[filter:tempauth]
use = egg:swift#tempauth
user_{project}_{user} = {password} .admin
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:{memcached}
[filter:catch_errors]
use = egg:swift#catch_errors
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
"""
_SWIFT_CONF = """[swift-hash]
swift_hash_path_suffix = tidegate-tests
swift_hash_path_prefix = tidegate
[storage-policy:0]
name = default
default = yes
"""


def _build(root: Path, ports: dict[str, int]) -> None:
    (root / "etc").mkdir()
    (root / "node" / "d1").mkdir(parents=True)
    (root / "etc" / "swift.conf").write_text(_SWIFT_CONF)
    for kind in ("account", "container", "object"):
        builder = str(root / "etc" / f"{kind}.builder")
        ring = str(BIN / "swift-ring-builder")
        for args in (
            ["create", "0", "1", "1"],
            ["add", f"r1z1-127.0.0.1:{ports[kind]}/d1", "1"],
            ["rebalance"],
        ):
            subprocess.run([ring, builder, *args], check=True, capture_output=True)
        conf = _SERVER_CONF.format(root=root, port=ports[kind], kind=kind)
        (root / "etc" / f"{kind}-server.conf").write_text(conf)
    proxy = _PROXY_CONF.format(
        root=root,
        port=ports["proxy"],
        project=PROJECT,
        user=USER,
        password=PASSWORD,
        memcached=ports["memcached"],
    )
    (root / "etc" / "proxy-server.conf").write_text(proxy)


def _authenticates(server: SwiftServer) -> bool:
    try:
        server._session()
    except (httpx.HTTPError, AssertionError):
        return False
    return True


@pytest.fixture(scope="session")
def swift_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SwiftServer]:
    memcached = shutil.which("memcached")
    assert memcached, "memcached is missing: .ci/run installs Debian's memcached"
    assert (BIN / "swift-proxy-server").exists(), "swift is missing: it is in the lock"
    root = tmp_path_factory.mktemp("swift")
    ports = {kind: free_port() for kind in ("account", "container", "object", "proxy")}
    ports["memcached"] = free_port()
    _build(root, ports)
    server = SwiftServer(f"http://127.0.0.1:{ports['proxy']}", ports["memcached"])
    with ExitStack() as stack:
        cache = subprocess.Popen(
            [memcached, "-u", "root", "-l", "127.0.0.1", "-p", str(ports["memcached"]), "-U", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stack.enter_context(serving(cache, lambda: True, what="memcached"))
        for kind in ("account", "container", "object", "proxy"):
            process = subprocess.Popen(
                [str(BIN / f"swift-{kind}-server"), str(root / "etc" / f"{kind}-server.conf")],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            stack.enter_context(serving(process, lambda: True, what=f"swift-{kind}-server"))
        until(lambda: _authenticates(server), timeout=60, what="Swift giving a TempAuth token")
        yield server
