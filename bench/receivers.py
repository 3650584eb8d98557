"""What the destination benchmarks share: the receivers a destination delivers into, each
in a process of its own, and a load process that replays HTTP requests.

* ``start_receiver``: a minimal HTTP/1.1 receiver answering each API as it does on
  success (Put Blob 201, remote write 204, Datadog 202, New Relic 202, Honeycomb 200
  ``[]``, Loki 204, Elasticsearch's bulk API 200 ``{"errors":false}``, Splunk HEC
  ``{"code":0}``, Google's OAuth token endpoint and APIs 200, anything else 200). It keeps the last requests it took, so a benchmark can replay the exact
  requests a destination sent (``captured``).
* ``start_azurite``, ``make_azure_container``: Azurite's Blob service (npm,
  ``tests/tools/azurite``; ``npm ci --prefix tests/tools/azurite`` installs it).
* ``start_prometheus``: Debian's Prometheus with its remote write receiver.
* ``replay``: a separate process sending a list of requests (one *unit*) over and over
  from ``concurrency`` connections for some seconds; it counts the units every request
  of which answered 2xx and reports its own CPU time.

moto's S3 is ``harness.start_moto``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from typing import Any

import httpx

from harness import free_port, wait_up
from tidegate.objectstore.azure import string_to_sign

AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's documented development key (public).
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
AZURITE = Path(__file__).resolve().parents[1] / "tests/tools/azurite/node_modules/.bin/azurite-blob"
KEEP = 512  # requests the receiver keeps for ``captured``

RECEIVER = textwrap.dedent(
    """
    import asyncio, base64, json, sys

    KEEP = int(sys.argv[2])
    taken = []  # (index, method, target, headers, body)
    count = 0

    def answer(method, target):
        if target.startswith("/__bench/since/"):
            since = int(target.rsplit("/", 1)[1])
            kept = [
                {"method": m, "target": t, "headers": h, "body": base64.b64encode(b).decode()}
                for i, m, t, h, b in taken if i >= since
            ]
            return 200, json.dumps({"count": count, "requests": kept}).encode()
        if method == "PUT":
            return 201, b""
        if target.endswith("/api/v1/write"):
            return 204, b""
        if target.startswith("/1/batch/"):
            return 200, b"[]"
        if target == "/loki/api/v1/push":
            return 204, b""
        if target.split("?")[0].endswith("/_bulk"):
            return 200, b'{"took":1,"errors":false,"items":[]}'
        if target in ("/api/v2/logs", "/log/v1", "/metric/v1", "/api/v2/series"):
            return 202, b'{"errors":[]}'
        if target == "/token":
            return 200, b'{"access_token":"ya29.bench","expires_in":3600,"token_type":"Bearer"}'
        if target.endswith("/services/collector/event"):
            return 200, b'{"text":"Success","code":0}'
        if target.endswith(":publish"):
            return 200, b'{"messageIds":["1"]}'
        if target.startswith(("/v2/", "/v3/", "/upload/")):
            return 200, b"{}"
        return 200, b"ok"

    async def handle(reader, writer):
        global count
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                lines = head.decode("latin-1").split("\\r\\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = []
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name:
                        headers.append((name, value.strip()))
                    if name.lower() == "content-length":
                        length = int(value)
                body = await reader.readexactly(length)
                if not target.startswith("/__bench/"):
                    taken.append((count, method, target, headers, body))
                    count += 1
                    del taken[:-KEEP]
                status, out = answer(method, target)
                writer.write(
                    f"HTTP/1.1 {status} X\\r\\nContent-Length: {len(out)}\\r\\n\\r\\n".encode()
                    + out
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
        async with server:
            await server.serve_forever()

    asyncio.run(main())
    """
)

REPLAY = textwrap.dedent(
    """
    import asyncio, base64, json, sys, time
    import httpx

    async def main(path, seconds, concurrency):
        unit = [
            (r["method"], r["url"], r["headers"], base64.b64decode(r["body"]))
            for r in json.load(open(path))
        ]
        done = failed = 0
        refused = ""
        deadline = time.monotonic() + seconds
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=60) as http:
            async def worker():
                nonlocal done, failed, refused
                while time.monotonic() < deadline:
                    ok = True
                    for method, url, headers, body in unit:
                        answer = await http.request(method, url, content=body, headers=headers)
                        if not 200 <= answer.status_code < 300:
                            ok, refused = False, f"{answer.status_code} {answer.text[:300]}"
                    done, failed = done + ok, failed + (not ok)
            started, cpu = time.monotonic(), time.process_time()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            elapsed, cpu = time.monotonic() - started, time.process_time() - cpu
        print(json.dumps(
            {"done": done, "failed": failed, "refused": refused, "seconds": elapsed, "cpu": cpu}
        ))

    asyncio.run(main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3])))
    """
)

S3_PUT = textwrap.dedent(
    """
    import json, sys, threading, time, uuid
    import boto3

    endpoint, bucket, body_path, seconds, concurrency = sys.argv[1:6]
    body = open(body_path, "rb").read()
    s3 = boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="bench", aws_secret_access_key="bench",
    )
    counts = {"done": 0, "failed": 0, "refused": ""}
    deadline = time.monotonic() + float(seconds)

    def worker():
        while time.monotonic() < deadline:
            try:
                s3.put_object(Bucket=bucket, Key=f"raw/{uuid.uuid4().hex}.ndjson", Body=body)
                counts["done"] += 1
            except Exception as error:
                counts["failed"] += 1
                counts["refused"] = str(error)[:300]

    started, cpu = time.monotonic(), time.process_time()
    threads = [threading.Thread(target=worker) for _ in range(int(concurrency))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts.update(seconds=time.monotonic() - started, cpu=time.process_time() - cpu)
    print(json.dumps(counts))
    """
)

# Headers the replaying client sets itself.
_OWN_HEADERS = frozenset({"host", "content-length", "connection", "accept-encoding", "user-agent"})


@dataclass(frozen=True)
class Request:
    method: str
    url: str
    headers: Sequence[tuple[str, str]]
    body: bytes = b""


@dataclass(frozen=True)
class Replayed:
    units: int
    seconds: float
    cpu: float
    """CPU seconds of the replaying process."""

    @property
    def rate(self) -> float:
        return self.units / self.seconds


def replay(unit: Sequence[Request], seconds: float, concurrency: int = 16) -> Replayed:
    """Send ``unit`` (its requests in order) again and again from ``concurrency``
    connections for ``seconds``, in a process of its own; raise if any answer was not
    2xx."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
        json.dump(
            [
                {
                    "method": request.method,
                    "url": request.url,
                    "headers": [
                        [name, value]
                        for name, value in request.headers
                        if name.lower() not in _OWN_HEADERS
                    ],
                    "body": base64.b64encode(request.body).decode(),
                }
                for request in unit
            ],
            file,
        )
        file.flush()
        return _run(REPLAY, file.name, str(seconds), str(concurrency))


def put_objects(
    endpoint: str, bucket: str, body: bytes, seconds: float, concurrency: int = 16
) -> Replayed:
    """boto3's ``put_object`` of ``body`` under a new key each time, from
    ``concurrency`` threads for ``seconds``, in a process of its own (replaying one
    signed PUT would write one key concurrently, which moto answers 500)."""
    with tempfile.NamedTemporaryFile("wb") as file:
        file.write(body)
        file.flush()
        return _run(S3_PUT, endpoint, bucket, file.name, str(seconds), str(concurrency))


def _run(script: str, *args: str) -> Replayed:
    out = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=True
    ).stdout
    result = json.loads(out)
    if result["failed"]:
        raise RuntimeError(f"{result['failed']} units not answered 2xx: {result['refused']}")
    return Replayed(result["done"], result["seconds"], result["cpu"])


def load_arguments(doc: str | None, seconds: float) -> argparse.Namespace:
    """The options of a benchmark loading a server: ``--seconds`` (per run),
    ``--events`` (per request), ``--rounds`` and ``--only`` (rows to measure)."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=seconds)
    parser.add_argument("--events", type=int, default=100, help="events per request")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="measure only the rows whose name holds this text (repeatable; the floors stay)",
    )
    return parser.parse_args()


def metric_events(count: int, start_ms: int | None = None) -> list[dict[str, Any]]:
    """Metric events with a ``message`` too (so log and metric destinations carry each of
    them) and a JSON ``line`` (which the five-processor pipeline parses); with
    ``start_ms``, the n-th has the timestamp ``start_ms + n`` (Prometheus refuses two
    values of one series at one time)."""
    return [
        {
            **({} if start_ms is None else {"timestamp": start_ms + n}),
            "message": f"GET /api/v1/orders/{n} 200",
            "line": '{"status": 200}',
            "name": "http_requests",
            "kind": "absolute",
            "value": {"type": "gauge", "value": n},
            "tags": {"route": f"/api/{n % 10}", "host": f"web-{n % 4}"},
            "app": "checkout",
        }
        for n in range(count)
    ]


def post_json(url: str, body: bytes, headers: dict[str, str] | None = None) -> Request:
    return Request(
        "POST", url, [("Content-Type", "application/json"), *(headers or {}).items()], body
    )


def start_receiver() -> tuple[subprocess.Popen[bytes], str]:
    """The receiver on a free port: (its process, its base URL). Terminate when done."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port), str(KEEP)])
    base = f"http://127.0.0.1:{port}"
    try:
        wait_up(base + "/__bench/since/0")
    except BaseException:
        process.terminate()
        raise
    return process, base


def received(base: str) -> int:
    """How many requests the receiver has taken."""
    return int(httpx.get(f"{base}/__bench/since/{10**12}").json()["count"])


def captured(base: str, since: int, *, skip: Sequence[str] = ("/token",)) -> list[Request]:
    """The requests the receiver took from the ``since``-th on (at most the last
    ``KEEP``), but those whose target starts with one of ``skip``, as ``Request``s
    to replay."""
    answer = httpx.get(f"{base}/__bench/since/{since}").json()
    if answer["count"] - since > KEEP:
        raise RuntimeError("the receiver no longer holds the requests asked for")
    return [
        Request(
            taken["method"],
            base + taken["target"],
            [(name, value) for name, value in taken["headers"]],
            base64.b64decode(taken["body"]),
        )
        for taken in answer["requests"]
        if not taken["target"].startswith(tuple(skip))
    ]


def start_azurite(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Azurite's Blob service on a free port, data under ``work``: (its process, the
    account's endpoint ``http://127.0.0.1:<port>/devstoreaccount1``)."""
    if not AZURITE.exists():
        raise RuntimeError(f"{AZURITE} is missing: npm ci --prefix tests/tools/azurite")
    port = free_port()
    location = work / "azurite"
    location.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [
            str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port),
            "--location", str(location), "--skipApiVersionCheck", "--disableTelemetry",
            "--silent",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    try:
        wait_up(endpoint + "?comp=list", 120)
    except BaseException:
        process.terminate()
        raise
    return process, endpoint


def azurite_connection_string(endpoint: str) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
        f"AccountKey={AZURITE_KEY};BlobEndpoint={endpoint}"
    )


def make_azure_container(endpoint: str, name: str) -> None:
    """Create Blob container ``name`` (Create Container, signed with Shared Key)."""
    url = f"{endpoint}/{name}?restype=container"
    headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": "2021-08-06"}
    to_sign = string_to_sign("PUT", url, list(headers.items()), AZURITE_ACCOUNT)
    digest = hmac.new(base64.b64decode(AZURITE_KEY), to_sign.encode(), hashlib.sha256).digest()
    headers["Authorization"] = f"SharedKey {AZURITE_ACCOUNT}:{base64.b64encode(digest).decode()}"
    made = httpx.put(url, headers=headers)
    if made.status_code != 201:
        raise RuntimeError(f"container not made: {made.status_code} {made.text[:300]}")


def start_prometheus(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Debian's Prometheus with ``--web.enable-remote-write-receiver`` on a free port,
    its storage under ``work``, accepting samples up to an hour out of order (concurrent
    deliveries arrive in any order): (its process, its base URL)."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise RuntimeError("prometheus is missing: apt-get install prometheus")
    folder = work / "prometheus"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prometheus.yml").write_text("storage:\n  tsdb:\n    out_of_order_time_window: 1h\n")
    port = free_port()
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            binary, f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
            "--web.enable-remote-write-receiver",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    log.close()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_up(base + "/-/ready", 120, status=200)
    except BaseException:
        process.terminate()
        raise
    return process, base
