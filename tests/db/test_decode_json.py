"""The raw reads' JSON reader (``db.engine.decode_json``) gives what the ORM's reader,
the standard library's ``json.loads``, gives: integers beyond 64 bits kept exact (orjson
alone reads them as floats), digits of other scripts inside strings, escaped lone
surrogates, as text or bytes. Its shared form (``decode_json_shared``, for reads that
only encode what they read) reads the same, and decodes a short text once."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.property_sizes import examples

from tidegate.db import engine
from tidegate.db.engine import decode_json, decode_json_shared

# Integers on both sides of 64 bits, floats, and text with digits of several scripts.
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=2**63 - 5, max_value=2**64 + 5),
    st.integers(min_value=-(2**63) - 5, max_value=-(2**63) + 5),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
)
# ASCII digits, Arabic-Indic and Devanagari ones (not JSON numbers, but \d to a regex).
OTHER_DIGITS = "".join(chr(0x660 + i) for i in range(10)) + "".join(
    chr(0x966 + i) for i in range(4)
)
TEXTS = st.text(
    alphabet=st.sampled_from('0123456789 ab"\\\u2028\u00e9' + OTHER_DIGITS), max_size=40
)
VALUES: Any = st.recursive(
    st.none() | st.booleans() | NUMBERS | TEXTS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXTS, children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=examples(400))
@given(VALUES, st.booleans())
def test_decode_json_reads_as_the_stdlib_does(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    expected = json.loads(text)
    assert decode_json(text) == expected
    assert decode_json(text.encode()) == expected


def test_integers_beyond_64_bits_stay_exact() -> None:
    for number in (2**64, 2**64 + 1, -(2**63) - 1, 10**30, -(10**30)):
        text = json.dumps({"n": [number]})
        found = decode_json(text)
        assert found == {"n": [number]}
        assert isinstance(found["n"][0], int)
    # Nineteen digits that fit in 64 bits, and digits of other scripts: orjson's reading.
    assert decode_json("[9223372036854775807, -9223372036854775808]") == [2**63 - 1, -(2**63)]
    others = OTHER_DIGITS[:10] * 2
    assert decode_json(json.dumps([others], ensure_ascii=False)) == [others]
    assert decode_json('"\\ud800"') == "\ud800"  # an escaped lone surrogate


@settings(max_examples=examples(100))
@given(VALUES)
def test_the_shared_reader_reads_as_the_stdlib_does(value: Any) -> None:
    text = json.dumps(value)
    assert decode_json_shared(text) == json.loads(text)
    assert decode_json_shared(text.encode()) == json.loads(text)  # bytes: not shared


def test_the_shared_reader_decodes_a_short_text_once() -> None:
    short = json.dumps({"name": "threshold", "n": 2**70})
    first = decode_json_shared(short)
    assert decode_json_shared("".join(short)) is first  # another str of the same text
    assert first == {"name": "threshold", "n": 2**70}
    long = json.dumps({"text": "x" * engine.SHARED_JSON_MAX_CHARS})
    assert decode_json_shared(long) is not decode_json_shared(long)  # not kept
    assert decode_json_shared(long) == json.loads(long)
