"""What each form of the syntax matches, and what it does not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.property_sizes import examples
from tests.search.complexity import assert_linear

from tidegate.search import BUILTIN_FIELDS, LogLine, compile_query
from tidegate.search.compiler import RESERVED_FIELDS


def line(text: str = "", *, meta: Mapping[str, object] | None = None, **fields: str) -> LogLine:
    return LogLine(text, meta=meta, **fields)


def check(query: str, matching: list[LogLine], not_matching: list[LogLine]) -> None:
    compiled = compile_query(query)
    for candidate in matching:
        assert compiled.matches(candidate), f"{query!r} should match {candidate}"
    for candidate in not_matching:
        assert not compiled.matches(candidate), f"{query!r} should not match {candidate}"


# -- bare terms and phrases ------------------------------------------------------------


def test_term_matches_the_start_of_any_word_case_insensitively() -> None:
    check(
        "err",
        [line("err"), line("Error: disk full"), line("an ERROR occurred"), line("user-error")],
        [line("terror"), line("user_error"), line("e r r"), line("")],
    )


def test_term_found_first_inside_a_word_is_looked_for_further() -> None:
    check("err", [line("xerr yerr err"), line("xerr\terr")], [line("xerr yerr"), line("xer r")])


def test_term_search_is_linear_on_hostile_lines() -> None:
    query = compile_query("ab")
    assert not query.matches(LogLine("xab" * 200_000))
    assert_linear(lambda n: lambda: query.matches(LogLine("xab" * n)), 20_000)


def test_term_with_punctuation_found_first_inside_a_word_is_looked_for_further() -> None:
    check(
        "a.b",
        [line("xa.b a.b"), line("xa.b.a.b"), line("xa.b\x00a.b"), line("xa.a.b")],
        [line("xa.b ya.b"), line("xa.b_a.b"), line("xa.ba.b"), line("xa.b a.c")],
    )
    check(
        "a.\x00b", [line("xa.\x00b a.\x00b")], [line("xa.\x00b a.b"), line("xa.\x00b a.\x00\x00b")]
    )


def _starts_a_word_somewhere(term: str, text: str) -> bool:
    folded, term = text.casefold(), term.casefold()
    return any(
        folded.startswith(term, at)
        and (at == 0 or not (folded[at - 1].isalnum() or folded[at - 1] == "_"))
        for at in range(len(folded))
    )


_WORD_START_CHARS = "ab1_é"
_TERM_CHARS = _WORD_START_CHARS + "./\x00"


@settings(max_examples=examples(300))
@given(
    st.builds(
        str.__add__,
        st.sampled_from(_WORD_START_CHARS),
        st.text(_TERM_CHARS, max_size=5),
    ),
    st.text(_TERM_CHARS + " xÉ", max_size=30),
)
def test_term_matches_where_it_starts_a_word(term: str, text: str) -> None:
    assert compile_query(term).matches(line(text)) == _starts_a_word_somewhere(term, text)


def test_term_with_punctuation_inside_starts_at_a_word() -> None:
    check(
        "192.168",
        [line("from 192.168.0.1"), line("ip=192.168.0.1")],
        [line("10192.168.0.1"), line("192-168")],
    )


def test_term_starting_with_punctuation_matches_anywhere() -> None:
    check("/api", [line("GET /api/v1"), line("x/api")], [line("api"), line("/ap")])
    check("[error]", [line("2024 [ERROR] boom")], [line("error")])


def test_term_is_case_folded_beyond_ascii() -> None:
    check("strasse", [line("Hauptstraße STRASSE")], [line("Hauptstrasse")])
    check("straße", [line("STRASSE 5")], [])
    check("école", [line("ÉCOLE normale")], [line("lécole")])


def test_term_is_not_matched_against_fields() -> None:
    check("web", [line("web")], [line("x", host="web", app="web", meta={"web": "web"})])


def test_phrase_is_a_case_insensitive_substring() -> None:
    check(
        '"disk full"',
        [line("ERROR: Disk Full now"), line("undisk fuller")],
        [line("disk  full"), line("disk"), line("full disk")],
    )
    check('"a:b"', [line("x a:b")], [line("a b")])
    check('"AND"', [line("this and that"), line("android")], [line("a n d")])
    check('"say \\"hi\\""', [line('they say "hi" twice')], [line("they say hi")])
    check('"C:\\temp"', [line("dir c:\\TEMP")], [line("c:/temp")])


# -- boolean structure -----------------------------------------------------------------


def test_whitespace_and_explicit_and() -> None:
    for query in ("disk full", "disk AND full", "full\tAND\ndisk"):
        check(query, [line("disk is full"), line("FULL DISK")], [line("disk"), line("full")])


def test_or() -> None:
    check("disk OR cpu", [line("disk"), line("cpu"), line("cpu disk")], [line("memory")])


def test_not() -> None:
    check("-debug", [line("info"), line("")], [line("DEBUG x"), line("x debugging")])
    check("error -timeout", [line("error here")], [line("error timeout"), line("timeout")])
    check("--debug", [line("debug")], [line("info")])


def test_or_binds_tighter_than_and() -> None:
    # me AND (myself OR I), never (me AND myself) OR I.
    check(
        "me myself OR I",
        [line("me myself"), line("me I"), line("I me")],
        [line("I"), line("myself"), line("me")],
    )
    check("a OR b c", [line("a c"), line("b c")], [line("a b"), line("c")])
    check("a AND b OR c", [line("a b"), line("a c")], [line("b c"), line("a")])


def test_negation_binds_tighter_than_or() -> None:
    check("-a OR b", [line("b"), line("x"), line("a b")], [line("a")])


def test_parentheses_override_precedence() -> None:
    check("(me myself) OR I", [line("I"), line("me myself")], [line("me"), line("myself")])
    check("-(a OR b)", [line("c")], [line("a"), line("b")])
    check("-(a b)", [line("a"), line("b"), line("c")], [line("a b")])


def test_lower_case_keywords_are_terms() -> None:
    check("a or b", [line("a or b")], [line("a"), line("b")])


# -- fields ----------------------------------------------------------------------------


# The reserved ``_`` names: tests/search/test_reserved_fields.py.
@pytest.mark.parametrize("field", sorted(BUILTIN_FIELDS - RESERVED_FIELDS.keys()))
def test_builtin_fields_are_case_insensitive_prefixes(field: str) -> None:
    def with_field(value: str) -> LogLine:
        changes: dict[str, Any] = {field: value}
        return replace(LogLine(""), **changes)

    check(
        f"{field}:web",
        [with_field("web"), with_field("WEB-01")],
        [line("web"), with_field("a-web"), line(meta={field: "web"})],
    )
    check(f"-{field}:web", [line(), with_field("api")], [with_field("webserver")])


def test_builtin_fields_are_the_documented_six_and_the_reserved_names() -> None:
    assert {"host", "app", "level", "source", "file", "namespace"} == (
        BUILTIN_FIELDS - RESERVED_FIELDS.keys()
    )
    assert {"_account", "_host", "_app", "_file", "_line"} == RESERVED_FIELDS.keys()


def test_field_value_is_a_prefix_of_the_whole_value_not_of_its_words() -> None:
    check("app:server", [line(app="server-1")], [line(app="web server")])


def test_builtin_field_names_are_lower_case() -> None:
    check("HOST:a", [line(meta={"HOST": "a"})], [line(host="a")])


def test_other_fields_are_looked_up_in_meta() -> None:
    check(
        "user.id:12345",
        [
            line(meta={"user": {"id": 12345}}),
            line(meta={"user": {"id": "123456"}}),
            line(meta={"user.id": 12345}),
        ],
        [
            line(),
            line(meta={}),
            line(meta={"user": {"id": 999}}),
            line(meta={"user": "12345"}),
            line(meta={"user": {"id": None}}),
            line(meta={"id": 12345}),
        ],
    )
    check("response:200", [line(meta={"response": 200})], [line(meta={"response": 404})])


def test_flat_dotted_key_wins_over_nesting() -> None:
    both = {"user.id": 1, "user": {"id": 2}}
    check("user.id:1", [line(meta=both)], [])
    check("user.id:2", [line(meta={"user.id": None, "user": {"id": 2}})], [line(meta=both)])


def test_meta_prefix_is_explicit() -> None:
    check("meta.x:y", [line(meta={"x": "yes"})], [line(meta={"meta": {"x": "y"}})])
    check("meta.user.id:1", [line(meta={"user": {"id": 1}})], [])
    check("meta:*", [line(meta={}), line(meta={"a": 1})], [line()])


def test_dotted_builtin_name_is_a_meta_path() -> None:
    check("host.name:x", [line(meta={"host": {"name": "x"}})], [line(host="x")])


def test_array_values_match_when_one_element_does() -> None:
    check(
        "tags:prod",
        [line(meta={"tags": ["dev", "production"]}), line(meta={"tags": ("prod",)})],
        [line(meta={"tags": ["dev"]}), line(meta={"tags": []}), line(meta={"tags": [None]})],
    )
    check("codes:>=500", [line(meta={"codes": [200, 503]})], [line(meta={"codes": [200]})])
    check("tags:(-prod)", [line(meta={"tags": ["prod", "dev"]})], [line(meta={"tags": ["prod"]})])


def test_scalar_spelling_of_non_strings() -> None:
    check("ok:true", [line(meta={"ok": True})], [line(meta={"ok": False})])
    check("ok:==FALSE", [line(meta={"ok": False})], [line(meta={"ok": "falsey"})])
    check("ratio:0.5", [line(meta={"ratio": 0.5}), line(meta={"ratio": 0.55})], [])
    check("user:x", [], [line(meta={"user": {"x": 1}}), line(meta={"user": None})])


def test_exists() -> None:
    check(
        "user:*",
        [line(meta={"user": "x"}), line(meta={"user": {}}), line(meta={"user": 0})],
        [line(), line(meta={"user": None}), line(meta={"users": 1}), line(meta={"user": []})],
    )
    check("app:*", [line(app="")], [line()])
    check("-app:*", [line()], [line(app="x")])


def test_quoted_star_is_a_literal() -> None:
    check('name:"*"', [line(meta={"name": "*x"})], [line(meta={"name": "bob"})])


def test_a_colon_inside_a_value_is_quoted() -> None:
    check('msg:"a:b"', [line(meta={"msg": "A:b c"})], [line(meta={"msg": "a b"})])
    check('url:=="http://x"', [line(meta={"url": "http://X"})], [line(meta={"url": "http://xy"})])


# -- modifiers -------------------------------------------------------------------------


def test_case_sensitive_prefix() -> None:
    check("name:=Bo", [line(meta={"name": "Bob"})], [line(meta={"name": "bob"})])


def test_exact_term() -> None:
    check(
        "name:==bob",
        [line(meta={"name": "bob"}), line(meta={"name": "BOB"})],
        [line(meta={"name": "bobby"}), line(meta={"name": "bo"}), line()],
    )


def test_exact_and_case_sensitive() -> None:
    check(
        "name:===Bob",
        [line(meta={"name": "Bob"})],
        [line(meta={"name": "bob"}), line(meta={"name": "Bobby"})],
    )
    check('name:===""', [line(meta={"name": ""})], [line(meta={"name": "x"})])


def test_exact_numbers_compare_numerically() -> None:
    check(
        "status:==400",
        [line(meta={"status": 400}), line(meta={"status": 400.0}), line(meta={"status": "400"})],
        [line(meta={"status": 4000}), line(meta={"status": "400.0"}), line(meta={"status": True})],
    )


# -- comparisons -----------------------------------------------------------------------


def test_comparisons() -> None:
    status = [399, 400, 401]
    for query, expected in [
        ("response:>=400", [False, True, True]),
        ("response:>400", [False, False, True]),
        ("response:<400", [True, False, False]),
        ("response:<=400", [True, True, False]),
        ("response:>= 400", [False, True, True]),
    ]:
        compiled = compile_query(query)
        assert [compiled.matches(line(meta={"response": s})) for s in status] == expected


def test_comparisons_read_numeric_strings_and_floats() -> None:
    check(
        "response:>=400",
        [line(meta={"response": "404"}), line(meta={"response": 400.5})],
        [
            line(),
            line(meta={"response": "abc"}),
            line(meta={"response": True}),
            line(meta={"response": " 404"}),
            line(meta={"response": None}),
            line(meta={"response": {"code": 500}}),
            line(meta={"response": float("nan")}),
        ],
    )
    check("level:>=400", [line(level="500")], [line(level="warn")])
    check("temp:<-5", [line(meta={"temp": -10})], [line(meta={"temp": -5})])
    check("ratio:>0.5", [line(meta={"ratio": 0.75})], [line(meta={"ratio": "0.5"})])
    check("n:>1e3", [line(meta={"n": 1001})], [line(meta={"n": 1000})])
    check("n:<1", [line(meta={"n": "-1e400"})], [line(meta={"n": "1" * 5000})])


def test_compound_comparison() -> None:
    check(
        "response:(>=400 <500 -404)",
        [line(meta={"response": 403}), line(meta={"response": 499})],
        [line(meta={"response": r}) for r in (399, 404, 500)] + [line()],
    )
    check(
        "status:(>100 AND <= 503)",
        [line(meta={"status": 101}), line(meta={"status": 503})],
        [line(meta={"status": 100}), line(meta={"status": 504})],
    )
    check(
        "s:((>=200 <300) OR ==304)",
        [line(meta={"s": 200}), line(meta={"s": 304})],
        [line(meta={"s": 302})],
    )


def test_a_field_group_needs_the_field_but_a_negated_field_does_not() -> None:
    check("response:(-404)", [line(meta={"response": 200})], [line()])
    check("-response:404", [line(), line(meta={"response": 200})], [line(meta={"response": 404})])
    check("-response:>=400", [line(), line(meta={"response": "x"})], [line(meta={"response": 500})])


def test_value_groups_with_or_and_modifiers() -> None:
    check("app:(web OR api)", [line(app="webx"), line(app="api")], [line(app="db")])
    check("name:(=Bo -==Bob)", [line(meta={"name": "Boa"})], [line(meta={"name": "Bob"})])


# -- lists -----------------------------------------------------------------------------


def test_list_is_any_of() -> None:
    check(
        "level:[warning,error]",
        [line(level="WARNING"), line(level="error"), line(level="Errors")],
        [line(level="info"), line(), line(level="warn")],
    )
    check("level:[ warn , err ]", [line(level="warning")], [line(level="info")])
    check("-level:[debug,trace]", [line(level="info"), line()], [line(level="DEBUG")])


def test_list_with_modifier_and_quoted_items() -> None:
    check("level:==[warn,error]", [line(level="WARN")], [line(level="warning")])
    check("level:===[Warn]", [line(level="Warn")], [line(level="WARN")])
    check("name:=[Bo,Al]", [line(meta={"name": "Bob"}), line(app="x", meta={"name": "Al"})], [])
    check("name:=[Bo,Al]", [], [line(meta={"name": "bob"}), line(meta={"name": "al"})])
    check(
        "status:==[400,404]",
        [line(meta={"status": 404}), line(meta={"status": 400.0}), line(meta={"status": "404"})],
        [line(meta={"status": 4040}), line(meta={"status": [200, 500]})],
    )
    check("name:(==bob OR =Al)", [line(meta={"name": "BOB"}), line(meta={"name": "Alf"})], [])
    check("name:(==bob OR =Al)", [], [line(meta={"name": "bobby"}), line(meta={"name": "al"})])
    check("app:(==web OR ===Api)", [line(app="WEB"), line(app="Api")], [line(app="api")])
    check('url:["http://a",b]', [line(meta={"url": "http://a/x"}), line(meta={"url": "b"})], [])


# -- combined --------------------------------------------------------------------------


def test_a_realistic_exclusion_rule() -> None:
    check(
        'level:[debug,trace] OR app:healthcheck -"keep me" response:(<400)',
        [line("GET /health", app="healthcheck", meta={"response": 200})],
        [
            line("GET /health keep me", app="healthcheck", meta={"response": 200}),
            line("GET /health", app="healthcheck", meta={"response": 503}),
            line("GET /health", app="healthcheck"),
            line("x", app="api", level="info", meta={"response": 200}),
        ],
    )


def test_query_repr_and_attributes() -> None:
    query = compile_query("host:a")
    assert repr(query) == "Query('host:a')"
    assert query.text == "host:a"
