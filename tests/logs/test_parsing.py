"""Line parsing (tidegate.logs.parsing): each form of the corpus yields its fields and
level, lines that are not in a known form stay plain text, what is parsed is bounded,
and the work is linear in the line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.logs.parsing_corpus import CORPUS, Case
from tests.property_sizes import examples
from tests.search.complexity import calls_made

from tidegate.logs import parsing
from tidegate.logs.exclusion import RuleSet
from tidegate.logs.intake import judge_lines
from tidegate.logs.parsing import MAX_FIELDS, MAX_PARSED_CHARS, parse_line, parse_text
from tidegate.logs.store import NewLine, line_rows
from tidegate.search import LogLine, compile_query


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_corpus(case: Case) -> None:
    line = parse_line(NewLine(line=case.line, ts=0, host="h"))
    if case.fields is None:
        assert line.meta is None
    else:
        assert line.meta is not None
        assert {name: line.meta.get(name) for name in case.fields} == case.fields
    assert line.level == case.level
    for query in case.finds:
        assert compile_query(query).matches(
            LogLine(line.line, host=line.host, level=line.level, meta=line.meta)
        ), query


def test_the_senders_meta_wins_and_a_level_field_overrides_the_senders_level() -> None:
    line = parse_line(
        NewLine(
            line='{"level":"debug","region":"parsed","status":500}',
            ts=0,
            host="h",
            level="INFO",
            meta={"region": "sent"},
        )
    )
    assert line.level == "debug"
    assert line.meta == {"level": "debug", "region": "sent", "_status": 500}


def test_a_level_from_the_text_or_a_format_never_replaces_the_senders() -> None:
    for text in ("2025-11-22 08:00:01 ERROR broke", "<11>Oct 11 22:14:15 h su: x"):
        assert parse_line(NewLine(line=text, ts=0, host="h", level="INFO")).level == "INFO"


def test_a_query_for_a_reserved_name_finds_both_spellings() -> None:
    query = compile_query("status:200")
    assert query.matches(LogLine("x", meta={"status": 200}))
    assert query.matches(LogLine("x", meta={"_status": 200}))
    assert query.matches(LogLine("x", meta={"status": 500, "_status": 200}))
    assert not query.matches(LogLine("x", meta={"status": 500, "_status": 404}))
    assert compile_query("-status:200").matches(LogLine("x", meta={"_status": 404}))
    # A name that is not reserved is not looked up with a prefix.
    assert not compile_query("took:1").matches(LogLine("x", meta={"_took": 1}))


def test_a_line_too_long_to_parse_is_plain_text_with_its_level() -> None:
    text = "ERROR " + json.dumps({"pad": "x" * MAX_PARSED_CHARS})
    parsed = parse_text(text)
    assert parsed.fields is None
    assert parsed.level == "ERROR"


def test_fields_are_capped_and_deep_objects_kept_as_text() -> None:
    wide = {f"k{index}": index for index in range(MAX_FIELDS + 50)}
    fields = parse_text(json.dumps(wide)).fields
    assert fields is not None
    assert len(fields) == MAX_FIELDS
    deep: dict[str, object] = {"leaf": 1}
    for _ in range(parsing.MAX_DEPTH + 2):
        deep = {"d": deep}
    fields = parse_text(json.dumps(deep)).fields
    assert fields is not None
    node: object = fields
    for _ in range(parsing.MAX_DEPTH - 1):
        assert isinstance(node, dict)
        node = node["d"]
    assert isinstance(node, dict)
    assert isinstance(node["d"], str)
    assert json.loads(node["d"])["d"]


def test_a_long_list_counts_against_the_field_cap() -> None:
    fields = parse_text(json.dumps({"a": list(range(5 * MAX_FIELDS)), "b": 1})).fields
    assert fields is not None
    assert len(fields["a"]) < MAX_FIELDS
    assert "b" not in fields


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "{" * n + "}",
        lambda n: "x {" * n + '{"a":1}',
        lambda n: "a=" * n,
        lambda n: 'k="' + "\\" * n,
        lambda n: "a=b " * n + "c",
        lambda n: '1.2.3.4 - - [x] "' + "\\" * n + '" 200 1',
        lambda n: "<13>1 t h a p m " + '[x a="' * n,
        lambda n: "2025/11/22 08:00:01 [error] 1#2: , client: " + ", server: " * n,
        lambda n: "Oct 11 22:14:15 h a: " + "x" * n,
        lambda n: "[" * n,
        lambda n: "2025-11-22 08:00:01 UTC [1] " + "@" * n,
        lambda n: "1:M 22 Nov 2025 08:00:01.123 * " + "x" * n,
        lambda n: "22-Nov-2025 08:00:01.123 INFO [" + "]" * n,
        lambda n: "I, [2025-11-22T08:00:01 #1]  INFO -- " + ":" * n,
        lambda n: "2025/11/22 08:00:01 " + "a.go:1: " * n,
        lambda n: 'http 2025-11-22T08:00:01.1Z a b c 1 1 1 200 200 1 1 "' + '\\"' * n,
        lambda n: "1.2.3.4:5 [22/Nov/2025:08:00:01.655] a b/c 1/1/1/1/1 200 1 " + '"' * n,
        lambda n: (
            "<134>Nov 22 08:00:01 haproxy[1]: 1.2.3.4:5 [22/Nov/2025:08:00:01.655] a b/c "
            + "1/" * n
        ),
        lambda n: "<134>Nov 22 08:00:01 " + "a" * n + "[1]: x",
        lambda n: "Nov 22 08:00:01 " + "[" * n,
        lambda n: "REPORT RequestId: 8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f\t" + "Duration: " * n,
        lambda n: "REPORT RequestId: 8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f\t" + "a: 1 ms\t" * n,
        lambda n: "START RequestId: 8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f Version: " + "x" * n,
        lambda n: (
            "2025-11-22T08:00:01.123Z\t8f507cfc-0a1b-4c2d-9e3f-4a5b6c7d8e9f\tERROR\t" + "\t" * n
        ),
        lambda n: "2025-11-22T08:00:01.123Z " + "2025-11-22T08:00:01.123Z " * (n // 25),
    ],
)
def test_parsing_is_linear(make: object) -> None:
    assert callable(make)
    small, large = make(1_000), make(2_000)
    assert len(large) <= MAX_PARSED_CHARS
    work_small = calls_made(lambda: parse_text(small))
    work_large = calls_made(lambda: parse_text(large))
    assert work_large <= 2 * work_small + 50


def test_nothing_raises_on_odd_text() -> None:
    for text in (
        "",
        " ",
        "}",
        "{",
        "\ud800}",
        '{"\\ud800": 1}',
        "<999>Oct 11 22:14:15 h a: x",
        "=",
        "a= b=c",
    ):
        parse_text(text)


def test_the_writer_parses_and_can_be_told_not_to() -> None:
    text = '{"status":503}'
    parsed = judge_lines(
        account_id="a",
        lines=[NewLine(line=text, ts=0, host="h")],
        rules=RuleSet.from_rows([]),
        received_ms=0,
    )
    assert parsed.stored[0].meta == {"_status": 503}
    plain = judge_lines(
        account_id="a",
        lines=[NewLine(line=text, ts=0, host="h")],
        rules=RuleSet.from_rows([]),
        received_ms=0,
        parse=False,
    )
    assert plain.stored[0].meta is None


# Pieces of the forms the parser knows, so that drawn texts come near each of them.
PIECES = [
    "{", "}", "[", "]", '"', "\\", ":", ",", "=", " ", "<34>", "<165>1 ", "Oct 11 22:14:15 ",
    "2025/11/22 08:00:01 [error] 1#2: ", ", client: ", '"GET / HTTP/1.1" ', "200 ", "- - ",
    "[10/Oct/2000:13:55:36 -0700] ", "level", "status", "_source", "ERROR", "msg", "1e3",
    "é", "\ud800", "\x00", "null", "true", "-",
]  # fmt: skip
TEXTS = st.one_of(
    st.text(max_size=80),
    st.lists(st.sampled_from(PIECES), max_size=24).map("".join),
    st.dictionaries(
        st.sampled_from(["level", "status", "message", "a"]), st.integers() | st.text(max_size=5)
    ).map(json.dumps),
)


@settings(max_examples=examples(400))
@given(
    text=TEXTS, level=st.sampled_from([None, "INFO"]), meta=st.sampled_from([None, {"status": 1}])
)
def test_a_line_is_never_lost_or_changed_by_parsing(
    text: str, level: str | None, meta: dict[str, int] | None
) -> None:
    line = parse_line(NewLine(line=text, ts=0, host="h", level=level, meta=meta))
    assert line.line == text
    assert line.size_bytes == NewLine(line=text, ts=0, host="h").size_bytes
    if meta is not None:
        assert line.meta is not None
        assert line.meta["status"] == 1  # the sender's meta wins
    if line.level is not None:
        assert 0 < len(line.level) <= 64
    # What is stored can be written: the row builds.
    assert line_rows("a", 0, [line])


def test_a_parser_failure_leaves_the_line_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_text: str) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(parsing, "_logfmt", broken)
    line = parse_line(NewLine(line="a=1 b=2", ts=0, host="h", level="INFO"))
    assert (line.line, line.meta, line.level) == ("a=1 b=2", None, "INFO")
