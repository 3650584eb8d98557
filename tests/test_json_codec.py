"""One JSON codec (docs/decisions.md, "JSON values a line can hold"): what a line's meta
holding NaN, Infinity, huge integers or lone surrogates becomes, the same on the paths
that used to disagree (export kept such a meta with null, alert matching dropped it)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.alerts.specs import presence_view

from tidegate import json_codec
from tidegate.alerts.matching import evaluate_batch
from tidegate.clock import now_ms
from tidegate.export.service import encode
from tidegate.logs.read_queries import LineRow

# (stored meta text, what every path reads)
CASES: list[tuple[str, dict[str, Any]]] = [
    ('{"a": NaN, "code": "boom"}', {"a": None, "code": "boom"}),
    ('{"a": [Infinity, -Infinity], "code": "boom"}', {"a": [None, None], "code": "boom"}),
    ('{"a": 1e400, "code": "boom"}', {"a": None, "code": "boom"}),
    ('{"n": 18446744073709551615, "code": "boom"}', {"n": 18446744073709551615, "code": "boom"}),
    ('{"n": 18446744073709551616, "code": "boom"}', {"n": 1.8446744073709552e19, "code": "boom"}),
    ('{"n": -9223372036854775809, "code": "boom"}', {"n": -9.223372036854776e18, "code": "boom"}),
    ('{"n": NaN, "m": 1' + "0" * 30 + ', "code": "boom"}', {"n": None, "m": 1e30, "code": "boom"}),
    ('{"n": NaN, "m": 1' + "0" * 400 + ', "code": "boom"}', {"n": None, "m": None, "code": "boom"}),
    ('{"s": "\\ud800", "a": NaN, "code": "boom"}', {"s": "\ufffd", "a": None, "code": "boom"}),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_the_codec_reads_each_case_as_decided(text: str, expected: dict[str, Any]) -> None:
    value = json_codec.loads(text)
    assert value == expected
    assert [type(item) for item in value.values()] == [type(item) for item in expected.values()]


def test_what_is_not_json_is_refused() -> None:
    with pytest.raises(ValueError, match="line 1"):
        json_codec.loads('{"a": ')


def test_the_codec_writes_what_json_cannot_hold_as_decided() -> None:
    value = {"nan": float("nan"), "big": 2**70, "huge": 10**400, "s": "\ud800", 3: (1, 2)}
    assert json.loads(json_codec.dumps(value)) == {
        "nan": None,
        "big": float(2**70),
        "huge": None,
        "s": "\ufffd",
        "3": [1, 2],
    }
    plain = {"a": [1, "é", 2.5, None, True]}
    assert json_codec.plain(plain) == plain


def _row(meta_json: str) -> tuple[Any, ...]:
    # cursor.NAMES order: id, account, ts, received, host, app, level, env, file, ip, mac,
    # tags, meta, line, meta_unindexed.
    return (1, "acct", 1_000, 1_000, "h", None, None, None, None, None, None, None,
            meta_json, "the line", None)  # fmt: skip


def _matched_meta(meta_json: str) -> Any:
    """The meta of the line an alert on ``code:boom`` fires with, or None if none fires."""
    spec = presence_view(account_id="acct", query="code:boom", triggerlimit=1)
    outcome = evaluate_batch([spec], {}, [_row(meta_json)], now_ms(), None)
    if not outcome.firings:
        return None
    [(_, _, firing)] = outcome.firings
    return firing.matches[0]["_meta"]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_export_and_alert_matching_read_the_same_meta(text: str, expected: dict[str, Any]) -> None:
    exported = json.loads(encode([{"_meta": LineRow(1, 2, "h", *[None] * 7, text, "x").meta()}]))
    assert exported == [{"_meta": expected}]
    # The alert matched the line by the rest of its meta, and shows the same meta.
    assert _matched_meta(text) == expected
