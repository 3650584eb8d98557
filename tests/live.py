"""HTTP clients for real servers (``tidegate serve`` in a process of its own).

httpx's default timeout is 5 s, and a freshly started server on a loaded machine can
take longer than that to answer its first requests (imports, migrations, the first
connection to each database): every request a test makes to a live server goes through
these, with one generous timeout. pytest-timeout (300 s a test) still bounds a hang."""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, Protocol

import httpx
from tests.waiting import until

LIVE_SECONDS = 60.0
LIVE_TIMEOUT = httpx.Timeout(LIVE_SECONDS, connect=30.0)


@cache
def tls() -> ssl.SSLContext:
    """One verifying TLS context for every client the tests make. httpx builds a new one
    for each client (loading the CA bundle: 40-130 ms of CPU here), and each bare
    ``httpx.get`` is a client: a server's start-up probes and the tests' polling loops
    paid it on every request."""
    return httpx.create_ssl_context()


def live_client(base_url: str = "", **kwargs: Any) -> httpx.Client:
    """A client for a live server (``base_url``: its root), with ``LIVE_TIMEOUT``."""
    kwargs.setdefault("timeout", LIVE_TIMEOUT)
    kwargs.setdefault("verify", tls())
    return httpx.Client(base_url=base_url, **kwargs)


def live_async_client(base_url: str = "", **kwargs: Any) -> httpx.AsyncClient:
    """An async client for a live server, with ``LIVE_TIMEOUT``."""
    kwargs.setdefault("timeout", LIVE_TIMEOUT)
    kwargs.setdefault("verify", tls())
    return httpx.AsyncClient(base_url=base_url, **kwargs)


def live_request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request to a live server (a full URL), with ``LIVE_TIMEOUT``."""
    kwargs.setdefault("timeout", LIVE_TIMEOUT)
    kwargs.setdefault("verify", tls())
    return httpx.request(method, url, **kwargs)


def live_get(url: str, **kwargs: Any) -> httpx.Response:
    return live_request("GET", url, **kwargs)


def live_post(url: str, **kwargs: Any) -> httpx.Response:
    return live_request("POST", url, **kwargs)


def live_patch(url: str, **kwargs: Any) -> httpx.Response:
    return live_request("PATCH", url, **kwargs)


class ServerProcess(Protocol):
    """What the tests use of a server's process: ``subprocess.Popen`` or a process the
    launcher forked (tests/launcher.py)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


def stop_process(process: ServerProcess | None, *, grace_s: float = 15) -> None:
    """SIGTERM a server process and wait for it; SIGKILL it if it outlives ``grace_s``."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def serving(
    process: subprocess.Popen[bytes], ready: Callable[[], bool], *, what: str, timeout: float = 60
) -> Iterator[None]:
    """While a server process started for the tests runs: once ``ready`` (else a
    failure naming ``what``, never a skip), until the block ends, when it is stopped."""
    try:
        until(lambda: process.poll() is not None or ready(), timeout=timeout, what=what)
        assert process.poll() is None, f"{what}: the process exited"
        yield
    finally:
        stop_process(process)
