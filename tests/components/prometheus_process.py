"""Debian's Prometheus (``/usr/bin/prometheus``; ``.ci/run`` installs it) as a process
for the remote write tests: started with a configuration, waited for until ready,
queried through its HTTP API, stopped at the end of the block."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from tests.conftest import free_port
from tests.waiting import eventually

PROMETHEUS = shutil.which("prometheus")


class Prometheus:
    def __init__(self, port: int, http: httpx.AsyncClient) -> None:
        self.port = port
        self.http = http

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def query(self, expression: str) -> list[dict[str, Any]]:
        answer = await self.http.get("/api/v1/query", params={"query": expression})
        answer.raise_for_status()
        result: list[dict[str, Any]] = answer.json()["data"]["result"]
        return result


async def _ready(http: httpx.AsyncClient) -> bool:
    try:
        return (await http.get("/-/ready")).status_code == 200
    except httpx.HTTPError:
        return False


@asynccontextmanager
async def prometheus(
    workdir: Path, config: str, *, receiver: bool = False, port: int | None = None
) -> AsyncIterator[Prometheus]:
    """A running Prometheus with ``config`` (YAML text) on ``port`` (default: a free
    one); ``receiver``: with ``--web.enable-remote-write-receiver``. A missing binary
    fails the test."""
    assert PROMETHEUS is not None, "prometheus is missing: apt-get install prometheus (.ci/run)"
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "prometheus.yml").write_text(config)
    port = port or free_port()
    arguments = [
        PROMETHEUS,
        f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    if receiver:
        arguments.append("--web.enable-remote-write-receiver")
    log = (workdir / "prometheus.log").open("wb")
    process = subprocess.Popen(arguments, stdout=log, stderr=subprocess.STDOUT)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            await eventually(
                lambda: _ready(http),
                timeout=120,
                every=0.1,
                what=lambda: (
                    "Prometheus ready: " + (workdir / "prometheus.log").read_text()[-2000:]
                ),
            )
            yield Prometheus(port, http)
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
