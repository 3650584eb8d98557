"""tidegate.json_stream: large JSON read a piece at a time, with the same answers as a
whole-document parser."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidegate.errors import PayloadTooLarge
from tidegate.ingest.decoding import MAX_LINES_PER_REQUEST, body_lines
from tidegate.json_stream import JsonStreamError, make_scanner, object_members, read_array

_SCAN = make_scanner(json.JSONDecoder())

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


class TooMany(Exception):
    pass


def _whole(text: str) -> dict[str, Any]:
    def read(name: str, offset: int) -> tuple[Any, int]:
        if text.startswith("[", offset):
            return read_array(_SCAN, text, offset, limit=1000, too_many=TooMany)
        return NotImplemented, offset

    return dict(object_members(_SCAN, text, 0, read_value=read))


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=5), st.booleans())
def test_objects_read_piece_by_piece_equal_json_loads(
    document: dict[str, Any], indent: bool
) -> None:
    text = json.dumps(document, indent=2 if indent else None)
    assert _whole(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    ['{"a": [1, 2', '{"a": 1,}', '{"a" 1}', '{"a": [1 2]}', '{"a": 1} x', "{a: 1}", '{"a": [}'],
)
def test_invalid_json_is_refused(text: str) -> None:
    with pytest.raises(JsonStreamError):
        _whole(text)


def test_a_repeated_name_comes_again_and_the_caller_keeps_the_last() -> None:
    assert list(object_members(_SCAN, '{"a": 1, "a": [2]}', 0)) == [("a", 1), ("a", [2])]


def test_the_element_past_the_limit_stops_the_parse() -> None:
    calls: list[int] = []
    text = "[" + ",".join(["{}"] * 10) + ", this is not JSON"
    with pytest.raises(TooMany):
        read_array(
            _SCAN, text, 0, limit=10, too_many=TooMany, each=lambda v, i: calls.append(i) or v
        )
    assert calls == list(range(10))


def test_an_oversized_ingest_body_is_refused_before_the_rest_is_parsed() -> None:
    """The line past the cap is a 413 although what follows it is not even JSON: the
    body is never parsed as a whole (that held the interpreter, and so the event loop,
    for hundreds of milliseconds per 10 MB body)."""
    body = b'{"lines": [' + b"{}," * (MAX_LINES_PER_REQUEST + 1) + b" garbage"
    with pytest.raises(PayloadTooLarge):
        body_lines(body)


def test_ingest_bodies_keep_their_meaning() -> None:
    assert body_lines(b'{"lines": [{"line": "a"}], "e": "x"}') == [{"line": "a"}]
    assert body_lines(b'{"e": "ls", "ls": [{"line": "b", "meta": {"x": NaN}}]}') == [
        {"line": "b", "meta": {"x": None}}
    ]
    assert body_lines(b'{"lines": [{"line": "\\ud800"}]}') == [{"line": "\ufffd"}]
