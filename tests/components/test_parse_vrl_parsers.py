"""The ``parse`` processor's VRL parsers beyond the classic ones (``parse_query_string``,
``parse_url``, ``parse_tokens``, ``parse_int``, ``parse_klog``, ``parse_glog``): VRL's
documented examples (``docs/generated/<name>.json``) give exactly VRL's answer, a text
not of the format fails cleanly (the event passes unchanged), and the provider's body
(``processors/parse.go``: the VRL name, no options, ``target_field: ""``) builds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from tests.components.helpers import run

from tidegate.processing import vrl_parsers
from tidegate.processing.parsers import MAX_PAIRS

TOKENS_DOC = r'A sentence "with \"a\" sentence inside" and [some brackets]'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("foo=1&bar=2", {"foo": "1", "bar": "2"}),
        ("foo=%2B1&bar=2&bar=3&xyz", {"bar": ["2", "3"], "foo": "+1", "xyz": ""}),
        ("?foo%5b%5d=1&foo%5b%5d=2", {"foo[]": ["1", "2"]}),
        ("a=1&a=2&a=3&&b=x+y", {"a": ["1", "2", "3"], "b": "x y"}),
        ("", {}),
    ],
)
def test_parse_query_string_as_vrl_documents_it(text: str, expected: Any) -> None:
    assert vrl_parsers.parse_query_string(text) == expected


def test_parse_query_string_reads_a_bounded_number_of_pairs() -> None:
    parsed = vrl_parsers.parse_query_string("&".join(f"k{i}=v" for i in range(5000)))
    assert len(parsed) == MAX_PAIRS


def test_parse_url_as_vrl_documents_it() -> None:
    assert vrl_parsers.parse_url("ftp://foo:bar@example.com:4343/foobar?hello=world#123") == {
        "fragment": "123",
        "host": "example.com",
        "password": "bar",
        "path": "/foobar",
        "port": 4343,
        "query": {"hello": "world"},
        "scheme": "ftp",
        "username": "foo",
    }
    assert vrl_parsers.parse_url("https://example.com", default_known_ports=True) == {
        "fragment": None,
        "host": "example.com",
        "password": "",
        "path": "/",
        "port": 443,
        "query": {},
        "scheme": "https",
        "username": "",
    }
    # Without default_known_ports (what the provider sends), a scheme's own port is null.
    assert vrl_parsers.parse_url("https://EXAMPLE.com:443")["port"] is None  # type: ignore[index]
    parsed = vrl_parsers.parse_url("https://www.café.com/a?x=1&x=2")
    assert parsed is not None
    assert (parsed["host"], parsed["query"]) == ("www.xn--caf-dma.com", {"x": "2"})
    parsed = vrl_parsers.parse_url("http://[::1]:8080/x")
    assert parsed is not None
    assert (parsed["host"], parsed["port"]) == ("[::1]", 8080)


@pytest.mark.parametrize(
    "text",
    ["example.com/path", "", "://x", "http://", "http://a:99999/", "http://a:x/", "http://a b/"],
)
def test_parse_url_refuses_what_is_not_a_url(text: str) -> None:
    assert vrl_parsers.parse_url(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TOKENS_DOC, ["A", "sentence", r"with \"a\" sentence inside", "and", "some brackets"]),
        ("foo\t bar     baz", ["foo", "bar", "baz"]),
        ('foo "" - x', ["foo", None, None, "x"]),
        ('a "unclosed b', ["a", '"unclosed b']),
        ('a "bad \\n escape"', ["a", '"bad \\n escape"']),
        ("a [b\\]c] d", ["a", "b\\]c", "d"]),
        ("", []),
    ],
)
def test_parse_tokens_as_vrl_tokenizes(text: str, expected: list[Any]) -> None:
    assert vrl_parsers.parse_tokens(text) == expected


def test_parse_tokens_is_bounded() -> None:
    assert len(vrl_parsers.parse_tokens("a " * 5000)) == MAX_PAIRS


@pytest.mark.parametrize(
    ("text", "expected"),
    [("-42", -42), ("0b1001", 9), ("0o42", 34), ("0x2a", 42), ("010", 8), ("+7", 7)],
)
def test_parse_int_as_vrl_documents_it(text: str, expected: int) -> None:
    assert vrl_parsers.parse_int(text) == expected


def test_parse_int_with_a_base_and_refusals() -> None:
    assert vrl_parsers.parse_int("2a", base=17) == 44
    for text in ["", "-", "1_0", " 1", "1.5", "0x", "09", "9" * 30, "x" * 100, "٣"]:
        assert vrl_parsers.parse_int(text) is None, text


def test_parse_klog_as_vrl_documents_it() -> None:
    line = "I0505 17:59:40.692994   28133 klog.go:70] hello from klog"
    assert vrl_parsers.parse_klog(line, now=datetime(2026, 11, 28, tzinfo=UTC)) == {
        "file": "klog.go",
        "id": 28133,
        "level": "info",
        "line": 70,
        "message": "hello from klog",
        "timestamp": "2026-05-05T17:59:40.692994Z",
    }
    december = "E1231 23:59:59.000001 1 a.go:1] late  "
    parsed = vrl_parsers.parse_klog(december, now=datetime(2027, 1, 2, tzinfo=UTC))
    assert parsed is not None
    assert (parsed["timestamp"], parsed["level"], parsed["message"]) == (
        "2026-12-31T23:59:59.000001Z",
        "error",
        "late",
    )


def test_parse_glog_as_vrl_documents_it() -> None:
    assert vrl_parsers.parse_glog("I20210131 14:48:54.411655 15520 main.c++:9] Hello world!") == {
        "file": "main.c++",
        "id": 15520,
        "level": "info",
        "line": 9,
        "message": "Hello world!",
        "timestamp": "2021-01-31T14:48:54.411655Z",
    }


@pytest.mark.parametrize(
    "text",
    [
        "X0505 17:59:40.692994 1 klog.go:70] unknown level",
        "I1305 17:59:40.692994 1 klog.go:70] month 13",
        "I0505 17:59:40 1 klog.go:70] no microseconds",
        "I0505 17:59:40.692994 1 klog.go] no line",
        "hello",
        "I0505 17:59:40.692994 1 " + "a:1" * 100_000 + " no bracket",
    ],
)
def test_parse_klog_refuses_other_lines(text: str) -> None:
    assert vrl_parsers.parse_klog(text) is None
    assert vrl_parsers.parse_glog(text.replace("I0505", "I20210505", 1)) is None


PROVIDER_CASES = [
    ("parse_query_string", "a=1&a=2", {"a": ["1", "2"]}),
    ("parse_url", "http://h/p?q=1", None),
    ("parse_tokens", "a [b c] -", ["a", "b c", None]),
    ("parse_int", "0x10", 16),
    ("parse_klog", "W0101 00:00:00.000000 7 x.go:3] m", None),
    ("parse_glog", "F20250101 00:00:00.000000 7 x.go:3] m", None),
]


@pytest.mark.parametrize(("name", "text", "expected"), PROVIDER_CASES)
async def test_the_provider_body_parses_and_a_bad_line_passes_unchanged(
    name: str, text: str, expected: Any
) -> None:
    config = {"field": ".something", "parser": name, "target_field": ""}
    bad = "not of the format at all: http://"
    out = await run("parse", config, [{"something": text}, {"something": bad}])
    parsed = out.main[0]["something"]
    assert parsed != text
    if expected is not None:
        assert parsed == expected
    if name not in ("parse_query_string", "parse_tokens"):  # every text is one of those
        assert out.main[1] == {"something": bad}
