"""Credentials in query strings never reach the access log."""

from __future__ import annotations

import logging

import pytest

from tidegate.api.http_server import RedactCredentials, redact_credentials


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
