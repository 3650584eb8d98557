"""Issue 18: the request logdna-agent-v2 sends, replayed byte for byte as its source
builds it, on both backends; what it stores is found where a user looks for it.

Built from the agent's source, not from our docs:
- logdna-rust ``src/request.rs`` (``RequestTemplate::new_request``): POST to the
  configured endpoint, headers ``Accept-Charset: utf8``, ``Content-Type:
  application/json``, ``User-Agent``, ``apiKey: <key>``, ``Content-Encoding: gzip``
  (``Encoding::GzipJson(Level::Precise(2))`` by default); the query is
  ``serde_urlencoded`` of ``Params`` with ``now`` set to
  ``OffsetDateTime::now_utc().unix_timestamp()`` (seconds) on every request.
- logdna-rust ``src/params.rs``: ``hostname, mac, ip, now, tags`` in that order, the
  optional ones left out when unset, ``tags`` a comma list.
- logdna-rust ``src/serialize.rs`` / ``src/body.rs``: ``{"lines": [...]}``, each line's
  keys in the order ``annotation, app, env, file, host, label, level, meta, line,
  timestamp`` (the optional ones left out), ``timestamp`` an i64 of seconds.
- logdna-agent-v2 ``common/config/src/raw.rs``: the endpoint ``/logs/agent``;
  ``common/config/src/lib.rs``: the user agent ``logdna-agent/<version> (<os>/<version>)``.
- logdna-agent-v2 ``common/fs/src/cache/tailed_file.rs``: a file line carries ``file``
  (the path) and no app, ``timestamp`` the seconds when it was read;
  ``common/journald/src/journalctl/mod.rs``: a journald line carries the unit (or the
  container or syslog identifier) as ``file``, no path.
- logdna-agent-v2 ``common/k8s/src/middleware/metadata.rs``: a container's line gets
  the pod's ``annotation`` and ``label`` maps and ``meta`` ``{"Image Name", "Tag"}``;
  ``common/middleware/src/meta_rules.rs`` may set the line's ``host``.
"""

from __future__ import annotations

import gzip
import json
import time
from typing import Any
from urllib.parse import urlencode

import httpx
from tests.conftest import AppClient
from tests.ingest.factories import Ingestor, make_ingestor
from tests.live import live_async_client

AGENT_USER_AGENT = "logdna-agent/3.9.1 (Linux/6.8.0)"

# The keys in the order logdna-rust's serializer writes them (serialize.rs).
KEY_ORDER = (
    "annotation",
    "app",
    "env",
    "file",
    "host",
    "label",
    "level",
    "meta",
    "line",
    "timestamp",
)


def _agent_line(**fields: Any) -> dict[str, Any]:
    return {key: fields[key] for key in KEY_ORDER if key in fields}


def agent_request(
    key: str, lines: list[dict[str, Any]], *, now_s: int, hostname: str, tags: str
) -> tuple[str, dict[str, str], bytes]:
    """The path with its query, the headers and the body as the agent sends them."""
    query = urlencode(
        {
            "hostname": hostname,
            "mac": "02:42:ac:11:00:02",
            "ip": "10.0.0.7",
            "now": now_s,
            "tags": tags,
        }
    )
    # serde_json writes compact JSON; the agent gzips it at level 2.
    body = json.dumps({"lines": lines}, separators=(",", ":")).encode()
    headers = {
        "accept-charset": "utf8",
        "content-type": "application/json",
        "user-agent": AGENT_USER_AGENT,
        "apiKey": key,
        "content-encoding": "gzip",
    }
    return f"/logs/agent?{query}", headers, gzip.compress(body, compresslevel=2)


def _kubernetes_lines(now_s: int) -> list[dict[str, Any]]:
    return [
        _agent_line(
            file="/var/log/nginx/access.log",
            line='10.0.0.1 - - "GET / HTTP/1.1" 200 612',
            timestamp=now_s,
        ),
        _agent_line(
            annotation={"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
            file="/var/log/containers/web-7d9f_default_nginx-0123456789abcdef.log",
            host="node-7",
            label={"app": "web-frontend", "tier": "edge"},
            meta={"Image Name": "nginx", "Tag": "1.27"},
            line="container says hello",
            timestamp=now_s,
        ),
        _agent_line(file="sshd.service", line="Accepted publickey for ops", timestamp=now_s),
    ]


async def _export(client: AppClient, who: Ingestor, **params: Any) -> list[dict[str, Any]]:
    """The last hour's lines as the platform's CLI asks for them (``GET /v1/export``)."""
    now_ms = time.time_ns() // 1_000_000
    response = await client.get(
        "/v1/export",
        params={"from": now_ms - 3_600_000, "to": now_ms, "json": "true", **params},
        headers=who.account.headers,
    )
    assert response.status_code == 200, response.text
    lines: list[dict[str, Any]] = response.json()
    return lines


async def test_the_agents_request_is_stored_at_its_time_under_its_file_and_node(
    client: AppClient,
) -> None:
    who = await make_ingestor(client)
    now_s = int(time.time())
    path, headers, body = agent_request(
        who.key, _kubernetes_lines(now_s), now_s=now_s, hostname="agent-host", tags="k8s,prod"
    )
    response = await client.post(path, headers=headers, content=body)
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "ok"}

    exported = {row["_line"]: row for row in await _export(client, who)}
    assert len(exported) == 3
    for row in exported.values():
        # Seconds read as seconds: within a second of the agent's now, not in 1970.
        assert abs(row["_ts"] - now_s * 1000) < 1000
        assert row["_tag"] == ["k8s", "prod"]
    access = exported['10.0.0.1 - - "GET / HTTP/1.1" 200 612']
    assert (access["_app"], access["_file"], access["_host"]) == (
        "access.log",
        "/var/log/nginx/access.log",
        "agent-host",
    )
    container = exported["container says hello"]
    assert container["_host"] == "node-7"  # the line's own host, not the parameter
    assert container["_app"] == "web-7d9f_default_nginx-0123456789abcdef.log"
    assert container["_meta"] == {
        "Image Name": "nginx",
        "Tag": "1.27",
        "labels": {"app": "web-frontend", "tier": "edge"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
    }
    journald = exported["Accepted publickey for ops"]
    assert (journald["_app"], journald["_file"]) == ("sshd.service", "sshd.service")

    # Found where a user looks: the app facet, the node's host, the labels.
    assert [row["_line"] for row in await _export(client, who, apps="access.log")] == [
        '10.0.0.1 - - "GET / HTTP/1.1" 200 612'
    ]
    assert [row["_line"] for row in await _export(client, who, hosts="node-7")] == [
        "container says hello"
    ]
    for query in ("labels.app:web-frontend", "labels.tier:edge", "app:sshd.service"):
        found = [row["_line"] for row in await _export(client, who, q=query)]
        assert len(found) == 1, query


async def test_the_agents_seconds_from_a_clock_an_hour_behind_land_now(
    client: AppClient,
) -> None:
    """The agent's ``now`` and ``timestamp`` come from the same (wrong) clock: the
    lines are moved by how far that clock is off."""
    who = await make_ingestor(client)
    before_ms = time.time_ns() // 1_000_000
    behind_s = before_ms // 1000 - 3600
    path, headers, body = agent_request(
        who.key,
        [_agent_line(file="/var/log/app.log", line="late clock", timestamp=behind_s - 5)],
        now_s=behind_s,
        hostname="skewed",
        tags="k8s",
    )
    response = await client.post(path, headers=headers, content=body)
    assert response.status_code == 200, response.text
    after_ms = time.time_ns() // 1_000_000
    (row,) = await _export(client, who)
    assert before_ms - 5000 - 1000 <= row["_ts"] <= after_ms - 5000
    assert row["_app"] == "app.log"


def test_the_replayed_request_is_what_the_agent_writes() -> None:
    """The replay itself: the query in ``Params``' order with ``now`` in seconds, the
    agent's headers, a gzip body whose line keys keep the serializer's order."""
    path, headers, body = agent_request(
        "k", _kubernetes_lines(1_764_000_000), now_s=1_764_000_000, hostname="h", tags="a,b"
    )
    assert path == (
        "/logs/agent?hostname=h&mac=02%3A42%3Aac%3A11%3A00%3A02&ip=10.0.0.7"
        "&now=1764000000&tags=a%2Cb"
    )
    assert headers["apiKey"] == "k"
    decoded = json.loads(gzip.decompress(body))
    assert list(decoded) == ["lines"]
    assert list(decoded["lines"][1]) == [
        "annotation",
        "file",
        "host",
        "label",
        "meta",
        "line",
        "timestamp",
    ]
    assert httpx.URL(path).params["now"] == "1764000000"


async def test_logger_nodes_agent_log_lines_are_filed_under_their_file(
    client: AppClient,
) -> None:
    """``@logdna/logger`` with ``payloadStructure: 'agent'`` (logger-node
    ``lib/logger.js`` ``agentLog`` and ``lib/payloads.js``): ``{t, label, line, f, pid,
    prival, containerid}`` with ``t: Date.now()`` (ms), in ``{"e": "ls", "ls": [...]}``,
    ``now: Date.now()`` in the query; no app."""
    who = await make_ingestor(client)
    now_ms = time.time_ns() // 1_000_000
    line = {
        "t": now_ms,
        "label": {"team": "payments"},
        "line": "worker started",
        "f": "/srv/app/logs/worker.log",
        "pid": 4242,
    }
    response = await client.post(
        "/logs/ingest",
        params={"hostname": "node-app", "now": now_ms},
        headers={**who.headers, "content-type": "application/json"},
        content=json.dumps({"e": "ls", "ls": [line]}),
    )
    assert response.status_code == 200, response.text
    (row,) = await _export(client, who, q="app:worker.log labels.team:payments")
    assert row["_ts"] == now_ms
    assert (row["_app"], row["_file"]) == ("worker.log", "/srv/app/logs/worker.log")
    assert row["_meta"] == {"labels": {"team": "payments"}, "pid": 4242}


async def test_the_agents_request_over_real_http(
    client: AppClient, shared_live_server: Any
) -> None:
    """The same bytes through a real server's socket (the tail tests' shared server)."""
    server = shared_live_server(
        env={
            "TIDEGATE_DATABASE_URL": client.database_url,
            "TIDEGATE_BOOTSTRAP": "0",
            "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        }
    )
    who = await make_ingestor(client)
    now_s = int(time.time())
    path, headers, body = agent_request(
        who.key, _kubernetes_lines(now_s), now_s=now_s, hostname="agent-host", tags="k8s"
    )
    async with live_async_client(server.base_url) as http:
        response = await http.post(path, headers=headers, content=body)
    assert response.status_code == 200, response.text
    exported = {row["_line"]: row for row in await _export(client, who)}
    assert exported['10.0.0.1 - - "GET / HTTP/1.1" 200 612']["_app"] == "access.log"
    assert exported["container says hello"]["_host"] == "node-7"
    assert all(abs(row["_ts"] - now_s * 1000) < 1000 for row in exported.values())
