from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.property_sizes import examples

from tidegate.processing import linear_regex
from tidegate.processing.conditions import (
    MAX_GROUP_DEPTH,
    OPERATORS,
    Condition,
    ConditionError,
    compile_condition,
)


def leaf(field: str, op: str, value: Any = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"field": field, "str_operator": op, **extra}
    if value is not None:
        spec["value"] = value
    return spec


def matches(spec: dict[str, Any], event: dict[str, Any]) -> bool:
    return compile_condition(spec)(event)


METRIC = {"name": "requests", "kind": "incremental", "value": {"type": "counter", "value": 1}}

# (operator, value, events that match, events that do not)
OPERATOR_CASES: list[tuple[str, Any, list[Any], list[Any]]] = [
    ("contains", "err", ["an ERROR here", "err"], ["fine", 5, None, ["err"]]),
    ("starts_with", "GET", ["get /x", "GET"], ["x GET", 1, None]),
    ("ends_with", ".log", ["app.LOG", ".log"], ["log.txt", 3]),
    ("equal", "web", ["web", "WEB"], ["web1", "", None, ["web"]]),
    ("equal", 10, [10, "10", 10.0, "10.0"], [11, "ten", True, None]),
    ("equal", "true", [True, "TRUE"], [False, 1]),
    ("exists", None, ["", None, 0, False, {}], []),
    ("greater", 5, [6, 5.5], [5, 4, "6", True]),
    ("greater_or_equal", 5, [5, 6], [4.9, "5"]),
    ("less", 5, [4, -1.5], [5, "1"]),
    ("less_or_equal", "5", [5, 0], [5.01, None]),
    ("is_array", None, [[], [1]], [{}, "[]"]),
    ("is_boolean", None, [True, False], [0, "true", None]),
    ("is_empty", None, ["", {}, []], [" ", 0, None, [0], {"a": 1}, False]),
    ("is_ip_in_cidr_range", "10.0.0.0/8", ["10.1.2.3", "::ffff:10.0.0.1"], ["11.0.0.1", "x", 10]),
    ("is_ip_in_cidr_range", "2001:db8::/32", ["2001:db8::1"], ["2001:db9::1", "10.0.0.1"]),
    ("is_ip_in_cidr_range", "192.168.1.7", ["192.168.1.7"], ["192.168.1.8"]),
    ("is_metric", None, [METRIC], [{"name": "x"}, {**METRIC, "kind": "weird"}, "metric"]),
    ("is_null", None, [None], [0, "", False]),
    ("is_number", None, [0, 1.5, -3], ["1", True, None]),
    ("is_object", None, [{}, {"a": 1}], [[], "{}"]),
    ("is_string", None, ["", "x"], [1, None, ["x"]]),
    ("regex_match", r"^user-\d+$", ["user-12", "USER-3"], ["user-x", "a user-1", 12]),
    ("regex_match", r"time(out)?", ["a Timeout!", "time"], ["tim"]),
]


def test_every_operator_is_covered() -> None:
    assert {case[0] for case in OPERATOR_CASES} == set(OPERATORS)
    assert len(OPERATORS) == 19


@pytest.mark.parametrize(("op", "value", "yes", "no"), OPERATOR_CASES)
def test_operator(op: str, value: Any, yes: list[Any], no: list[Any]) -> None:
    condition = compile_condition(leaf(".f", op, value))
    for field_value in yes:
        assert condition({"f": field_value}), (op, value, field_value)
    for field_value in no:
        assert not condition({"f": field_value}), (op, value, field_value)


@pytest.mark.parametrize("op", sorted(OPERATORS - {"exists", "is_null"}))
def test_missing_field_never_matches(op: str) -> None:
    value = {"greater": 1, "greater_or_equal": 1, "less": 1, "less_or_equal": 1}.get(op, "x")
    if op == "is_ip_in_cidr_range":
        value = "10.0.0.0/8"
    spec = leaf(".f", op, value if op in _needs_value() else None)
    assert not compile_condition(spec)({"other": 1})


def _needs_value() -> set[str]:
    unary = {"exists", "is_array", "is_boolean", "is_empty", "is_metric", "is_null"}
    return set(OPERATORS) - unary - {"is_number", "is_object", "is_string"}


def test_exists_and_is_null_on_missing_field() -> None:
    # `exists` is false for a missing field; `is_null` treats missing as null.
    assert not matches(leaf(".f", "exists"), {})
    assert matches(leaf(".f", "is_null"), {})


def test_is_metric_on_the_whole_event() -> None:
    assert matches(leaf(".", "is_metric"), METRIC)
    assert not matches(leaf(".", "is_metric"), {"message": "x"})


@pytest.mark.parametrize(
    ("op", "value", "field_value"),
    [
        ("contains", "Err", "an ERROR"),
        ("starts_with", "Get", "GET /"),
        ("ends_with", "Log", "app.LOG"),
        ("equal", "Web", "WEB"),
        ("regex_match", "Web", "a WEB b"),
    ],
)
def test_case_sensitive_switch(op: str, value: str, field_value: str) -> None:
    assert matches(leaf(".f", op, value), {"f": field_value})
    assert not matches(leaf(".f", op, value, case_sensitive=True), {"f": field_value})
    assert matches(leaf(".f", op, value, case_sensitive=True), {"f": value})


def test_case_insensitive_handles_unicode_folding() -> None:
    assert matches(leaf(".f", "equal", "STRASSE"), {"f": "straße"})


def test_negate_inverts_including_missing_fields() -> None:
    not_web = leaf(".host", "equal", "web", negate=True)
    assert matches(not_web, {"host": "db"})
    assert not matches(not_web, {"host": "web"})
    assert matches(not_web, {})


def test_nested_field_paths() -> None:
    spec = leaf(".meta.user.id", "equal", 7)
    assert matches(spec, {"meta": {"user": {"id": 7}}})
    assert not matches(spec, {"meta": {"user": "7"}})
    assert not matches(spec, {"meta": 3})


def test_groups_and_or_default_and() -> None:
    a = leaf(".a", "equal", 1)
    b = leaf(".b", "equal", 2)
    c = leaf(".c", "equal", 3)
    both = {"expressions": [a, b]}
    either = {"logical_operation": "OR", "expressions": [a, b]}
    three_and = {"logical_operation": "AND", "expressions": [a, b, c]}
    three_or = {"logical_operation": "OR", "expressions": [a, b, c]}
    assert matches(both, {"a": 1, "b": 2})
    assert not matches(both, {"a": 1})
    assert matches(either, {"b": 2})
    assert not matches(either, {"c": 3})
    assert matches(three_and, {"a": 1, "b": 2, "c": 3})
    assert not matches(three_and, {"a": 1, "b": 2})
    assert matches(three_or, {"c": 3})
    assert not matches(three_or, {})
    assert matches({"expressions": [a]}, {"a": 1})


def nested(depth: int) -> dict[str, Any]:
    spec: dict[str, Any] = leaf(".a", "equal", 1)
    for _ in range(depth):
        spec = {"logical_operation": "OR", "expressions": [spec, leaf(".z", "exists")]}
    return spec


def test_groups_nest_five_levels() -> None:
    condition = compile_condition(nested(MAX_GROUP_DEPTH))
    assert condition({"a": 1})
    assert condition({"z": None})
    assert not condition({"a": 2})


def test_six_levels_are_rejected() -> None:
    with pytest.raises(ConditionError, match="at most 5 levels"):
        compile_condition(nested(MAX_GROUP_DEPTH + 1))


@pytest.mark.parametrize(
    ("spec", "message", "location"),
    [
        (leaf(".f", "not_equal", "x"), "unknown operator 'not_equal'", "str_operator"),
        (leaf(".f", "regex_match", "(unclosed"), "invalid regular expression", "value"),
        (leaf(".f", "is_ip_in_cidr_range", "10.0.0.0/33"), "invalid CIDR", "value"),
        (leaf(".f", "is_ip_in_cidr_range", "nonsense"), "invalid CIDR", "value"),
        (leaf(".f", "is_ip_in_cidr_range", 10), "CIDR string", "value"),
        (leaf(".f", "greater", "abc"), "needs a number", "value"),
        (leaf(".f", "less", True), "string or number", "value"),
        (leaf(".f", "less_or_equal", "NaN"), "needs a number", "value"),
        (leaf(".f", "equal"), "string or number", "value"),
        (leaf(".f", "contains", ["a"]), "string or number", "value"),
        (leaf(".f", "regex_match", 5), "regular expression string", "value"),
        (leaf(".f", "exists", "x"), "takes no value", "value"),
        (leaf(".f", "equal", "x", colour="red"), "unknown key(s) colour", ""),
        (leaf(".f", "equal", "x", negate="yes"), "true or false", "negate"),
        (leaf("", "equal", "x"), "must not be blank", "field"),
        (leaf(".a..b", "equal", "x"), "empty segment", "field"),
        ({"field": ".f", "value": 1}, "needs a 'str_operator'", ""),
        ({"str_operator": "exists"}, "needs a 'field'", ""),
        ({"expressions": []}, "must not be empty", "expressions"),
        ({"expressions": "x"}, "must be a list", "expressions"),
        ({"logical_operation": "XOR", "expressions": [leaf(".a", "exists")]}, "'AND' or 'OR'", ""),
        ({"expressions": [leaf(".a", "exists")], "negate": True}, "unknown key(s) negate", ""),
        ({}, "needs either 'expressions'", ""),
        ({"value": 1}, "needs either 'expressions'", ""),
    ],
)
def test_invalid_conditions_are_rejected(spec: Any, message: str, location: str) -> None:
    with pytest.raises(ConditionError) as caught:
        compile_condition(spec)
    assert message in str(caught.value)
    assert caught.value.location.endswith(location)


def test_non_object_condition_is_rejected() -> None:
    with pytest.raises(ConditionError, match="JSON object"):
        compile_condition(["field"])


def test_error_location_points_into_nested_groups() -> None:
    spec = {
        "expressions": [
            leaf(".a", "exists"),
            {"logical_operation": "OR", "expressions": [leaf(".b", "greater", "x")]},
        ]
    }
    with pytest.raises(ConditionError) as caught:
        compile_condition(spec)
    assert caught.value.location == "expressions[1].expressions[0].value"
    assert str(caught.value).startswith("expressions[1].expressions[0].value: ")


def test_regex_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    condition = compile_condition(leaf(".f", "regex_match", "a+b"))
    calls: list[Any] = []
    original = linear_regex.LinearRegex.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(args)
        original(self, *args, **kwargs)

    monkeypatch.setattr(linear_regex.LinearRegex, "__init__", counting)
    for _ in range(100):
        assert condition({"f": "xaab"})
    assert calls == []


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a)\1",  # backreference
        r"foo(?=bar)",  # lookahead
        r"(?<!x)y",  # lookbehind
        r"a++",  # possessive repetition
        r"(?>a+)b",  # atomic group
        r"x\Z",  # Python's end anchor (RE2 spells it \z)
        r"\pL{1000}",  # a program over the per-pattern memory bound
    ],
)
def test_patterns_re2_cannot_run_linearly_are_refused(pattern: str) -> None:
    with pytest.raises(ConditionError, match="RE2 syntax") as caught:
        compile_condition(leaf(".f", "regex_match", pattern))
    assert caught.value.location == "value"


def test_catastrophic_backtracking_patterns_run_in_linear_time() -> None:
    # `re` takes ~9 s for 26 `a`s and doubles with each further one; RE2 is linear.
    evil = compile_condition(leaf(".f", "regex_match", "(a+)+$"))
    assert not evil({"f": "a" * 100_000 + "!"})
    assert evil({"f": "a" * 100_000})
    nested = compile_condition(
        leaf(".f", "regex_match", "^(([a-z])+.)+[A-Z]([a-z])+$", case_sensitive=True)
    )
    assert not nested({"f": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"})


@pytest.mark.parametrize(
    ("pattern", "case_sensitive", "value", "expected"),
    [
        ("straße", False, "STRASSE", False),  # simple folding, as `re` does
        ("ÄRGER", False, "ärger", True),
        ("ÄRGER", True, "ärger", False),
        (r"^\d+$", False, "123", True),
        (r"(?i)web", True, "WEB-1", True),
        (r"(?P<n>ab)c", False, "xabc", True),
        (r"a.c", False, "a\nc", False),  # `.` stops at a newline, as in `re`
        (r"(?s)a.c", False, "a\nc", True),
        (r"é", False, "\ud800é", True),  # a lone surrogate in JSON text is no error
    ],
)
def test_regex_semantics(pattern: str, case_sensitive: bool, value: str, expected: bool) -> None:
    spec = leaf(".f", "regex_match", pattern, case_sensitive=case_sensitive)
    assert compile_condition(spec)({"f": value}) is expected


def test_unary_operators_accept_empty_value_placeholders() -> None:
    assert matches({"field": ".f", "str_operator": "exists", "value": ""}, {"f": 1})
    assert matches({"field": ".f", "str_operator": "exists", "value": None}, {"f": 1})


def test_condition_keeps_its_spec_and_compares_by_it() -> None:
    spec = leaf(".f", "equal", "x")
    first, second = compile_condition(spec), compile_condition(dict(spec))
    assert first == second
    assert hash(first) == hash(second)
    assert first.spec == spec
    assert "equal" in repr(first)
    assert isinstance(first, Condition)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["f", "g", "name", "kind", "value", "type"]), children)
    ),
    max_leaves=8,
)

leaf_specs = st.builds(
    lambda op, value, negate, case: {
        "field": ".f",
        "str_operator": op,
        **({"value": value} if value is not None else {}),
        "negate": negate,
        "case_sensitive": case,
    },
    st.sampled_from(sorted(OPERATORS)),
    st.sampled_from([None, "x", "10", 10, 2.5, "^a", "10.0.0.0/8"]),
    st.booleans(),
    st.booleans(),
)


@settings(max_examples=examples(300))
@given(spec=leaf_specs, event=st.dictionaries(st.sampled_from(["f", "g"]), json_values))
def test_compiled_conditions_never_raise_on_any_event(
    spec: dict[str, Any], event: dict[str, Any]
) -> None:
    try:
        condition = compile_condition(spec)
    except ConditionError:
        return
    assert condition(event) in (True, False)
    negated = compile_condition({**spec, "negate": not spec["negate"]})
    assert negated(event) is (not condition(event))
