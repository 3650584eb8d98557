"""Credentials in query strings never reach the access log."""

from __future__ import annotations

import logging

import pytest

from tidegate.api.http_server import RedactCredentials, log_config, redact_credentials


@pytest.mark.parametrize(
    ("target", "logged"),
    [
        ("/logs/ingest?apikey=abc", "/logs/ingest?apikey=REDACTED"),
        (
            "/logs/ingest?hostname=h&apikey=abc&tags=a",
            "/logs/ingest?hostname=h&apikey=REDACTED&tags=a",
        ),
        ("/logs/ingest?APIKEY=abc", "/logs/ingest?APIKEY=REDACTED"),
        ("/logs/ingest?api%6Bey=abc", "/logs/ingest?api%6Bey=REDACTED"),
        (
            "/x?token=t&access_token=u&servicekey=s",
            "/x?token=REDACTED&access_token=REDACTED&servicekey=REDACTED",
        ),
        ("/x?apikey=a&apikey=b", "/x?apikey=REDACTED&apikey=REDACTED"),
        ("/x?hostname=apikey%3Dnot-a-key", "/x?hostname=apikey%3Dnot-a-key"),
        ("/logs/ingest", "/logs/ingest"),
        ("/x?flag&apikey=", "/x?flag&apikey=REDACTED"),
    ],
)
def test_credential_values_are_redacted(target: str, logged: str) -> None:
    assert redact_credentials(target) == logged


def test_the_filter_rewrites_uvicorns_access_record() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "POST", "/logs/ingest?apikey=secret", "1.1", 200),
        None,
    )
    assert RedactCredentials().filter(record)
    assert "secret" not in record.getMessage()
    assert "apikey=REDACTED" in record.getMessage()


def test_websocket_handshakes_on_the_error_log_are_redacted_too() -> None:
    """uvicorn logs a WebSocket handshake, query included, on its error log: logdna-cli's
    tail carries its signature there, a servicekey may be too."""
    config = log_config()
    assert config["handlers"]["default"]["filters"] == ["redact_credentials"]
    record = logging.LogRecord(
        "uvicorn.error",
        logging.INFO,
        __file__,
        1,
        '%s - "WebSocket %s" [accepted]',
        ("127.0.0.1:5000", "/ws/tail?email=a%40b.c&id=1&ts=2&hmac=abc123&q=x&servicekey=s"),
        None,
    )
    assert RedactCredentials().filter(record)
    message = record.getMessage()
    assert "abc123" not in message
    assert "servicekey=s" not in message
    assert "hmac=REDACTED" in message
    assert "email=a%40b.c&id=1&ts=2" in message
