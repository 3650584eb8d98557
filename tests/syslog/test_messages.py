"""A syslog frame read as the ingestion protocol's line object, and the key it carries
(the platform's ``[logdna@48950 key="..."]`` element), which is never kept."""

from __future__ import annotations

from tidegate.syslog.messages import read_frame

KEY = "0123456789abcdef0123456789abcdef"


def test_rfc5424_with_the_platforms_element() -> None:
    frame = (
        f'<11>1 2026-11-26T10:00:00.123+01:00 web-1 nginx 4242 ID7 [logdna@48950 key="{KEY}"] '
        "upstream timed out"
    )
    message = read_frame(frame.encode())
    assert message is not None
    assert message.key == KEY
    assert message.tags is None
    assert message.item == {
        "line": "upstream timed out",
        "hostname": "web-1",
        "app": "nginx",
        "level": "ERROR",
        "timestamp": "2026-11-26T10:00:00.123+01:00",
        "meta": {
            "priority": 11,
            "facility": "user",
            "severity": "error",
            "version": 1,
            "procid": "4242",
            "msgid": "ID7",
        },
    }
    assert KEY not in repr(message.item)


def test_other_structured_data_and_tags_are_kept_the_key_is_not() -> None:
    frame = (
        '<165>1 2026-11-26T10:00:00Z h app - - [exampleSDID@32473 iut="3" eventSource="App"]'
        f'[logdna@48950 key="{KEY}" tags="blue,green"] {{"status":503}}'
    )
    message = read_frame(frame.encode())
    assert message is not None
    assert (message.key, message.tags) == (KEY, "blue,green")
    assert message.item["line"] == '{"status":503}'
    assert message.item["meta"]["structured_data"] == {
        "exampleSDID@32473": {"iut": "3", "eventSource": "App"}
    }
    assert message.item["level"] == "NOTICE"
    assert "procid" not in message.item["meta"]
    assert KEY not in repr(message.item)


def test_rfc3164_carries_the_element_at_the_start_of_its_message() -> None:
    frame = f'<38>Nov 26 10:00:01 box sshd[99]: [logdna@48950 key="{KEY}"] Accepted publickey'
    message = read_frame(frame.encode())
    assert message is not None
    assert message.key == KEY
    assert message.item["line"] == "Accepted publickey"
    assert (message.item["hostname"], message.item["app"]) == ("box", "sshd")
    assert message.item["level"] == "INFO"
    # No year and no zone: the receive time is the line's, the header's time is a field.
    assert "timestamp" not in message.item
    assert message.item["meta"]["timestamp"] == "Nov 26 10:00:01"
    assert message.item["meta"]["facility"] == "auth"


def test_lines_without_a_key() -> None:
    plain = read_frame(b"<13>1 2026-11-26T10:00:00Z h app - - - no element here")
    assert plain is not None
    assert plain.key is None
    other = read_frame(b'<13>1 2026-11-26T10:00:00Z h app - - [logdna@48950 tags="x"] hi')
    assert other is not None
    assert other.key is None
    empty = read_frame(b'<13>1 - h app - - [logdna@48950 key=""] hi')
    assert empty is not None
    assert empty.key is None
    huge = read_frame(f'<13>1 - h app - - [logdna@48950 key="{"k" * 500}"] hi'.encode())
    assert huge is not None
    assert huge.key is None
    assert read_frame(b"just some text") is None
    assert read_frame(b"<999>1 - h app - - - bad priority") is None


def test_nil_fields_and_repairs() -> None:
    message = read_frame(f'<14>1 - - - - - [logdna@48950 key="{KEY}"] \ufeffhi'.encode())
    assert message is not None
    assert message.item["hostname"] is None
    assert message.item["app"] is None
    assert message.item["timestamp"] is None
    assert message.item["line"] == "hi"
    assert not message.repaired
    bad_bytes = read_frame(f'<14>1 - h a - - [logdna@48950 key="{KEY}"] caf\xe9'.encode("latin-1"))
    assert bad_bytes is not None
    assert bad_bytes.repaired
    assert bad_bytes.item["line"] == "caf\ufffd"
    cut = read_frame(f'<14>1 - h a - - [logdna@48950 key="{KEY}"] hi'.encode(), truncated=True)
    assert cut is not None
    assert cut.repaired
