"""The body guard in process: limits hold while a body streams in, whatever FastAPI makes
of a failed read, and the per-worker byte budget answers 503 with Retry-After.
(Timeouts and stalled connections are in tests/e2e/test_server_edge.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
from tests.conftest import make_settings, open_client


async def _chunks(total: int, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    yield b'{"company": "'
    sent = 0
    while sent < total:
        yield b"a" * size
        sent += size
    yield b'"}'


async def test_a_streamed_body_over_the_limit_is_a_413_not_a_parse_error(
    database_url: str, tmp_path: Path
) -> None:
    client, lifespan = await open_client(make_settings(database_url, tmp_path))
    try:
        # No Content-Length: only counting what arrives can refuse it. FastAPI reads a
        # JSON body before credentials and turns any read error into a 400; the guard's
        # answer wins.
        response = await client.post(
            "/v3/enterprise/account",
            content=_chunks(2 * 1024 * 1024),
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code == 413
        assert response.json()["code"] == "ETOOLARGE"
        response = await client.post(
            "/v1/config/ingestion/exclusions",
            content=_chunks(2 * 1024 * 1024),
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code == 413
        assert response.json() == {
            "error": "Request body exceeds 1048576 bytes",
            "code": "PayloadTooLarge",
            "status": "error",
        }
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)


async def test_bodies_over_the_worker_budget_get_503_with_retry_after(
    database_url: str, tmp_path: Path
) -> None:
    settings = make_settings(database_url, tmp_path, max_buffered_bytes=100_000)
    client, lifespan = await open_client(settings)
    try:
        body = orjson.dumps({"company": "a" * 200_000, "owneremail": "o@example.com"})
        response = await client.post(
            "/v3/enterprise/account", content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
        assert response.json()["code"] == "EUNAVAILABLE"
        # Released when the answer went out: a body within the budget gets through to
        # the credential check.
        small = orjson.dumps({"company": "Acme", "owneremail": "o@example.com"})
        for _ in range(3):
            response = await client.post(
                "/v3/enterprise/account",
                content=small,
                headers={"Content-Type": "application/json"},
            )
            assert response.status_code == 401
    finally:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)
