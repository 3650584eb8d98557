"""``logs.searched.searched_text``: which text bare terms search in a stored line, from
its text and meta alone (the rows ingestion writes: the parsed fields in the meta)."""

from __future__ import annotations

import pytest

from tidegate.logs.parsing import parse_line
from tidegate.logs.searched import searched_text
from tidegate.logs.store import NewLine


def _stored(text: str, meta: dict[str, object] | None = None) -> str:
    line = parse_line(NewLine(line=text, ts=1, host="h", meta=meta))
    return searched_text(line.line, line.meta)


@pytest.mark.parametrize(
    ("text", "searched"),
    [
        ('{"message":"paid","level":"error"}', "paid"),
        ('{"message" : "spaced out"}', "spaced out"),  # JSON read again, not spelled
        ("Nov 22 08:00:01 web-1 sshd[4711]: Accepted key", "Accepted key"),
        ("<34>1 2025-11-22T08:00:01Z db-2 cron 99 - - backup done", "backup done"),
        ('level=warn msg="queue \\"jobs\\" slow" took=1', 'queue "jobs" slow'),
        ("level=warn message=bare took=1", "bare"),
        # An escape the index cannot find as written: the whole text is searched.
        ('level=warn msg="a\\tb" took=1', 'level=warn msg="a\\tb" took=1'),
        ('level=warn msg="\\"a\\tb" took=1', 'level=warn msg="\\"a\\tb" took=1'),
        ("2025/11/22 08:00:01 [error] 1#1: upstream gone, client: 1.2.3.4", "upstream gone"),
        ("E1122 08:00:01.123456    1 main.go:1] sync failed", "sync failed"),
        # No message part: the whole text.
        ('1.2.3.4 - - [22/Nov/2025:08:00:01 +0000] "GET / HTTP/1.1" 200 5', None),
        ("a plain sentence", None),
        ('{"msg":"no message key"}', None),
    ],
)
def test_the_searched_text_of_each_form(text: str, searched: str | None) -> None:
    assert _stored(text) == (text if searched is None else searched)


def test_a_senders_meta_message_is_never_the_searched_text() -> None:
    # Beside a text that holds it, but is not parsed into it.
    assert _stored("request handled in 12 ms", {"message": "handled in 12 ms"}) == (
        "request handled in 12 ms"
    )
    # Replacing the message a syslog line was parsed into (the sender's keys win).
    text = "Nov 22 08:00:02 web-1 sudo[12]: session opened"
    assert _stored(text, {"message": "session opened for root"}) == text
    assert _stored(text, {"message": "opened"}) == text
