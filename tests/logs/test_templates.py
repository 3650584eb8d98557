"""Templates in the parser (``tidegate.logs.templates``): fields shaped as the built-in
parsers shape theirs, the first active match in order, the fall-through, the bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tidegate.logs.parsing import MAX_PARSED_CHARS, Parsed, parse_line, parse_text
from tidegate.logs.store import NewLine
from tidegate.logs.templates import TemplateSet, template_fields
from tidegate.models import ParsingTemplate
from tidegate.processing.grok import TemplatePattern


def templates(*patterns: str) -> TemplateSet:
    return TemplateSet([TemplatePattern(pattern) for pattern in patterns])


def test_fields_nest_take_the_reserved_prefix_and_keep_the_first_value() -> None:
    parsed = template_fields(
        [
            ("status", 503),
            ("user.id", 42),
            ("user.name", "ann"),
            ("a.b.c", "deep"),
            ("plain", "x"),
            ("plain.child", "dropped: plain is not an object"),
            ("plain", "second"),
            ("_source", "k8s"),
        ]
    )
    assert parsed.fields == {
        "_status": 503,
        "user": {"id": 42, "name": "ann"},
        "a": {"b": {"c": "deep"}},
        "plain": "x",
        "__source": "k8s",
    }
    assert parsed.level is None


def test_a_level_capture_sets_the_level_in_its_canonical_spelling() -> None:
    assert template_fields([("level", " err ")]) == Parsed(
        fields={"level": " err "}, level="ERROR", overrides=True
    )
    assert template_fields([("level", "custom")]).level == "custom"
    assert template_fields([("level", "  ")]).level is None


def test_the_first_matching_template_wins_and_others_fall_through() -> None:
    chosen = templates(r"^(?P<first>a+)$", r"^x(?P<second>a)", r"id=%{INT:id:int}")
    assert parse_text("aaa", chosen.parse).fields == {"first": "aaa"}
    assert parse_text("xa", chosen.parse).fields == {"second": "a"}
    # None matches: the built-in forms, then the level word, as without templates.
    assert parse_text('{"status":1}', chosen.parse) == parse_text('{"status":1}')
    assert parse_text("ERROR x", chosen.parse) == Parsed(level="ERROR")
    # Without a level capture, a level word at the start still fills a missing level.
    assert parse_text("WARN id=7", chosen.parse) == Parsed(fields={"id": 7}, level="WARN")


def test_a_template_overrides_the_senders_level_and_the_senders_meta_wins() -> None:
    line = NewLine(line="crit code=9", ts=1, host="h", level="INFO", meta={"code": "sent"})
    parsed = parse_line(line, templates(r"^%{LOGLEVEL:level} code=%{INT:code:int}").parse)
    assert parsed.level == "CRITICAL"
    assert parsed.meta == {"level": "crit", "code": "sent"}


def test_lines_past_the_parsed_length_are_not_given_to_templates() -> None:
    text = "k=" + "v" * MAX_PARSED_CHARS
    assert parse_text(text, templates(r"k=(?P<k>v+)").parse).fields is None


def test_a_failing_template_never_fails_the_line() -> None:
    def broken(_text: str) -> Parsed | None:
        raise RuntimeError("a bug")

    line = parse_line(NewLine(line="ERROR boom", ts=1, host="h"), broken)
    assert (line.line, line.meta) == ("ERROR boom", None)


def _row(pattern: str, state: str, position: int, minutes: int = 0) -> ParsingTemplate:
    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)
    return ParsingTemplate(
        id=f"t{position}{minutes}",
        account_id="a",
        name="t",
        pattern=pattern,
        state=state,
        position=position,
        created_at=at,
        updated_at=at,
    )


def test_from_rows_keeps_the_active_ones_in_order_and_leaves_out_a_broken_one() -> None:
    rows = [
        _row(r"(?P<third>x)", "active", 2),
        _row(r"(?P<draft>x)", "draft", 0),
        _row(r"(?P<inactive>x)", "inactive", 0),
        _row(r"(?P<broken>x", "active", 0),
        _row(r"(?P<second>x)", "active", 1, minutes=1),
        _row(r"(?P<first>x)", "active", 1),
    ]
    chosen = TemplateSet.from_rows(rows)
    assert [pattern.field_names for pattern in chosen.patterns] == [
        ["first"],
        ["second"],
        ["third"],
    ]
    assert not TemplateSet.from_rows([_row(r"(?P<d>x)", "draft", 0)])
