"""The ``parse`` processor's ``user_agent`` parser, VRL's ``parse_user_agent`` (the
platform's ``user_agent_parser``): VRL's own examples and tests
(``src/stdlib/parse_user_agent.rs``) in each mode give exactly VRL's answer, a crafted
long text stays bounded, and the provider's body (the VRL name, no options,
``target_field: ""``), refused before, builds and parses."""

from __future__ import annotations

from typing import Any

import pytest
from tests.components.helpers import build, run

from tidegate.errors import ValidationFailed
from tidegate.processing.user_agent import MAX_USER_AGENT, parse_user_agent

FIREFOX = (
    "Mozilla Firefox 1.0.1 Mozilla/5.0 (X11; U; Linux i686; de-DE; rv:1.7.6) "
    "Gecko/20050223 Firefox/1.0.1"
)
MSIE = "Mozilla/4.0 (compatible; MSIE 7.66; Windows NT 5.1; SV1; .NET CLR 1.1.4322)"
OPERA_MINI = (
    "Opera/9.80 (J2ME/MIDP; Opera Mini/4.3.24214; iPhone; CPU iPhone OS 4_2_1 like Mac OS X; "
    "AppleWebKit/24.783; U; en) Presto/2.5.25 Version/10.54"
)
DALVIK = "Dalvik/2.1.0 (Linux; U; Android 11; SM-G991B Build/RP1A.200720.012)"

FIREFOX_FAST = {
    "browser": {"family": "Firefox", "version": "1.0.1"},
    "device": {"category": "pc"},
    "os": {"family": "Linux", "version": None},
}
MSIE_READ = {
    "browser": {"family": "Internet Explorer", "version": "7.66"},
    "device": {"category": "pc"},
    "os": {"family": "Windows XP", "version": "NT 5.1"},
}
OPERA_MINI_ENRICHED = {
    "browser": {
        "family": "Opera Mini",
        "major": "4",
        "minor": "3",
        "patch": "24214",
        "version": "10.54",
    },
    "device": {"brand": "Apple", "category": "smartphone", "family": "iPhone", "model": "iPhone"},
    "os": {
        "family": "iOS",
        "major": "4",
        "minor": "2",
        "patch": "1",
        "patch_minor": None,
        "version": "4.2.1",
    },
}
ENRICHED_NOTHING = {
    "browser": {"family": None, "major": None, "minor": None, "patch": None, "version": None},
    "device": {"brand": None, "category": None, "family": None, "model": None},
    "os": {
        "family": None,
        "major": None,
        "minor": None,
        "patch": None,
        "patch_minor": None,
        "version": None,
    },
}


@pytest.mark.parametrize(
    ("text", "mode", "expected"),
    [
        # VRL's documented examples (its docs/generated/parse_user_agent.json).
        (FIREFOX, "fast", FIREFOX_FAST),
        (MSIE, "reliable", MSIE_READ),
        (OPERA_MINI, "enriched", OPERA_MINI_ENRICHED),
        # VRL's unit tests: "parses" (the default mode) and "unknown_user_agent".
        ("Mozilla/4.0 (compatible; MSIE 7.66; Windows NT 5.1; SV1)", "fast", MSIE_READ),
        ("w3m/0.3", "enriched", ENRICHED_NOTHING),
    ],
)
def test_parse_user_agent_as_vrl_answers(text: str, mode: Any, expected: Any) -> None:
    assert parse_user_agent(text, mode=mode) == expected


# Cases of woothee's shared test set as the Rust crate VRL links asserts them (its
# tests/*.rs: category, name, os, os_version, version), UNKNOWN read as null.
WOOTHEE_RUST = [
    (
        "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.0; InfoPath.1)",
        ("pc", "Internet Explorer", "Windows 2000", "NT 5.0", "6.0"),
    ),
    (
        "Mozilla/5.0 (Linux; U; Android 2.3.5; ja-jp; ISW11F Build/FGK500) AppleWebKit/533.1 "
        "(KHTML, like Gecko) Version/4.0 Mobile Safari/533.1",
        ("smartphone", "Safari", "Android", "2.3.5", "4.0"),
    ),
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 5_0_1 like Mac OS X) AppleWebKit/534.46 "
        "(KHTML, like Gecko) Version/5.1 Mobile/9A405 Safari/7534.48.3",
        ("smartphone", "Safari", "iPhone", "5.0.1", "5.1"),
    ),
    (
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        ("crawler", "Googlebot", None, None, None),
    ),
    (
        "Mozilla/5.0 (Nintendo 3DS; U; ; ja) Version/1.7455.JP",
        ("appliance", "Nintendo 3DS", "Nintendo 3DS", None, None),
    ),
    (
        "DoCoMo/2.0 SH01A(c100;TB;W24H16)",
        ("mobilephone", "docomo", "docomo", None, "SH01A"),
    ),
    ("AppleSyndication/56.1", ("misc", "Safari RSSReader", None, None, None)),
    # Where the Python port (1.10.1) answers otherwise, tidegate answers as the crate
    # (user_agent._as_the_crate): Google's ads crawlers, Samsung Internet, the Google
    # Search App, an Android version with no minor part, a BlackBerry 10's versions.
    (
        "Mozilla/5.0 (Linux; Android 5.0; SM-G920A) AppleWebKit (KHTML, like Gecko) Chrome "
        "Mobile Safari (compatible; AdsBot-Google-Mobile; +http://www.google.com/mobile/adsbot.html)",
        ("crawler", "AdsBot-Google-Mobile", None, None, None),
    ),
    (
        "AdsBot-Google (+http://www.google.com/adsbot.html)",
        ("crawler", "AdsBot-Google", None, None, None),
    ),
    (
        "Mozilla/5.0 (Linux; Android 5.0.2; SAMSUNG SM-G925F Build/LRX22G) AppleWebKit/537.36 "
        "(KHTML, like Gecko) SamsungBrowser/4.0 Chrome/44.0.2403.133 Mobile Safari/537.36",
        ("smartphone", "SamsungBrowser", "Android", "5.0.2", "4.0"),
    ),
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 11_1_1 like Mac OS X) AppleWebKit/604.1.34 "
        "(KHTML, like Gecko) GSA/41.0.178428663 Mobile/15B150 Safari/604.1",
        ("smartphone", "Google Search App", "iPhone", "11.1.1", "41.0.178428663"),
    ),
    (
        "Mozilla/5.0 (Android 11; Mobile; rv:93.0) Gecko/93.0 Firefox/93.0",
        ("smartphone", "Firefox", "Android", "11", "93.0"),
    ),
    (
        "Mozilla/5.0 (BB10; Touch) AppleWebKit/537.35+ (KHTML, like Gecko) "
        "Version/10.3.1.2243 Mobile Safari/537.35+",
        ("smartphone", "Safari", "BlackBerry 10", "10.3.1.2243", None),
    ),
]


def test_the_crates_rules_leave_what_they_do_not_name_to_woothee() -> None:
    """A Samsung text that Internet Explorer's rule takes first stays Internet Explorer;
    a Googlebot naming AdsBot stays Googlebot; a BlackBerry 10 text without a space
    after its version has no OS version (the crate's pattern needs the space)."""
    ie = "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1) SamsungBrowser/4.0"
    parsed = parse_user_agent(ie)
    assert parsed is not None
    assert parsed["browser"] == {"family": "Internet Explorer", "version": "8.0"}
    bot = "Mozilla/5.0 (compatible; Googlebot/2.1; AdsBot-Google-Mobile;)"
    parsed = parse_user_agent(bot)
    assert parsed is not None
    assert parsed["browser"]["family"] == "Googlebot"
    bb10 = "Mozilla/5.0 (BB10; Touch) AppleWebKit/537.35+ (KHTML, like Gecko) Version/10.3.1"
    parsed = parse_user_agent(bb10)
    assert parsed is not None
    assert parsed["os"] == {"family": "BlackBerry 10", "version": None}
    assert parsed["browser"]["version"] is None


@pytest.mark.parametrize(("text", "woothee"), WOOTHEE_RUST)
def test_fast_mode_answers_as_the_woothee_crate_vrl_links(text: str, woothee: Any) -> None:
    category, name, system, system_version, version = woothee
    assert parse_user_agent(text) == {
        "browser": {"family": name, "version": version},
        "device": {"category": category},
        "os": {"family": system, "version": system_version},
    }


def test_the_modes_schemas_and_null_rules() -> None:
    # Fast: woothee alone; its UNKNOWN is null, every key of the schema there.
    nothing = {
        "browser": {"family": None, "version": None},
        "device": {"category": None},
        "os": {"family": None, "version": None},
    }
    assert parse_user_agent("okhttp/4.9.0") == nothing
    assert parse_user_agent("") == nothing
    # Reliable: woothee finds no browser family, so uap-core's families win and
    # woothee's fill the rest (uap-core has no version: woothee's stays).
    assert parse_user_agent(DALVIK, mode="reliable") == {
        "browser": {"family": "Android", "version": None},
        "device": {"category": "smartphone"},
        "os": {"family": "Android", "version": "11"},
    }
    assert parse_user_agent("okhttp/4.9.0", mode="reliable") == {
        **nothing,
        "browser": {"family": "okhttp", "version": None},
    }
    # Woothee found both families: reliable is fast.
    assert parse_user_agent(FIREFOX, mode="reliable") == FIREFOX_FAST
    # Enriched: uap-core first, woothee's category and versions filling in.
    enriched = parse_user_agent(DALVIK, mode="enriched")
    assert enriched is not None
    assert enriched["device"] == {
        "brand": "Samsung",
        "category": "smartphone",
        "family": "Samsung SM-G991B",
        "model": "SM-G991B",
    }
    assert enriched["os"]["version"] == "11"


@pytest.mark.parametrize("mode", ["fast", "reliable", "enriched"])
def test_a_lone_surrogate_is_read_as_a_replacement_character(mode: Any) -> None:
    # A JSON escape can decode to one; VRL reads the text as lossy UTF-8.
    parsed = parse_user_agent("\ud800 " + OPERA_MINI, mode=mode)
    assert parsed == parse_user_agent("\ufffd " + OPERA_MINI, mode=mode)
    assert parsed is not None
    assert parsed["os"]["version"] == "4.2.1"


@pytest.mark.parametrize("mode", ["fast", "reliable", "enriched"])
def test_a_crafted_long_user_agent_is_bounded(mode: Any) -> None:
    # "Windows " over and over: woothee's `Windows ([ .a-zA-Z0-9]+)[;\)]` search scans
    # to the end from each one (quadratic on Python's re). Up to the bound it parses;
    # past it the text is not parsed at all.
    crafted = ("Mozilla/5.0 (" + "Windows " * MAX_USER_AGENT)[:MAX_USER_AGENT]
    parsed = parse_user_agent(crafted, mode=mode)
    assert parsed is not None
    assert parsed["browser"]["family"] is None
    assert parse_user_agent(crafted + "x", mode=mode) is None


async def test_the_provider_body_parses_what_was_refused() -> None:
    """processors/parse.go with ``user_agent_parser``: ``parse_user_agent``, no options
    (the provider has none for it), so VRL's default mode, fast."""
    config = {"field": ".something", "parser": "parse_user_agent", "target_field": ""}
    long = "Mozilla/5.0 " * MAX_USER_AGENT
    out = await run("parse", config, [{"something": FIREFOX}, {"something": long}, {}])
    assert out.main == [{"something": FIREFOX_FAST}, {"something": long}, {}]


async def test_the_mode_option_and_parse_sequentially() -> None:
    config = {"parser": "user_agent", "options": {"mode": "enriched"}, "target_field": ".ua"}
    out = await run("parse", config, [{"message": OPERA_MINI}])
    assert out.main == [{"message": OPERA_MINI, "ua": OPERA_MINI_ENRICHED}]
    sequence = {
        "field": ".message",
        "target_field": ".ua",
        "parsers": [{"parser": "parse_user_agent", "options": {"mode": "reliable"}}],
    }
    out = await run("parse-sequentially", sequence, [{"message": MSIE}])
    assert out.main == [{"message": MSIE, "ua": MSIE_READ}]
    with pytest.raises(ValidationFailed, match="mode"):
        build("parse", {"parser": "parse_user_agent", "options": {"mode": "slow"}})
