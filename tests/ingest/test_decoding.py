"""The body's two readers agree: a small body is parsed whole by orjson, a larger one
element by element (``tidegate.ingest.decoding``). Padding a body with whitespace past
the whole-parse size sends the same JSON the other way, so every body can be read both
ways and compared: same lines, or the same error."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.property_sizes import examples

from tidegate.errors import ApiError
from tidegate.ingest import decoding
from tidegate.ingest.decoding import body_lines

_PAST_WHOLE_PARSE = b" " * (decoding._WHOLE_PARSE_BYTES + 1)


def _read(raw: bytes) -> tuple[str, Any]:
    try:
        return "lines", body_lines(raw)
    except ApiError as error:
        return type(error).__name__, error.message


def _same(raw: bytes) -> None:
    assert len(raw) <= decoding._WHOLE_PARSE_BYTES
    whole, streamed = _read(raw), _read(raw + _PAST_WHOLE_PARSE)
    # NaN never survives either reader (it becomes null), so == compares everything.
    assert whole == streamed


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**22), max_value=10**22),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    # Lone surrogates: json.dumps escapes them (\ud800), which orjson refuses.
    st.sampled_from(["\ud800", "a\udfffb", "\U0001f600"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
_line = st.one_of(
    _values,
    st.fixed_dictionaries(
        {"line": _values}, optional={"meta": _values, "timestamp": _values, "app": _values}
    ),
)


@settings(max_examples=examples(300), deadline=None)
@given(
    body=st.one_of(
        st.fixed_dictionaries({"lines": st.lists(_line, max_size=5)}),
        st.fixed_dictionaries({"e": st.just("ls"), "ls": st.lists(_line, max_size=5)}),
        st.dictionaries(st.sampled_from(["lines", "ls", "e", "x"]), _values, max_size=3),
        _values,
    )
)
def test_both_readers_give_the_same_lines_or_error(body: Any) -> None:
    _same(json.dumps(body).encode())


@pytest.mark.parametrize(
    "raw",
    [
        b'{"lines": [{"line": "x", "meta": {"id": 12345678901234567890}}]}',
        b'{"lines": [{"line": "x", "meta": {"id": -1234567890123456789}}]}',
        b'{"lines": [{"line": "x", "meta": {"id": 123456789012345678}}]}',
        b'{"lines": [{"line": "x", "meta": {"ratio": NaN, "up": -Infinity}}]}',
        b'{"lines": [{"line": "\\ud800 lone"}]}',
        b'{"lines": [1, 2], "lines": [3]}',
        b'{"lines": [], "ls": []}',
        b'{"lines": {}}',
        b'{"ls": null}',
        b"[]",
        b"",
        b"  ",
        b"{",
        b'{"lines": [1,]}',
        b'\xef\xbb\xbf{"lines": []}',
        b'{"lines": ["\xff"]}',
        b'{"lines": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}',
        b'{"lines": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
    ],
)
def test_edge_bodies_read_the_same_both_ways(raw: bytes) -> None:
    _same(raw)


def test_a_20_digit_integer_is_a_float_either_way() -> None:
    (line,) = body_lines(b'{"lines": [{"meta": {"id": 12345678901234567890}}]}')
    value = line["meta"]["id"]
    assert isinstance(value, float)
    assert math.isclose(value, 12345678901234567890)
