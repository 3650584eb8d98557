"""Issue 9: the ``open-telemetry-logs`` source against a real ``tidegate serve``: the
OpenTelemetry SDK's LoggerProvider with the real OTLP/HTTP exporter
(``opentelemetry-exporter-otlp-proto-http``) sends log records, protobuf, plain and
gzip; they arrive in the account's log store."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import orjson
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from tests.components.factories import wire_source
from tests.gateway.factories import new_account_on, stored_lines
from tests.gateway.test_live_server import server_env


def _export(endpoint: str, key: str, compression: Compression, messages: list[str]) -> None:
    """Log ``messages`` through the SDK; every record is exported before this returns."""
    exporter = OTLPLogExporter(
        endpoint=endpoint,
        headers={"Authorization": f"Token {key}"},
        compression=compression,
        timeout=30,
    )
    provider = LoggerProvider(resource=Resource.create({"service.name": "checkout"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = logging.getLogger(f"otlp-test-{compression.value}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = LoggingHandler(level=logging.INFO, logger_provider=provider)
    logger.addHandler(handler)
    try:
        for message in messages:
            logger.error(message, extra={"order_id": 42})
        assert provider.force_flush(30_000)
    finally:
        logger.removeHandler(handler)
        provider.shutdown()


async def test_the_otlp_exporter_delivers_log_records(
    live_server_factory: Any, tmp_path: Path
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'otlp.sqlite3'}"
    server = live_server_factory(env=server_env(database_url))
    async with server.async_client() as http:
        account = await new_account_on(http, database_url, throttle=False)
        wired = await wire_source(http, account, "open-telemetry-logs", {})
        endpoint = f"{server.base_url}/gateway/{wired.route_id}/v1/logs"
        await asyncio.to_thread(
            _export, endpoint, wired.key, Compression.NoCompression, ["payment declined"]
        )
        await asyncio.to_thread(_export, endpoint, wired.key, Compression.Gzip, ["gzip sent"])

        # A wrong key is refused, and the exporter's JSON sibling form is read too.
        refused = await http.post(endpoint, content=b"", headers={"Authorization": "Token nope"})
        assert refused.status_code == 401
        document = {
            "resourceLogs": [
                {
                    "scopeLogs": [
                        {
                            "logRecords": [
                                {
                                    "timeUnixNano": "1735787045678000000",
                                    "body": {"stringValue": "from json"},
                                    "traceId": "5b8efff798038103d269b633813fc60c",
                                }
                            ]
                        }
                    ]
                }
            ]
        }
        sent = await http.post(
            endpoint,
            content=orjson.dumps(document),
            headers={**wired.auth, "Content-Type": "application/json"},
        )
        assert sent.status_code == 200, sent.text
        assert sent.json() == {}
    lines = await stored_lines(database_url, account.account_id)
    assert [line.line for line in lines] == ["payment declined", "gzip sent", "from json"]
    first = lines[0]
    assert first.meta is not None
    assert first.meta["severity_text"] == "ERROR"
    assert first.meta["attributes"]["order_id"] == 42
    assert first.meta["resources"]["service.name"] == "checkout"
    assert lines[2].ts == 1_735_787_045_678
    assert lines[2].meta is not None
    assert lines[2].meta["trace_id"] == "5b8efff798038103d269b633813fc60c"
