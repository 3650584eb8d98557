"""The parser: the tree each form builds, and a clear error for each malformed query."""

from __future__ import annotations

import re

import pytest
from tests.search.complexity import assert_linear
from tests.search.test_properties import UNEVEN_ENDINGS, repeated, tree_or_none

from tidegate.search import (
    MAX_NESTING_DEPTH,
    MAX_QUERY_LENGTH,
    QuerySyntaxError,
    compile_query,
    parser,
)
from tidegate.search.parser import parse


def tree(text: str) -> str:
    return str(parse(text)[0])


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("error", "error"),
        ('"disk full"', '"disk full"'),
        ("a b", "(a AND b)"),
        ("a AND b", "(a AND b)"),
        ("a OR b", "(a OR b)"),
        ("-a", "-a"),
        ("--a", "a"),
        ("---a", "-a"),
        # Precedence: parentheses, then '-', then OR, then AND.
        ("me myself OR I", "(me AND (myself OR I))"),
        ("a OR b c", "((a OR b) AND c)"),
        ("a AND b OR c", "(a AND (b OR c))"),
        ("a OR b AND c OR d", "((a OR b) AND (c OR d))"),
        ("-a OR b", "(-a OR b)"),
        ("-(a OR b) c", "(-(a OR b) AND c)"),
        ("(a b) OR c", "((a AND b) OR c)"),
        ("a OR b OR c", "(a OR b OR c)"),
        ("  a \t\n b  ", "(a AND b)"),
        ("a OR(b)", "(a OR b)"),
        # Keywords are upper case; anything else is a term.
        ("a or b", "(a AND or AND b)"),
        ("ANDROID ORACLE", "(ANDROID AND ORACLE)"),
        ("NOT a", "(NOT AND a)"),
        # Terms keep their punctuation; '-' only negates at the start.
        ("foo-bar /api/v1 192.168.0.1", "(foo-bar AND /api/v1 AND 192.168.0.1)"),
        ('"say \\"hi\\""', '"say \\"hi\\""'),
        ('"C:\\temp"', '"C:\\\\temp"'),
        # Fields.
        ("host:web", 'host:"web"'),
        ("-app:x", '-app:"x"'),
        ("user.id:12345", 'user.id:"12345"'),
        ("meta.x:y", 'meta.x:"y"'),
        ('msg:"a:b"', 'msg:"a:b"'),
        ("name:-x", 'name:"-x"'),
        ("name:a[1]", 'name:"a[1]"'),
        ('name:"*"', 'name:"*"'),
        ("name:=X", 'name:="X"'),
        ("name:==bob", 'name:=="bob"'),
        ("name:===Bob", 'name:==="Bob"'),
        ('name:=="a b"', 'name:=="a b"'),
        ("user:*", "user:*"),
        ("level:[warning,error]", 'level:("warning" OR "error")'),
        ('level:[ warning , "a:b" ]', 'level:("warning" OR "a:b")'),
        ("level:==[warn]", 'level:=="warn"'),
        ("response:>=400", "response:>=400"),
        ("response:>= 400", "response:>=400"),
        ("response:<-5", "response:<-5"),
        ("ratio:>0.5", "ratio:>0.5"),
        ("n:<=1e3", "n:<=1000.0"),
        ("response:(>=400 <500 -404)", 'response:(>=400 AND <500 AND -"404")'),
        ("status:(>100 AND <= 503)", "status:(>100 AND <=503)"),
        ("app:(web OR api) x", '(app:("web" OR "api") AND x)'),
        ("s:((>=200 <300) OR ==304)", 's:((>=200 AND <300) OR =="304")'),
        ("s:(*)", "s:*"),
        ("s:(==AND)", 's:=="AND"'),
        ("name:AND", 'name:"AND"'),
    ],
)
def test_tree(query: str, expected: str) -> None:
    assert tree(query) == expected


def test_fields_are_collected_as_written() -> None:
    query = compile_query('host:a user.id:1 -(meta.x:(>1) OR _retention:*) "a:b" plain')
    assert query.fields == frozenset({"host", "user.id", "meta.x", "_retention"})
    assert compile_query("just words").fields == frozenset()
    assert compile_query("_mezmo_line_size:>10").fields == {"_mezmo_line_size"}


@pytest.mark.parametrize(
    ("query", "reason", "column"),
    [
        ("", "the query is empty", 1),
        ("  \t ", "the query is empty", 1),
        ("(a", "unbalanced parenthesis: this '(' is never closed", 1),
        ("a (b (c)", "unbalanced parenthesis: this '(' is never closed", 3),
        ("a)", "unbalanced parenthesis: this ')' has no matching '('", 2),
        ("(a))", "unbalanced parenthesis: this ')' has no matching '('", 4),
        (")", "unbalanced parenthesis: this ')' has no matching '('", 1),
        ('"abc', "unbalanced quote: this '\"' is never closed", 1),
        ('a "b\\"', "unbalanced quote: this '\"' is never closed", 3),
        ('x:"abc', "unbalanced quote: this '\"' is never closed", 3),
        ("a AND", "AND has nothing after it", 3),
        ("a AND )", "AND has nothing after it", 3),
        ("(a AND)", "AND has nothing after it", 4),
        ("AND a", "AND has nothing before it", 1),
        ("OR a", "OR has nothing before it", 1),
        ("a OR", "OR has nothing after it", 3),
        ("(a OR )", "OR has nothing after it", 4),
        ("a AND OR b", "OR cannot follow AND", 7),
        ("a OR AND b", "AND cannot follow OR", 6),
        ("a OR OR b", "OR cannot follow OR", 6),
        ("-", "'-' must be directly followed by what it negates", 1),
        ("a - b", "'-' must be directly followed by what it negates", 3),
        ("(-)", "'-' must be directly followed by what it negates", 2),
        ("-AND", "'-' cannot negate AND; write \"AND\" for the word", 2),
        ("()", "empty parentheses", 1),
        ("a ( )", "empty parentheses", 3),
        ('""', "empty quoted phrase", 1),
        (":foo", "empty field name before ':'", 1),
        ("a..b:c", "field name 'a..b' has an empty part between dots", 1),
        (".a:b", "field name '.a' has an empty part between dots", 1),
        ("a.:b", "field name 'a.' has an empty part between dots", 1),
        ("x:", "missing value after 'x:'", 3),
        ("x: y", "missing value after 'x:' (no space is allowed after ':')", 3),
        ("(x:)", "missing value after 'x:'", 4),
        ("msg:a:b", "a ':' inside a value must be quoted, as in msg:\"a:b\"", 6),
        ("url:http://x", "a ':' inside a value must be quoted, as in url:\"http://x\"", 9),
        ("status:>=abc", "'>=' must be followed by a number, not 'abc'", 10),
        ("status:>=", "missing number after '>='", 8),
        ("status:(> )", "missing number after '>'", 9),
        ("status:>1x", "'>' must be followed by a number, not '1x'", 9),
        ("status:>nan", "'>' must be followed by a number, not 'nan'", 9),
        ("status:>1e999", "number '1e999' is out of range", 9),
        ("level:[]", "empty list", 7),
        ("level:[ ]", "empty list", 7),
        ("level:[a,,b]", "empty list item", 10),
        ("level:[a,]", "empty list item", 10),
        ("level:[(a)]", "unexpected '(' in the list; quote the item", 8),
        ("level:[a", "unbalanced bracket: this '[' is never closed", 7),
        ("level:[a,", "unbalanced bracket: this '[' is never closed", 7),
        ("level:[a b]", "expected ',' or ']' in the list, found 'b'", 10),
        ("level:[a:b]", "a ':' inside a list item must be quoted", 9),
        ("level:[a]b", "unexpected 'b' right after ']'; separate terms with spaces", 10),
        ("x:====y", "too many '='; use '=', '==' or '==='", 3),
        ("x:=", "missing value after '='", 3),
        ("x:==(a)", "missing value after '=='", 3),
        ("x:(a", "unbalanced parenthesis: this '(' is never closed", 3),
        ("x:()", "empty parentheses", 3),
        ("x:(a OR)", "OR has nothing after it", 6),
        ("x:(-AND)", "'-' cannot negate AND; write \"AND\" for the word", 5),
        ('x:"a":b', "unexpected ':' right after a quoted value; separate terms with spaces", 6),
        ("a(b)", "unexpected '(' right after a term; separate terms with spaces", 2),
        ('"a"b', "unexpected 'b' right after a quoted phrase; separate terms with spaces", 4),
        ('a"b"', "unexpected quote right after a term; quote the whole term", 2),
        ("(a)(b)", "unexpected '(' right after ')'; separate terms with spaces", 4),
        ("(a)AND b", "unexpected 'A' right after ')'; separate terms with spaces", 4),
        ("x:>1(", "unexpected '(' right after a number; separate terms with spaces", 5),
    ],
)
def test_syntax_errors(query: str, reason: str, column: int) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        compile_query(query)
    assert caught.value.reason == reason
    assert caught.value.position == column - 1
    assert str(caught.value) == f"{reason} (column {column})"


def test_query_syntax_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"column 1"):
        compile_query("(")


def test_length_is_capped() -> None:
    compile_query("a" * MAX_QUERY_LENGTH)
    with pytest.raises(QuerySyntaxError, match="the limit is 4096"):
        compile_query("a" * (MAX_QUERY_LENGTH + 1))


def test_long_values_are_shortened_in_messages() -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        compile_query("x:" + "a:" * 1000)
    assert len(str(caught.value)) < 120


@pytest.mark.parametrize("template", ["({})", "x:({})", "-({})"])
def test_nesting_is_capped(template: str) -> None:
    def nest(depth: int) -> str:
        query = "a"
        for _ in range(depth):
            query = template.format(query)
        return query

    compile_query(nest(MAX_NESTING_DEPTH if template != "x:({})" else 1))
    compile_query("x:" + "(" * MAX_NESTING_DEPTH + "a" + ")" * MAX_NESTING_DEPTH)
    with pytest.raises(QuerySyntaxError, match="at most 32 levels"):
        compile_query("(" * (MAX_NESTING_DEPTH + 1) + "a" + ")" * (MAX_NESTING_DEPTH + 1))
    with pytest.raises(QuerySyntaxError, match="at most 32 levels"):
        compile_query("x:" + "(" * 33 + "a" + ")" * 33)
    with pytest.raises(QuerySyntaxError, match="at most 32 levels"):
        compile_query("(" * 20 + "x:" + "(" * 13 + "a" + ")" * 33)


def test_negation_runs_do_not_nest() -> None:
    assert tree("-" * 4000 + "a") == "a"
    assert tree("-" * 4001 + "a") == "-a"


@pytest.mark.parametrize("chunk", [*UNEVEN_ENDINGS, " OR"])
def test_or_chains_parse_in_linear_time(chunk: str) -> None:
    """Shapes once reported as quadratic: the query of 2,048 characters ends in an operator
    with nothing after it, the one of 4,096 parses; the parser's own work doubles."""
    assert_linear(lambda size: lambda: tree_or_none(repeated(chunk, size)), 2048)


# A single character class under '*', matched where the parser stands: the engine reads
# the run once and has nothing to backtrack into (no alternatives, nothing after it).
_ONE_CLASS_REPEATED = re.compile(r"(?:\\s|\[\^(?:[^\]\\]|\\.)*\])\*")


def test_the_parser_scans_the_query_with_single_class_runs_only() -> None:
    """``assert_linear`` does not see work inside ``re``: the parser's own patterns must
    be linear by their shape."""
    patterns = [value for value in vars(parser).values() if isinstance(value, re.Pattern)]
    assert len(patterns) >= 5
    for pattern in patterns:
        assert _ONE_CLASS_REPEATED.fullmatch(pattern.pattern), pattern.pattern
