"""Decoding stored JSON and encoding a page through the one codec (tidegate.json_codec)."""

from __future__ import annotations

import json

from tidegate.export.service import encode
from tidegate.logs.read_queries import LineRow


def _row(meta_json: str | None) -> LineRow:
    return LineRow(1, 2, "h", None, None, None, None, None, None, None, meta_json, "x")


def test_meta_is_decoded_and_nan_reads_as_null() -> None:
    assert _row('{"a": [1, 1.5, "é"]}').meta() == {"a": [1, 1.5, "é"]}
    # Older SQLite rows may hold NaN/Infinity, which is not JSON.
    assert _row('{"a": NaN, "b": [Infinity]}').meta() == {"a": None, "b": [None]}
    assert _row(None).meta() is None


def test_a_page_is_valid_json_whatever_it_holds() -> None:
    body = {"lines": [{"_line": "é"}], "pagination_id": None}
    assert json.loads(encode(body)) == body
    # What JSON cannot hold is written as decided (docs/decisions.md, json_codec).
    odd = {"lines": [{"_line": "\ud800", "_meta": {"n": 2**70}}], "pagination_id": None}
    assert json.loads(encode(odd)) == {
        "lines": [{"_line": "\ufffd", "_meta": {"n": float(2**70)}}],
        "pagination_id": None,
    }
