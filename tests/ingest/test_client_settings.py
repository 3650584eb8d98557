"""The settings docs/clients.md ("Point your tools here") gives each client, used
against a real server: every line sent that way must be stored and exported.

- The Python handler (the `logdna` package, installed for the tests) with the `url`
  option, run as it is.
- The platform agent: its URL is ``schema + host + endpoint`` (logdna-rust
  src/request.rs), ``schema`` from ``MZ_USE_SSL``, ``host`` from ``MZ_HOST`` (a port
  may follow the name), ``endpoint`` from ``MZ_ENDPOINT`` (default ``/logs/agent``);
  replayed with the agent's headers, gzip body and epoch-second times.
- curl: the README's command ("Sending data"), run by the real curl.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import shutil
import subprocess
import time
import uuid
from typing import Any

import pytest
from tests.conftest import AppClient
from tests.export.helpers import export_all
from tests.ingest.factories import Ingestor, make_ingestor
from tests.live import live_async_client
from tests.tail.test_live import _env


def agent_url(*, host: str, endpoint: str = "/logs/agent", use_ssl: bool = True) -> str:
    """The agent's ingest URL from MZ_HOST, MZ_ENDPOINT and MZ_USE_SSL."""
    return ("https://" if use_ssl else "http://") + host + endpoint


async def exported_texts(client: AppClient, who: Ingestor) -> list[str]:
    now_s = int(time.time())
    lines, _ = await export_all(
        client, who.account.headers, **{"from": now_s - 3600, "to": now_s + 3600}
    )
    return sorted(line["_line"] for line in lines)


async def test_python_handler_with_the_url_option(
    client: AppClient, shared_live_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logdna.logdna

    server = shared_live_server(env=_env(client))
    who = await make_ingestor(client)
    monkeypatch.setattr(logdna.logdna, "get_ip", lambda: "127.0.0.1")
    # docs/clients.md: LogDNAHandler(key, {"url": "http://<tidegate>/logs/ingest"})
    handler = logdna.logdna.LogDNAHandler(
        who.key, {"url": f"{server.base_url}/logs/ingest", "app": "docs", "flush_interval": 0.05}
    )
    logger = logging.getLogger(f"tidegate.test.clients.{uuid.uuid4().hex[:6]}")
    logger.propagate = False
    logger.setLevel(logging.INFO)

    def log_and_flush() -> None:
        logger.addHandler(handler)
        try:
            logger.warning("sent by the python handler")
        finally:
            logger.removeHandler(handler)
            handler.close()  # flushes, blocking

    # In a thread, as every blocking call of these tests: the in-process app shares the
    # server's database and its loop must go on (a transaction of its alert runner holds
    # SQLite's write lock until the loop finishes it).
    await asyncio.to_thread(log_and_flush)
    assert await exported_texts(client, who) == ["sent by the python handler"]


async def test_agent_host_endpoint_and_use_ssl_settings(
    client: AppClient, shared_live_server: Any
) -> None:
    server = shared_live_server(env=_env(client))
    who = await make_ingestor(client)
    host = server.base_url.removeprefix("http://")  # MZ_HOST=127.0.0.1:<port>
    # The agent's times are epoch seconds (`now`, each line's `timestamp`): how they are
    # read is tests/ingest's (the agent-exact work); here only where the lines go.
    body = gzip.compress(json.dumps({"lines": [{"line": "sent as the agent"}]}).encode())
    async with live_async_client(server.base_url) as http:
        for endpoint in ("/logs/agent", "/logs/ingest"):  # MZ_ENDPOINT: either serves
            answer = await http.post(
                agent_url(host=host, endpoint=endpoint, use_ssl=False),
                params={"hostname": "node-1"},
                content=body,
                headers={
                    "apiKey": who.key,
                    "Content-Encoding": "gzip",
                    "Content-Type": "application/json",
                    "Accept-Charset": "utf8",
                    "User-Agent": "logdna-agent/3.10.0 (Linux)",
                },
            )
            assert answer.status_code == 200, answer.text
    assert await exported_texts(client, who) == ["sent as the agent"] * 2


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_the_readme_curl_command(client: AppClient, shared_live_server: Any) -> None:
    server = shared_live_server(env=_env(client))
    who = await make_ingestor(client)
    answer = await asyncio.to_thread(
        subprocess.run,
        [
            "curl",
            "-s",
            "-u",
            f"{who.key}:",
            "-H",
            "content-type: application/json",
            "-d",
            '{"lines":[{"line":"hello","app":"web","level":"INFO"}]}',
            f"{server.base_url}/logs/ingest?hostname=laptop",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(answer.stdout) == {"status": "ok"}
    assert await exported_texts(client, who) == ["hello"]
