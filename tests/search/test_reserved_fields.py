"""The platform's ``_``-prefixed field names (docs/search-syntax.md, "Reserved fields"):
``_account:*`` (what ``mzm log search`` sends by default) matches every line."""

from __future__ import annotations

import pytest

from tidegate.search import BUILTIN_FIELDS, LogLine, compile_query


def matches(query: str, line: LogLine) -> bool:
    return compile_query(query).matches(line)


@pytest.mark.parametrize(
    "line",
    [
        LogLine("x"),
        LogLine("", host="h", account="a1b2"),
        LogLine("anything", app="api", level="ERROR", meta={"_account": None}),
    ],
)
def test_account_star_matches_every_line(line: LogLine) -> None:
    assert matches("_account:*", line)
    assert not matches("-_account:*", line)
    assert matches("_account:* error", LogLine("an error", account="a1")) is True
    assert not matches("_account:* nothing", line)


def test_account_values_test_the_lines_account() -> None:
    line = LogLine("x", account="a1b2c3")
    assert matches("_account:a1b", line)
    assert matches("_account:A1B", line)  # case-insensitive, as every field
    assert not matches("_account:=A1B", line)
    assert matches("_account:==a1b2c3", line)
    assert not matches("_account:==a1b", line)
    assert not matches("_account:ff", line)
    assert matches("_account:[ff,a1]", line)
    # An account nobody told the matcher about matches no value (but still "*").
    assert not matches("_account:a1", LogLine("x"))


def test_host_app_file_line_are_the_built_ins() -> None:
    line = LogLine("Error: disk full", host="web-1", app="api", file="/var/log/x")
    for reserved, plain in [
        ("_host:web", "host:web"),
        ("_app:==API", "app:==API"),
        ("_file:=/var", "file:=/var"),
        ("-_app:api", "-app:api"),
        ("_host:db", "host:db"),
    ]:
        assert matches(reserved, line) == matches(plain, line), reserved
    assert matches("_line:err", line)  # a prefix of the whole text
    assert not matches("_line:disk", line)  # not a word start, unlike the bare term
    assert matches("disk", line)
    assert matches('_line:=="error: disk full"', line)
    assert not matches('_line:==="error: disk full"', line)
    assert matches("_line:*", LogLine(""))


def test_other_underscore_names_stay_meta_fields() -> None:
    """``_level``, ``_tag``, ``_ip`` ... are not built in: looked up in meta like any
    other name (docs/search-syntax.md says which are built in)."""
    assert "_level" not in BUILTIN_FIELDS
    assert matches("_level:x", LogLine("", level="x", meta={"_level": "x"}))
    assert not matches("_level:x", LogLine("", level="x"))
    assert {"_account", "_host", "_app", "_file", "_line"} <= BUILTIN_FIELDS
    assert compile_query("_account:* _app:x").fields == frozenset({"_account", "_app"})
