from __future__ import annotations

import pytest

from tidegate.processing.fields import MISSING, FieldPath, FieldPathError, string_form


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        (".app", ("app",)),
        ("app", ("app",)),
        (".meta.user.id", ("meta", "user", "id")),
        ('."a.b".c', ("a.b", "c")),
        ('."say \\"hi\\""', ('say "hi"',)),
        (".tags[0]", ("tags", 0)),
        (".tags[-1].name", ("tags", -1, "name")),
        (".", ()),
    ],
)
def test_parse(text: str, segments: tuple[object, ...]) -> None:
    assert FieldPath.parse(text).segments == segments


@pytest.mark.parametrize(
    "text", ["", "   ", ".a.", ".a..b", '."open', ".a[x]", ".a[1", ".a]", '.a b"c']
)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(FieldPathError):
        FieldPath.parse(text)


def test_parse_rejects_non_string() -> None:
    with pytest.raises(FieldPathError):
        FieldPath.parse(5)  # type: ignore[arg-type]


def test_getter_reads_nested_values_and_reports_missing() -> None:
    event = {"meta": {"user": {"id": 7, "name": None}}, "tags": ["x", "y"], "app": "a"}
    assert FieldPath.parse(".meta.user.id").getter()(event) == 7
    assert FieldPath.parse(".meta.user.name").getter()(event) is None
    assert FieldPath.parse(".meta.user.nope").getter()(event) is MISSING
    assert FieldPath.parse(".app.deeper").getter()(event) is MISSING
    assert FieldPath.parse(".tags[1]").getter()(event) == "y"
    assert FieldPath.parse(".tags[5]").getter()(event) is MISSING
    assert FieldPath.parse(".meta[0]").getter()(event) is MISSING
    assert FieldPath.parse(".app").getter()(event) == "a"
    assert FieldPath.parse(".absent").getter()(event) is MISSING
    assert FieldPath.parse(".").getter()(event) is event
    assert FieldPath.parse(".app").single_key == "app"
    assert FieldPath.parse(".a.b").single_key is None


def test_missing_is_falsy_and_named() -> None:
    assert not MISSING
    assert repr(MISSING) == "MISSING"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("x", "x"),
        (10, "10"),
        (1.5, "1.5"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        ({"b": 1, "a": [1, "x"]}, '{"a":[1,"x"],"b":1}'),
    ],
)
def test_string_form(value: object, text: str) -> None:
    assert string_form(value) == text
