"""A line's id as a client gives it back (an export's ``_id``, live tail's
``Last-Event-ID``): its digits only, within 64 bits."""

from __future__ import annotations

from tidegate.logs.record import parse_line_id


def test_a_line_id_is_read_only_from_its_digits() -> None:
    assert parse_line_id(" 42 ") == 42
    assert parse_line_id(str(2**63 - 1)) == 2**63 - 1
    for text in (None, "", "0", "-1", "4.2", "seen", "\u0664\u0662", str(2**63), "9" * 400):
        assert parse_line_id(text) is None, text
