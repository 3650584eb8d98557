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

APACHE = '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326'
PSQL = "2023-07-30 08:31:50.628 UTC [2176] postgres@chinook starting PostgreSQL 15.3"

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
    "EMAILLOCALPART": ("john.doe+x", "1abc"),
    "BASE16NUM": ("0x1F", "0xZZ"),
    "BASE16FLOAT": ("0x1.8", "x."),
    "URN": ("urn:isbn:0451450523", "urn:"),
    "CISCOMAC": ("0001.2345.6789", "00:01:23"),
    "WINDOWSMAC": ("00-1A-2B-3C-4D-5E", "00:1A:2B:3C:4D:5E"),
    "COMMONMAC": ("00:1a:2b:3c:4d:5e", "00-1a-2b-3c-4d-5e"),
    "HOST": ("db-1.local", "-x"),
    "UNIXPATH": ("/var/log/syslog", "C:\\x"),
    "TTY": ("/dev/pts/0", "/dev/sda"),
    "WINPATH": ("C:\\Windows\\system32", "/usr"),
    "URIPROTO": ("git+ssh", "1http"),
    "URIHOST": ("example.com:8080", "example.com:"),
    "URIPARAM": ("?a=1&b=2", "a=1"),
    "URI": ("https://user@example.com:8443/a/b?c=d", "example.com/a"),
    "MONTH": ("March", "Marc"),
    "MONTHNUM": ("7", "13"),
    "MONTHNUM2": ("07", "7"),
    "MONTHDAY": ("31", "32"),
    "DAY": ("Thursday", "Thurs"),
    "YEAR": ("2025", "202"),
    "HOUR": ("23", "24"),
    "MINUTE": ("59", "60"),
    "SECOND": ("60.5", "61"),
    "TIME": ("08:00:01", "08:00"),
    "DATE_US": ("11/22/2025", "22/11/2025"),
    "DATE_EU": ("22.11.2025", "11.22.2025"),
    "ISO8601_TIMEZONE": ("+05:30", "05:30"),
    "ISO8601_SECOND": ("59", "x"),
    "DATE": ("22.11.2025", "2025-11-22"),
    "DATESTAMP": ("11/22/2025 08:00:01", "11/22/2025"),
    "TZ": ("PST", "XST"),
    "DATESTAMP_RFC822": ("Sat Nov 22 2025 08:00:01 UTC", "Sat Nov 22 2025"),
    "DATESTAMP_RFC2822": ("Sat, 22 Nov 2025 08:00:01 +0000", "Sat, 22 Nov 2025"),
    "DATESTAMP_OTHER": ("Sat Nov 22 08:00:01 UTC 2025", "Sat Nov 22 08:00:01 2025"),
    "DATESTAMP_EVENTLOG": ("20251122080001", "2025-11-22"),
    "PROG": ("sshd", "a[b"),
    "SYSLOGPROG": ("sshd[123]", "[123]"),
    "SYSLOGHOST": ("host-1", "-x"),
    "SYSLOGFACILITY": ("<4.6>", "<4>"),
    "SYSLOGBASE": ("Nov 22 08:00:01 host sshd[42]:", "Nov 22 08:00:01 host"),
    "COMMONAPACHELOG": (APACHE, "x"),
    "COMBINEDAPACHELOG": (APACHE + ' "-" "curl/8.5"', APACHE),
    "SYSLOG5424PRINTASCII": ("abc", "a b"),
    "SYSLOGBASE2": ("2025-11-22T08:00:01Z host app[1]:", "host"),
    "SYSLOGLINE": ("Nov 22 08:00:01 host app: hello", "hello"),
    "CRON_ACTION": ("CMD", "cmd"),
    "CRONLOG": (
        "Nov 22 08:00:01 host CRON[1]: (root) CMD (run-parts /etc/cron.hourly)",
        "Nov 22 08:00:01 host CRON[1]:",
    ),
    "SYSLOG5424PRI": ("<34>", "34"),
    "SYSLOG5424SD": ('[a b="c"]', "a"),
    "SYSLOG5424BASE": ("<34>1 2025-11-22T08:00:01Z host app 1 ID47 -", "<34>"),
    "SYSLOG5424LINE": ("<34>1 2025-11-22T08:00:01Z host app 1 ID47 - hello", "<34>1"),
    "JSON_OBJECT": ('{"a": 1}', "[1]"),
    "JSON_ARRAY": ("[1, 2]", "{}"),
    "XML": ('<a x="1">b</a>', "<a>"),
    "CURLY_BRACKET": ("{", "("),
    "SQUARE_BRACKET": ("]", ")"),
    "TAB": ("\t", " "),
    "SINGLE_SPACE": (" ", "  "),
    "ANY_CHAR": ("x", "xy"),
    "DOUBLE_QUOTE": ('"', "'"),
    "SINGLE_QUOTE": ("'", '"'),
    "PERIOD": (".", "x"),
    "UTF8_WORD": ("España", "a b"),
    "SENTENCE": ("Visca Barça", "123"),
    "OPTIONAL_SENTENCE": ("", "123"),
    "PSQL_LOG": (PSQL, "postgres"),
    "GOLANG_LOG": ("01/23/2024 16:24:22 INFO this is a demo line", "INFO demo"),
    "ELASTICSEARCH_LOG": (
        "[2023-02-24 10:45:49,124][WARN ][index.search.slowlog.query] took[2.9ms]",
        "[WARN ] took",
    ),
}


def test_every_named_pattern_is_exemplified() -> None:
    assert set(EXAMPLES) == set(PATTERNS)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_each_named_pattern_matches_what_grok_means(name: str) -> None:
    good, bad = EXAMPLES[name]
    pattern = TemplatePattern(f"^%{{{name}:value}}$")
    found = pattern.fields(good)
    assert found is not None
    assert found[0] == ("value", good)  # then the captures of its definition, if any
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


def test_library_definitions_nest_and_their_captures_are_fields() -> None:
    pattern = TemplatePattern("%{COMBINEDAPACHELOG}")
    line = APACHE + ' "http://example.com/start" "Mozilla/4.08"'
    assert pattern.fields(line) == [
        ("clientip", "127.0.0.1"),
        ("ident", "-"),
        ("auth", "frank"),
        ("timestamp", "10/Oct/2000:13:55:36 -0700"),
        ("verb", "GET"),
        ("request", "/apache_pb.gif"),
        ("httpversion", "1.0"),
        ("response", "200"),
        ("bytes", "2326"),
        ("referrer", '"http://example.com/start"'),
        ("agent", '"Mozilla/4.08"'),
    ]
    # A named token keeps its own capture ahead of those of its definition.
    syslog = TemplatePattern("^%{SYSLOGBASE:head} %{GREEDYDATA:message}$")
    assert syslog.fields("Nov 22 08:00:01 box sshd[42]: Accepted key") == [
        ("head", "Nov 22 08:00:01 box sshd[42]:"),
        ("timestamp", "Nov 22 08:00:01"),
        ("logsource", "box"),
        ("program", "sshd"),
        ("pid", "42"),
        ("message", "Accepted key"),
    ]


def test_the_platforms_own_patterns() -> None:
    assert TemplatePattern("%{PSQL_LOG}").fields(PSQL) == [
        ("timestamp", "2023-07-30 08:31:50.628"),
        ("pid", "2176"),
        ("username", "postgres"),
        ("database", "chinook"),
        ("message", "starting PostgreSQL 15.3"),
    ]
    pattern = TemplatePattern("%{DATA}%{JSON_OBJECT:json} %{LOGLEVEL:level}")
    assert pattern.fields('hello {"prop": 1} info') == [("json", '{"prop": 1}'), ("level", "info")]


def test_nesting_and_expansion_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import tidegate.processing.grok as grok

    monkeypatch.setitem(grok.PATTERNS, "LOOP", "a%{LOOP}")
    with pytest.raises(TemplatePatternError, match="nests more than"):
        TemplatePattern("%{LOOP:x}")
    monkeypatch.setattr(grok, "MAX_EXPANDED_CHARS", 1_000)
    with pytest.raises(TemplatePatternError, match="expands to more than"):
        TemplatePattern("%{COMBINEDAPACHELOG}")
