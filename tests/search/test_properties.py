"""Properties of the syntax, checked against a small independent model and by fuzzing."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.property_sizes import examples
from tests.search.complexity import assert_linear

from tidegate.search import LogLine, QuerySyntaxError, compile_query
from tidegate.search.compiler import compile_line
from tidegate.search.nodes import LineNode
from tidegate.search.parser import parse

# -- a test-side model of a subset of the syntax -----------------------------------------

VOCABULARY = ["error", "err", "warn", "warning", "disk", "full", "me", "myself", "i", "x1"]
SEPARATORS = [" ", "  ", "-", ".", "/", ": ", "_", ", "]
WHITESPACE = [" ", "  ", "\t", "\n", " \t\r\n "]
OPERATORS: dict[str, Callable[[int, int], bool]] = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
}
Space = Callable[[], str]


def single_space() -> str:
    return " "


@dataclass(frozen=True)
class Model:
    """A query with its rendering and an oracle written independently of the library."""

    kind: str
    args: tuple[object, ...]

    def render(self, space: Space = single_space) -> str:
        kind, args = self.kind, self.args
        if kind == "term":
            return str(args[0])
        if kind == "phrase":
            return f'"{args[0]} {args[1]}"'
        if kind == "app":
            return f"app:{args[0]}"
        if kind == "applist":
            return "app:[" + ",".join(map(str, args)) + "]"
        if kind == "status":
            return f"status:{args[0]}{args[1]}"
        if kind == "range":
            return f"status:({space()}>={args[0]}{space()}<{space()}{args[1]}{space()})"
        if kind == "not":
            (inner,) = args
            assert isinstance(inner, Model)
            return "-" + inner.render(space)
        parts = [m.render(space) for m in args if isinstance(m, Model)]
        joiner = {"and": "AND", "or": "OR"}[kind]
        body = "".join(
            (f"{space()}{joiner}{space()}" if index else "") + part
            for index, part in enumerate(parts)
        )
        return f"({space()}{body}{space()})"

    def oracle(self, line: LogLine) -> bool:
        kind, args = self.kind, self.args
        if kind == "term":
            words = re.split(r"\W+", line.line.casefold())
            return any(word.startswith(str(args[0])) for word in words)
        if kind == "phrase":
            return f"{args[0]} {args[1]}" in line.line.casefold()
        if kind == "app":
            return line.app is not None and line.app.casefold().startswith(str(args[0]))
        if kind == "applist":
            return any(Model("app", (word,)).oracle(line) for word in args)
        status = numeric_status(line)
        if kind == "status":
            op, limit = args
            assert isinstance(op, str)
            assert isinstance(limit, int)
            return status is not None and OPERATORS[op](status, limit)
        if kind == "range":
            low, high = args
            assert isinstance(low, int)
            assert isinstance(high, int)
            return status is not None and low <= status < high
        models = [m for m in args if isinstance(m, Model)]
        if kind == "not":
            return not models[0].oracle(line)
        if kind == "and":
            return all(m.oracle(line) for m in models)
        return any(m.oracle(line) for m in models)


def numeric_status(line: LogLine) -> int | None:
    value = None if line.meta is None else line.meta.get("status")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    return None


words = st.sampled_from(VOCABULARY)
numbers = st.integers(min_value=-5, max_value=600)
leaves = st.one_of(
    st.builds(lambda w: Model("term", (w,)), words),
    st.builds(lambda a, b: Model("phrase", (a, b)), words, words),
    st.builds(lambda w: Model("app", (w,)), words),
    st.builds(lambda ws: Model("applist", tuple(ws)), st.lists(words, min_size=1, max_size=3)),
    st.builds(lambda op, n: Model("status", (op, n)), st.sampled_from(list(OPERATORS)), numbers),
    st.builds(lambda a, b: Model("range", (a, b)), numbers, numbers),
)
models = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.builds(lambda m: Model("not", (m,)), children),
        st.builds(lambda ms: Model("and", tuple(ms)), st.lists(children, min_size=2, max_size=3)),
        st.builds(lambda ms: Model("or", tuple(ms)), st.lists(children, min_size=2, max_size=3)),
    ),
    max_leaves=8,
)

cased_words = st.builds(
    lambda word, case: case(word),
    words,
    st.sampled_from([str.lower, str.upper, str.title]),
)


@st.composite
def texts(draw: st.DrawFn) -> str:
    chosen = draw(st.lists(cased_words, max_size=6))
    separators = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(chosen)))
    return "".join(word + separator for word, separator in zip(chosen, separators, strict=False))


status_values = st.one_of(
    numbers, numbers.map(str), st.sampled_from(["abc", "", None, True, 4.5, [200, 404]])
)
metas = st.one_of(st.none(), st.fixed_dictionaries({}, optional={"status": status_values}))
lines = st.builds(
    lambda text, app, meta: LogLine(text, app=app, meta=meta),
    texts(),
    st.one_of(st.none(), cased_words, texts()),
    metas,
)
line_lists = st.lists(lines, min_size=1, max_size=8)


def random_space(data: st.DataObject) -> Space:
    return lambda: data.draw(st.sampled_from(WHITESPACE))


def numeric_only(line: LogLine) -> bool:
    """The model knows integers only; lists and floats are covered by unit tests."""
    value = None if line.meta is None else line.meta.get("status")
    return not isinstance(value, float | list)


# -- the library agrees with the model -------------------------------------------------


@given(models, line_lists, st.data())
def test_compiled_query_agrees_with_the_model(
    model: Model, candidates: list[LogLine], data: st.DataObject
) -> None:
    query = compile_query(model.render(random_space(data)))
    for line in filter(numeric_only, candidates):
        assert query.matches(line) == model.oracle(line), (query, line)


@given(models, line_lists, st.data())
def test_whitespace_does_not_matter(
    model: Model, candidates: list[LogLine], data: st.DataObject
) -> None:
    plain = compile_query(model.render())
    spaced = compile_query(
        data.draw(st.sampled_from(WHITESPACE))
        + model.render(random_space(data))
        + data.draw(st.sampled_from(WHITESPACE))
    )
    for line in candidates:
        assert plain.matches(line) == spaced.matches(line)


# -- algebraic identities over arbitrary queries -----------------------------------------


@given(models, models, line_lists)
def test_or_and_and(a: Model, b: Model, candidates: list[LogLine]) -> None:
    qa, qb = compile_query(a.render()), compile_query(b.render())
    either = compile_query(f"({a.render()}) OR ({b.render()})")
    both = compile_query(f"({a.render()}) ({b.render()})")
    both_explicit = compile_query(f"({a.render()}) AND ({b.render()})")
    for line in candidates:
        assert either.matches(line) == (qa.matches(line) or qb.matches(line))
        assert both.matches(line) == (qa.matches(line) and qb.matches(line))
        assert both_explicit.matches(line) == both.matches(line)


@given(models, line_lists)
def test_not_and_parentheses(a: Model, candidates: list[LogLine]) -> None:
    query = compile_query(a.render())
    negated = compile_query(f"-({a.render()})")
    twice = compile_query(f"--({a.render()})")
    grouped = compile_query(f"(({a.render()}))")
    for line in candidates:
        assert negated.matches(line) == (not query.matches(line))
        assert twice.matches(line) == query.matches(line)
        assert grouped.matches(line) == query.matches(line)


@given(models, models, models, line_lists)
def test_precedence(a: Model, b: Model, c: Model, candidates: list[LogLine]) -> None:
    ra, rb, rc = (f"({m.render()})" for m in (a, b, c))
    cases: list[tuple[str, Callable[[bool, bool, bool], bool]]] = [
        (f"{ra} {rb} OR {rc}", lambda x, y, z: x and (y or z)),
        (f"{ra} OR {rb} {rc}", lambda x, y, z: (x or y) and z),
        (f"{ra} AND {rb} OR {rc}", lambda x, y, z: x and (y or z)),
        (f"-{ra} OR {rb} {rc}", lambda x, y, z: ((not x) or y) and z),
        (f"{ra} OR -{rb} OR {rc}", lambda x, y, z: x or (not y) or z),
    ]
    for text, expected in cases:
        query = compile_query(text)
        for line in candidates:
            x, y, z = (m.oracle(line) for m in (a, b, c))
            if numeric_only(line):
                assert query.matches(line) == expected(x, y, z), text


@given(st.lists(words, min_size=1, max_size=4), lines)
def test_list_is_or_of_its_items(items: list[str], line: LogLine) -> None:
    as_list = compile_query("app:[" + ",".join(items) + "]")
    as_or = compile_query(" OR ".join(f"app:{item}" for item in items))
    as_group = compile_query("app:(" + " OR ".join(items) + ")")
    assert as_list.matches(line) == as_or.matches(line) == as_group.matches(line)


@given(words, lines)
def test_negated_field_is_the_complement(word: str, line: LogLine) -> None:
    assert compile_query(f"-app:{word}").matches(line) != compile_query(f"app:{word}").matches(line)


# -- the parser never fails in any other way, and never hangs --------------------------

SYNTAX_PIECES = [
    *'ab:()"-[],=<>*.\\ \t1',
    "AND",
    "OR",
    " AND ",
    " OR ",
    "x:",
    ">=",
    "==",
    "===",
    "e5",
    "meta.",
]
syntaxish = st.lists(st.sampled_from(SYNTAX_PIECES), max_size=40).map("".join)
FIXED_LINES = [
    LogLine(""),
    LogLine("a b x:1 AND", app="a", host="b", level="1", meta={"x": 1, "a": {"b": ["a", 2]}}),
    LogLine("ab", meta={"x": "a:b", "": 1, "meta": {"a": None}}),
]


def compiles_or_explains(text: str) -> None:
    """Either the query compiles and evaluates to booleans, or it explains its error."""
    try:
        query = compile_query(text)
    except QuerySyntaxError as error:
        caught = error
    else:
        for line in FIXED_LINES:
            assert isinstance(query.matches(line), bool)
        return
    assert 0 <= caught.position <= max(len(text), 1)
    assert str(caught) == f"{caught.reason} (column {caught.position + 1})"


@settings(max_examples=examples(1000))
@given(syntaxish)
def test_syntax_shaped_noise_only_raises_query_syntax_error(text: str) -> None:
    compiles_or_explains(text)


@settings(max_examples=examples(300))
@given(st.text(max_size=200))
def test_arbitrary_text_only_raises_query_syntax_error(text: str) -> None:
    compiles_or_explains(text)


# Chunks whose query of 2,048 characters stops at a syntax error at its very end (an
# operator with nothing after it) while the one of 4,096 parses and is then compiled and
# evaluated: compared whole, the longer did 2.6-2.9 times the work of the shorter, though
# parsing, compiling and evaluating are each linear.
UNEVEN_ENDINGS = ["aaaaaaaa=== OR ===", "a:=OR ", "[ OR 1=", "== OR  OR", "ANDb AND a:OR ["]


def repeated(chunk: str, size: int) -> str:
    return (chunk * (size // len(chunk) + 1))[:size]


def tree_or_none(text: str) -> LineNode | None:
    try:
        return parse(text)[0]
    except QuerySyntaxError:
        return None


def compile_and_evaluate(tree: LineNode) -> None:
    matches = compile_line(tree)
    for line in FIXED_LINES:
        assert isinstance(matches(line), bool)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.sampled_from(SYNTAX_PIECES), min_size=1, max_size=12).map("".join))
@example(UNEVEN_ENDINGS[0])
@example(UNEVEN_ENDINGS[1])
@example(UNEVEN_ENDINGS[2])
@example(UNEVEN_ENDINGS[3])
@example(UNEVEN_ENDINGS[4])
def test_long_queries_parse_in_linear_time(chunk: str) -> None:
    # Parsing: the query of n characters is the start of the one of 2n, so the parser
    # walks the same text up to wherever it stops on the shorter one.
    assert_linear(lambda size: lambda: tree_or_none(repeated(chunk, size)), 2048)
    # Compiling and evaluating: only a query that parses gets there, so compare two that
    # do. Whole repetitions, an even number of them (k and 2k), end alike: an odd number
    # of quotes in the chunk leaves the same side of a quote open at both sizes.
    times = 1024 // len(chunk) // 2 * 2
    small, large = tree_or_none(chunk * times), tree_or_none(chunk * 2 * times)
    if small is not None and large is not None:
        trees = {times: small, 2 * times: large}
        assert_linear(lambda count: lambda: compile_and_evaluate(trees[count]), times)
