"""The server's edge against a real ``tidegate serve`` over raw sockets: bodies are not
read before credentials, header size and time limits, body read timeout, the
per-worker body budget, JSON answers to malformed HTTP, private data files and
credentials kept out of the access log."""

from __future__ import annotations

import json
import select
import socket
import stat
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.live import live_get, live_post
from tests.waiting import until

TEN_MB = 10 * 1024 * 1024


def _connect(server: Any, *, timeout: float = 30.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    sock.settimeout(timeout)
    return sock


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One response: status, headers (lower-case names) and its Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed before a response: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body[:length]


def _closed_by_server(sock: socket.socket) -> bool:
    """Reads until the server closes the connection (True) or the client timeout."""
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


def _ingest_head(*, length: int, key: str | None = None) -> bytes:
    query = "hostname=edge" + (f"&apikey={key}" if key else "")
    return (
        f"POST /logs/ingest?{query} HTTP/1.1\r\nHost: tidegate\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def _memory_kb(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def _ingestion_key(server: Any) -> str:
    """The bootstrap enterprise's key (written by ``tidegate serve``), an account, its
    ingestion key."""
    token = (server.cwd / "var" / "enterprise-key").read_text().strip()
    enterprise = {"Authorization": f"Token {token}"}
    account = live_post(
        f"{server.base_url}/v3/enterprise/account",
        json={"company": "Acme", "owneremail": f"o-{uuid.uuid4().hex[:6]}@example.com"},
        headers=enterprise,
    ).json()["data"]
    headers = {**enterprise, "x-delegate-account-id": account["account_id"]}
    response = live_post(
        f"{server.base_url}/v1/config/keys", params={"type": "ingestion"}, headers=headers
    )
    key: str = response.json()["key"]
    return key


_QUIET = {"TIDEGATE_RATE_LIMIT_PER_MINUTE": "0"}


def test_unauthenticated_ingest_is_answered_before_its_body_arrives(
    shared_live_server: Any,
) -> None:
    server = shared_live_server(env=_QUIET)
    with _connect(server, timeout=25) as sock:
        sock.sendall(_ingest_head(length=TEN_MB))  # and never a byte of the body
        status, headers, body = _read_response(sock)
    assert status == 401
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {
        "error": "Missing Credentials",
        "code": "Unauthorized",
        "status": "error",
    }


def test_stalled_unauthenticated_bodies_hold_no_memory(live_server_factory: Any) -> None:
    server = live_server_factory(env=_QUIET)
    pid = server.process.pid
    before = _memory_kb(pid)
    almost = b"x" * (TEN_MB - 1)  # the whole body but its last byte, then silence
    sockets = []
    try:
        for _ in range(60):
            sock = _connect(server)
            sockets.append(sock)
            sock.sendall(_ingest_head(length=TEN_MB) + almost)
        time.sleep(0.5)  # let the server take in what is in flight
        after = _memory_kb(pid)
        # The old server buffered every body before the credential check: about 600 MB here.
        grown_mb = (after["VmHWM"] - before["VmHWM"]) / 1024
        assert grown_mb < 100, (before, after)
        assert after["VmRSS"] / 1024 < 300, (before, after)
        for sock in sockets[:3]:
            assert _read_response(sock)[0] == 401
    finally:
        for sock in sockets:
            sock.close()


def test_a_1mb_header_is_refused(shared_live_server: Any) -> None:
    server = shared_live_server(env=_QUIET)
    with _connect(server) as sock:
        try:
            sock.sendall(
                b"GET /healthz HTTP/1.1\r\nHost: tidegate\r\nX-Big: "
                + b"a" * (1024 * 1024)
                + b"\r\n\r\n"
            )
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused while still sending: the answer is already waiting
        status, headers, body = _read_response(sock)
    assert status == 431
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["code"] == "RequestHeaderFieldsTooLarge"
    assert json.loads(body)["status"] == "error"
    # Headers under the limit still work.
    response = live_get(f"{server.base_url}/healthz", headers={"X-Big": "a" * 30_000})
    assert response.status_code == 200


def test_slow_headers_are_cut_off(live_server_factory: Any) -> None:
    server = live_server_factory(env={**_QUIET, "TIDEGATE_HEADER_TIMEOUT_S": "1"})
    with _connect(server) as partial, _connect(server) as silent:
        partial.sendall(b"GET /healthz HTTP/1.1\r\nHost: tidegate\r\nX-Slow: ")
        status, headers, body = _read_response(partial)
        assert status == 408
        assert headers["connection"] == "close"
        assert json.loads(body)["code"] == "RequestTimeout"
        assert _closed_by_server(partial)
        # A connection that never sends a byte is closed too (no answer owed).
        assert _closed_by_server(silent)


def test_a_stalled_body_gets_408(live_server_factory: Any) -> None:
    server = live_server_factory(env={**_QUIET, "TIDEGATE_BODY_TIMEOUT_S": "1"})
    key = _ingestion_key(server)
    with _connect(server) as sock:
        sock.sendall(_ingest_head(length=1000, key=key) + b'{"lines": [')
        status, headers, body = _read_response(sock)
        assert headers["connection"] == "close"
        assert status == 408
        assert json.loads(body) == {
            "error": "No request body bytes for 1 seconds",
            "code": "RequestTimeout",
            "status": "error",
        }
        assert _closed_by_server(sock)
    # The v3 family gets its own shape; its body is read before credentials (FastAPI
    # parses a JSON body before dependencies), so no key is needed to see it.
    with _connect(server) as sock:
        sock.sendall(
            b"POST /v3/enterprise/account HTTP/1.1\r\nHost: tidegate\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        status, _headers, body = _read_response(sock)
    assert status == 408
    assert json.loads(body)["code"] == "ETIMEOUT"
    # A client hanging up mid-body is nobody's error: no traceback in the server's log.
    with _connect(server) as sock:
        sock.sendall(_ingest_head(length=1000, key=key) + b'{"lines": [')
    assert live_get(f"{server.base_url}/healthz").status_code == 200
    time.sleep(0.5)
    assert "Traceback" not in server.log.read_text()


def test_request_bodies_share_a_byte_budget_per_worker(live_server_factory: Any) -> None:
    server = live_server_factory(env={**_QUIET, "TIDEGATE_MAX_BUFFERED_BYTES": "1000000"})
    key = _ingestion_key(server)
    small = json.dumps({"lines": [{"line": "x" * 300_000}]}).encode()
    with _connect(server) as holder:
        # 900 kB of a body that never ends: its handler holds them while it waits.
        holder.sendall(_ingest_head(length=5_000_000, key=key) + b"y" * 900_000)

        def refused_one() -> tuple[int, dict[str, str], bytes] | None:
            with _connect(server) as sock:
                sock.sendall(_ingest_head(length=len(small), key=key) + small)
                answer = _read_response(sock)
            if answer[0] == 503:
                return answer
            # Whichever request's bytes push the worker over the budget is refused: when
            # a small request got its bytes charged first, that is the holder itself.
            if select.select([holder], [], [], 0)[0]:
                held = _read_response(holder)
                assert held[0] == 503
                return held
            return None

        refused = until(refused_one, every=0.1, what="a request refused while the budget was spent")
        assert refused[1]["retry-after"] == "1"
        assert json.loads(refused[2])["code"] == "ServiceUnavailable"

    # The holder hung up: its bytes are released and the same request goes through.
    def accepted() -> bool:
        with _connect(server) as sock:
            sock.sendall(_ingest_head(length=len(small), key=key) + small)
            return _read_response(sock)[0] == 200

    until(accepted, every=0.1, what="the same request accepted once the holder hung up")


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: tidegate\r\nBad Header Name: x\r\n\r\n",
        b"POST /logs/ingest HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n",
    ],
    ids=["request-line", "header-name", "two-lengths"],
)
def test_malformed_http_gets_the_legacy_json_shape(
    shared_live_server: Any, request_bytes: bytes
) -> None:
    server = shared_live_server(env=_QUIET)
    with _connect(server) as sock:
        sock.sendall(request_bytes)
        status, headers, body = _read_response(sock)
    assert status == 400
    assert headers["content-type"] == "application/json"
    document = json.loads(body)
    assert document["code"] == "BadRequest"
    assert document["status"] == "error"
    assert isinstance(document["error"], str)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_data_files_are_private_and_keys_stay_out_of_the_access_log(
    live_server_factory: Any,
) -> None:
    server = live_server_factory(env={**_QUIET, "TIDEGATE_SECRET_KEY": ""}, args=("--access-log",))
    secret = "0123456789abcdef" + uuid.uuid4().hex[:16]
    for query in (f"apikey={secret}", f"hostname=h&apikey={secret}&tags=a", f"api%6Bey={secret}"):
        response = live_post(
            f"{server.base_url}/logs/ingest?{query}", json={"lines": [{"line": "hello"}]}
        )
        assert response.status_code in (400, 403)
    key = _ingestion_key(server)
    response = live_post(
        f"{server.base_url}/logs/ingest?hostname=h&apikey={key}",
        json={"lines": [{"line": "hello"}]},
    )
    assert response.status_code == 200
    var = server.cwd / "var"
    files = {path.name: _mode(path) for path in var.iterdir()}
    server.stop()
    log = server.log.read_text()
    assert secret not in log
    assert key not in log
    assert "apikey=REDACTED" in log
    assert "api%6Bey=REDACTED" in log
    assert "hostname=h&apikey=REDACTED&tags=a" in log
    assert _mode(var) == 0o700
    assert files["tidegate.sqlite3"] == 0o600
    assert files.get("tidegate.sqlite3-wal", 0o600) == 0o600
    assert files.get("tidegate.sqlite3-shm", 0o600) == 0o600
    assert files["enterprise-key"] == 0o600
    assert files["secret.key"] == 0o600


def test_loose_data_files_are_tightened_at_start(live_server_factory: Any, tmp_path: Path) -> None:
    var = tmp_path / "old-var"
    first = live_server_factory(env={**_QUIET, "TIDEGATE_DATA_DIR": str(var)})
    live_get(f"{first.base_url}/healthz")
    first.stop()
    var.chmod(0o755)
    for path in var.iterdir():
        path.chmod(0o644)
    live_server_factory(env={**_QUIET, "TIDEGATE_DATA_DIR": str(var)})
    assert _mode(var) == 0o700
    assert _mode(var / "tidegate.sqlite3") == 0o600
    for companion in ("tidegate.sqlite3-wal", "tidegate.sqlite3-shm"):
        if (var / companion).exists():
            assert _mode(var / companion) == 0o600
