"""Parsing template patterns (``tidegate.processing.grok``): tokens expanded to RE2,
captures mapped back to the names the tenant wrote, conversions, and every refusal."""

from __future__ import annotations

import pytest

from tidegate.processing.grok import (
    MAX_CAPTURES,
    PATTERNS,
    TemplatePattern,
    TemplatePatternError,
)

# A text each named pattern must match whole, and one it must not.
EXAMPLES = {
    "WORD": ("hello_1", "two words"),
    "NOTSPACE": ("a/b:c", "a b"),
    "INT": ("-42", "4.2"),
    "POSINT": ("42", "0"),
    "NONNEGINT": ("0", "-1"),
    "NUMBER": ("-4.25", "four"),
    "BASE10NUM": (".5", "x"),
    "QUOTEDSTRING": ('"a \\" b"', '"open'),
    "QS": ("'single'", "'open"),
    "UUID": ("123e4567-e89b-12d3-a456-426614174000", "123e4567"),
    "MAC": ("00:1a:2B:3c:4d:5e", "00:1a:2b"),
    "IPV4": ("10.0.255.1", "10.0.256.1"),
    "IPV6": ("2001:db8::1", "2001"),
    # (more IPv6 forms in test_ipv6_forms)
    "IP": ("::1", "1.2.3"),
    "HOSTNAME": ("api.example.com", "-bad"),
    "IPORHOST": ("db-1", "_x"),
    "HOSTPORT": ("db-1:5432", "db-1"),
    "USER": ("j.doe-1", "j doe"),
    "USERNAME": ("root", "a b"),
    "EMAILADDRESS": ("a.b+c@example.com", "a.example.com"),
    "PATH": ("/var/log/app.log", "var"),
    "URIPATH": ("/api/v1/items", "api"),
    "URIPATHPARAM": ("/search?q=a&n=1", "?q"),
    "TIMESTAMP_ISO8601": ("2025-11-22T08:00:01.123Z", "2025-11-22"),
    "HTTPDATE": ("22/Nov/2025:08:00:01 +0000", "22/Nov/2025"),
    "SYSLOGTIMESTAMP": ("Nov 22 08:00:01", "22 Nov 08:00"),
    "LOGLEVEL": ("Warning", "loud"),
    "SPACE": ("  ", "x"),
    "DATA": ("anything at all", None),
    "GREEDYDATA": ("anything at all", None),
}


def test_every_named_pattern_is_exemplified() -> None:
    assert set(EXAMPLES) == set(PATTERNS)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_each_named_pattern_matches_what_grok_means(name: str) -> None:
    good, bad = EXAMPLES[name]
    pattern = TemplatePattern(f"^%{{{name}:value}}$")
    assert pattern.fields(good) == [("value", good)]
    if bad is not None:
        assert pattern.fields(bad) is None


def test_tokens_groups_and_conversions() -> None:
    pattern = TemplatePattern(
        r"%{IP:client} %{WORD} %{INT:user.id:int} %{NUMBER:took:float}s (?P<rest>.*)"
    )
    assert pattern.field_names == ["client", "user.id", "took", "rest"]
    assert pattern.fields("at 10.1.2.3 GET 42 0.25s done now") == [
        ("client", "10.1.2.3"),
        ("user.id", 42),
        ("took", 0.25),
        ("rest", "done now"),
    ]
    assert pattern.fields("no match") is None


def test_a_group_that_did_not_take_part_is_left_out() -> None:
    pattern = TemplatePattern(r"^(?:%{INT:code:int}|%{WORD:word})$")
    assert pattern.fields("17") == [("code", 17)]
    assert pattern.fields("abc") == [("word", "abc")]


def test_a_value_that_is_no_such_number_stays_text() -> None:
    pattern = TemplatePattern(r"v=%{NOTSPACE:v:int} f=%{NOTSPACE:f:float}")
    assert pattern.fields("v=12x f=1e999") == [("v", "12x"), ("f", "1e999")]
    assert pattern.fields("v=" + "9" * 5000 + " f=nan") == [("v", "9" * 5000), ("f", "nan")]


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("", "empty"),
        ("(?P<a>x", "missing"),
        (r"(?P<a>x)\1", "RE2"),
        ("(?<=a)(?P<a>b)", "RE2"),
        ("%{WORD:a", "never closed"),
        ("%{word:a}", "not a known pattern name"),
        ("%{WORD:a:b:c}", "write %{NAME}"),
        ("%{WORD:a:str}", "int or float"),
        ("%{WORD:.a}", "field name"),
        ("%{WORD:a..b}", "field name"),
        ("%{WORD}", "captures nothing"),
        ("(?P<__tg1>a)", "reserved"),
        ("".join(f"(?P<g{n}>a)" for n in range(MAX_CAPTURES + 1)), "more than"),
        ("a" * 4097, "longer"),
        ("x{1001}(?P<a>y)", "RE2"),  # RE2's repetition limit
    ],
)
def test_refusals_say_why(pattern: str, says: str) -> None:
    with pytest.raises(TemplatePatternError, match=r"(?i)" + __import__("re").escape(says)):
        TemplatePattern(pattern)


def test_a_huge_program_is_refused_by_the_memory_cap() -> None:
    with pytest.raises(TemplatePatternError):
        TemplatePattern(r"(?P<a>\pL{1000})")  # every Unicode letter, a thousand times


@pytest.mark.parametrize(
    "address",
    [
        "::",
        "::1",
        "fe80::1",
        "2001:db8:0:0:0:0:2:1",
        "2001:db8::2:1",
        "1::",
        "a:b:c:d:e:f:0:1",
        "1:2:3:4:5::7:8",
        "1::3:4:5:6:7:8",
    ],
)
def test_ipv6_forms(address: str) -> None:
    assert TemplatePattern("^%{IPV6:ip}$").fields(address) == [("ip", address)]
    assert TemplatePattern("^%{IP:ip} up$").fields(address + " up") == [("ip", address)]


def test_an_escaped_percent_brace_is_literal() -> None:
    pattern = TemplatePattern(r"^\%{x} %{INT:n:int} \\%{WORD:w}$")
    assert pattern.field_names == ["n", "w"]
    assert pattern.fields("%{x} 5 \\abc") == [("n", 5), ("w", "abc")]
