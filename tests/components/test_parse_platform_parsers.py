"""The ``parse`` processor's grok, cef and timestamp parsers, built from the bodies the
platform's Terraform provider sends (``processors/parse.go``: the VRL names, options,
and an empty ``target_field`` when none is set), and their refusals."""

from __future__ import annotations

from typing import Any

import pytest
from tests.components.helpers import build, run

from tidegate.errors import ValidationFailed
from tidegate.processing.cef import HEADER_FIELDS

APACHE = (
    '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 '
    '"http://www.example.com/start.html" "Mozilla/4.08"'
)
CEF = (
    "Sep 29 08:26:10 fw CEF:0|Dev|firewall|2.2|1|Connection denied|5|src=10.0.0.1 "
    "cs1=dmz cs1Label=zone msg=denied a \\= rule"
)


def provider(parser: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """ParseProcessorFromModel's body for ``field = ".something"``."""
    body: dict[str, Any] = {"field": ".something", "parser": parser, "target_field": ""}
    if options is not None:
        body["options"] = options
    return body


async def test_grok_as_the_provider_sends_it() -> None:
    config = provider("parse_grok", {"pattern": "%{USERNAME:user} %{EMAILADDRESS:email}"})
    out = await run("parse", config, [{"something": "login bob bob@example.com"}])
    assert out.main == [{"something": {"user": "bob", "email": "bob@example.com"}}]


async def test_grok_nested_library_patterns_conversions_and_groups() -> None:
    config = {
        "parser": "grok",
        "target_field": ".http",
        "options": {"pattern": r"^%{COMBINEDAPACHELOG} (?P<took>\d+)ms %{NUMBER:size:int}$"},
    }
    line = APACHE + " 17ms 42"
    out = await run("parse", config, [{"message": line}, {"message": "not a log"}])
    assert out.main[0]["http"] == {
        "clientip": "127.0.0.1",
        "ident": "-",
        "auth": "frank",
        "timestamp": "10/Oct/2000:13:55:36 -0700",
        "verb": "GET",
        "request": "/apache_pb.gif",
        "httpversion": "1.0",
        "response": "200",
        "bytes": "2326",
        "referrer": '"http://www.example.com/start.html"',
        "agent": '"Mozilla/4.08"',
        "size": 42,
        "took": "17",
    }
    assert out.main[1] == {"message": "not a log"}  # not of the pattern: unchanged


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("%{NOPE:x}", "%{NOPE} is not a known pattern name"),
        ("%{WORD:x", "never closed"),
        ("%{WORD}", "captures nothing"),
        ("(?<=a)%{WORD:w}", "not a valid RE2 pattern"),
        ("%{WORD:a:str}", "int or float"),
        ("%{COMBINEDAPACHELOG}" * 400, "longer than 4096"),
    ],
)
def test_a_bad_grok_pattern_is_a_clear_400(pattern: str, says: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        build("parse", provider("parse_grok", {"pattern": pattern}))
    (error,) = caught.value.errors
    assert error.instance_path == "/user_config/options/pattern"
    assert "not a grok pattern" in error.message
    assert says in error.message


def test_grok_and_regex_need_a_pattern() -> None:
    for parser in ("grok", "regex"):
        with pytest.raises(ValidationFailed, match=f"the {parser} parser needs options.pattern"):
            build("parse", {"parser": parser})


async def test_grok_is_linear_on_a_hostile_subject() -> None:
    config = {"parser": "grok", "options": {"pattern": "^(%{WORD:w} ?)+$"}}
    text = "ab " * 20_000 + "!"
    assert (await run("parse", config, [{"message": text}])).main == [{"message": text}]


async def test_cef_as_the_provider_sends_it() -> None:
    plain = await run("parse", provider("parse_cef"), [{"something": CEF}])
    fields = ["0", "Dev", "firewall", "2.2", "1", "Connection denied", "5"]
    header = dict(zip(HEADER_FIELDS, fields, strict=True))
    assert plain.main == [
        {
            "something": {
                **header,
                "src": "10.0.0.1",
                "cs1": "dmz",
                "cs1Label": "zone",
                "msg": "denied a = rule",
            }
        }
    ]
    translated = await run(
        "parse",
        provider("parse_cef", {"translate_custom_fields": True}),
        [{"something": CEF}, {"something": "plain text"}],
    )
    first = translated.main[0]["something"]
    assert first["zone"] == "dmz"
    assert "cs1" not in first
    assert "cs1Label" not in first
    assert translated.main[1] == {"something": "plain text"}


async def test_timestamp_as_the_provider_sends_it() -> None:
    preset = provider("parse_timestamp", {"format": "%a %d %b %T %Y"})
    out = await run("parse", preset, [{"something": "Sat 22 Nov 08:00:01 2025"}])
    assert out.main == [{"something": "2025-11-22T08:00:01Z"}]
    custom = provider("parse_timestamp", {"format": "Custom", "custom_format": "%Y/%m/%d %H:%M:%S"})
    events = [{"something": "2025/11/22 08:00:01"}, {"something": "yesterday"}, {"other": 1}]
    out = await run("parse", custom, events)
    assert out.main == [{"something": "2025-11-22T08:00:01Z"}, *events[1:]]


async def test_timestamp_formats_in_several_shapes() -> None:
    cases = [
        ("%d/%b/%Y:%T %z", "10/Oct/2000:13:55:36 -0700", "2000-10-10T20:55:36Z"),
        ("%+", "2025-11-22T08:00:01.5+01:00", "2025-11-22T07:00:01.500Z"),
        ("%s", "1700000000", "2023-11-14T22:13:20Z"),
        ("%b %e %H:%M:%S %Y", "Nov  2 08:00:01 2025", "2025-11-02T08:00:01Z"),
        ("%D %r", "11/22/25 08:00:01 PM", "2025-11-22T20:00:01Z"),
    ]
    for fmt, text, expected in cases:
        config = {"parser": "timestamp", "target_field": ".at", "options": {"format": fmt}}
        out = await run("parse", config, [{"message": text}])
        assert out.main == [{"message": text, "at": expected}], fmt


@pytest.mark.parametrize(
    ("options", "where", "says"),
    [
        ({"format": "%H:%M"}, "format", "states no date"),
        ({"format": "%Q"}, "format", "%Q is not a specifier"),
        ({"format": "Custom"}, "custom_format", "needs options.custom_format"),
        ({"format": "Custom", "custom_format": "%Y %x %q"}, "custom_format", "%q"),
        ({}, "format", "needs options.format"),
    ],
)
def test_a_bad_timestamp_format_is_a_clear_400(
    options: dict[str, Any], where: str, says: str
) -> None:
    with pytest.raises(ValidationFailed) as caught:
        build("parse", provider("parse_timestamp", options))
    (error,) = caught.value.errors
    assert error.instance_path == f"/user_config/options/{where}"
    assert says in error.message


def test_an_access_log_format_is_combined_or_common() -> None:
    with pytest.raises(ValidationFailed) as caught:
        build("parse", {"parser": "apache", "options": {"format": "%Y"}})
    assert caught.value.errors[0].instance_path == "/user_config/options/format"


async def test_parse_sequentially_tries_grok_cef_and_timestamp_in_turn() -> None:
    config = {
        "field": ".message",
        "target_field": "",
        "parsers": [
            {"parser": "parse_cef", "label": "cef"},
            {"parser": "parse_grok", "label": "grok", "options": {"pattern": "^%{SYSLOGLINE}$"}},
            {"parser": "parse_timestamp", "label": "time", "options": {"format": "%F %T"}},
        ],
    }
    events = [
        {"message": CEF},
        {"message": "Nov 22 08:00:01 box cron[7]: ran"},
        {"message": "2025-11-22 08:00:01"},
        {"message": "none of them"},
    ]
    out = await run("parse-sequentially", config, events)
    assert [len(out.named[name]) for name in ("parser-1", "parser-2", "parser-3")] == [1, 1, 1]
    assert out.named["parser-1"][0]["message"]["name"] == "Connection denied"
    assert out.named["parser-2"][0]["message"] == {
        "timestamp": "Nov 22 08:00:01",
        "logsource": "box",
        "program": "cron",
        "pid": "7",
        "message": "ran",
    }
    assert out.named["parser-3"] == [{"message": "2025-11-22T08:00:01Z"}]
    assert out.named["_unmatched"] == [{"message": "none of them"}]
