"""VRL's ``parse_user_agent`` (the platform's ``user_agent_parser``).

As VRL's ``src/stdlib/parse_user_agent.rs``: two parsers, woothee and uap-core's rules,
and three modes. ``fast`` (VRL's default, and what the platform's Terraform provider
gets: it sends no options) is woothee alone. ``reliable`` is woothee, and when it finds
no browser or no operating system family, uap-core's answer with woothee's filling
what uap-core leaves empty. ``enriched`` is always uap-core's answer with woothee's
filling the gaps, in the full schema. Every key of a mode's schema is always there;
what neither parser found is null, and so is woothee's ``UNKNOWN`` or empty value.
uap-core never gives a browser or an operating system version (only its parts), so
``version`` is woothee's in every mode.

uap-core's rules run on the Rust ``regex`` engine (``ua-parser-rs``, the same
``ua-parser`` crate VRL links), linear in the text. woothee's Python port runs on
Python's ``re``, and some of its searches are quadratic on a crafted text (one
``Windows `` search per occurrence, each scanning to the end): a text longer than
``MAX_USER_AGENT`` is not parsed (None), which bounds the worst case to a few
milliseconds (``bench/bench_user_agent.py``); real user agents are far shorter (HTTP
servers cap a header line at about 8 KiB; browsers send a few hundred characters).
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from ua_parser.regex import Resolver

__all__ = ["MAX_USER_AGENT", "UserAgentMode", "parse_user_agent", "prepare"]

UserAgentMode = Literal["fast", "reliable", "enriched"]

MAX_USER_AGENT: Final = 2048
"""Longer texts are not parsed (woothee's searches are quadratic at worst)."""

Fields = dict[str, str | None]
Parsed = dict[str, Fields]

# Each part's keys in VRL's schemas (its objects are ordered maps: keys sorted).
_PARTIAL: Final = {
    "browser": ("family", "version"),
    "device": ("category",),
    "os": ("family", "version"),
}
_FULL: Final = {
    "browser": ("family", "major", "minor", "patch", "version"),
    "device": ("brand", "category", "family", "model"),
    "os": ("family", "major", "minor", "patch", "patch_minor", "version"),
}
_WOOTHEE_UNKNOWN: Final = ("", "UNKNOWN")


@cache
def _uap() -> Resolver:
    """uap-core's rules compiled on the Rust engine (about 0.2 s, once per process).
    The lazy matchers never compile the rules on Python's ``re``. The library (with
    PyYAML, about 0.12 s of CPU) and woothee load at first use, not with the catalogue
    of components every server imports."""
    from ua_parser import load_lazy_builtins
    from ua_parser.regex import Resolver

    return Resolver(load_lazy_builtins())


def prepare(mode: UserAgentMode) -> None:
    """Compiles what ``mode`` needs now (when the pipeline is built), not on the first
    event."""
    if mode != "fast":
        _uap()


def _known(value: str) -> str | None:
    return None if value in _WOOTHEE_UNKNOWN else value


_UNKNOWN: Final = "UNKNOWN"
_ADSBOT_MOBILE: Final = "compatible; AdsBot-Google-Mobile;"
# Browsers the crate recognises before Samsung Internet (its ``try_browser`` order).
_BEFORE_SAMSUNG: Final = frozenset({"Internet Explorer", "Edge", "Vivaldi", "Yandex Browser"})
_SAMSUNG_VERSION: Final = re.compile(r"SamsungBrowser/([.0-9]+)")
_GSA_VERSION: Final = re.compile(r"GSA/([.0-9]+)")
_ANDROID_VERSION: Final = re.compile(r"Android[- ](\d+(?:\.\d+(?:\.\d+)?)?)")
_BB10_VERSION: Final = re.compile(r"Version/([.0-9]+) ")


def _crawler(name: str) -> dict[str, str]:
    return {"name": name, "category": "crawler", "os": _UNKNOWN, "os_version": _UNKNOWN,
            "version": _UNKNOWN}  # fmt: skip


def _bb10_version(text: str) -> str:
    """The crate's ``BB10(?:.+)Version/([.0-9]+) ``, without its backtracking: the last
    ``Version/<digits> `` after the first ``BB10`` and one more character."""
    start = text.find("BB10")
    found = [match.group(1) for match in _BB10_VERSION.finditer(text, start + 5)]
    return found[-1] if start >= 0 and found else _UNKNOWN


def _as_the_crate(text: str, found: dict[str, Any]) -> dict[str, Any]:
    """woothee's answer as the Rust crate VRL links (0.13, 2023) gives it, where the
    Python port (1.10.1, 2019) does not know a newer rule of woothee's: Google's ads
    crawlers, Samsung Internet and the Google Search App by name and version, an Android
    version without a minor one where no ``Linux`` precedes it, and a BlackBerry 10's
    browser version unknown (its OS version as the crate reads it)."""
    if "Google" in text and "compatible; Googlebot" not in text:
        if _ADSBOT_MOBILE in text:
            return _crawler("AdsBot-Google-Mobile")
        if text.startswith("AdsBot-Google"):
            return _crawler("AdsBot-Google")
    if found["category"] == "crawler":
        return found
    found = dict(found)
    name = found["name"]
    if (
        "SamsungBrowser/" in text
        and name not in _BEFORE_SAMSUNG
        and not (name == "Firefox" and "FxiOS/" in text)
    ):
        version = _SAMSUNG_VERSION.search(text)
        found["name"], found["version"] = "SamsungBrowser", version[1] if version else _UNKNOWN
    elif name == "Safari" and "GSA" in text and (version := _GSA_VERSION.search(text)):
        found["name"], found["version"] = "Google Search App", version[1]
    if found["os"] == "Android" and found["os_version"] in _WOOTHEE_UNKNOWN:
        android = _ANDROID_VERSION.search(text)
        if android:
            found["os_version"] = android[1]
    elif found["os"] == "BlackBerry 10":
        found["version"], found["os_version"] = _UNKNOWN, _bb10_version(text)
    return found


def _woothee(text: str) -> Parsed:
    import woothee

    found = _as_the_crate(text, woothee.parse(text))
    return {
        "browser": {"family": _known(found["name"]), "version": _known(found["version"])},
        "os": {"family": _known(found["os"]), "version": _known(found["os_version"])},
        "device": {"category": _known(found["category"])},
    }


def _fields(found: object | None, names: tuple[str, ...]) -> Fields:
    """A uap-core answer's fields; none when none of its rules matched."""
    return {} if found is None else {name: getattr(found, name) for name in names}


def _uap_core(text: str) -> Parsed:
    from ua_parser import Domain

    found = _uap()(text, Domain.ALL)
    return {
        "browser": _fields(found.user_agent, ("family", "major", "minor", "patch")),
        "os": _fields(found.os, ("family", "major", "minor", "patch", "patch_minor")),
        "device": _fields(found.device, ("family", "brand", "model")),
    }


def _utf8_lossy(text: str) -> str:
    """A lone surrogate (which a decoded JSON escape can hold) as U+FFFD, as VRL reads
    the text (``try_bytes_utf8_lossy``); the Rust engine takes UTF-8 only."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode(errors="surrogatepass").decode(errors="replace")
    return text


def _schema(keys: dict[str, tuple[str, ...]], first: Parsed, then: Parsed) -> Parsed:
    """VRL's ``first.or(then)`` in a schema: each key's value from ``first``, else from
    ``then``, else null."""
    result: Parsed = {}
    for part, names in keys.items():
        ours, theirs = first.get(part, {}), then.get(part, {})
        result[part] = {
            name: value if (value := ours.get(name)) is not None else theirs.get(name)
            for name in names
        }
    return result


_NOTHING: Final[Parsed] = {}


def parse_user_agent(text: str, *, mode: UserAgentMode = "fast") -> Parsed | None:
    """``{"browser": {...}, "device": {...}, "os": {...}}`` in ``mode``'s schema (see the
    module); None only for a text over ``MAX_USER_AGENT``."""
    if len(text) > MAX_USER_AGENT:
        return None
    if not text.isascii():
        text = _utf8_lossy(text)
    fast = _woothee(text)
    if mode == "enriched":
        return _schema(_FULL, _uap_core(text), fast)
    if mode == "reliable" and (fast["browser"]["family"] is None or fast["os"]["family"] is None):
        return _schema(_PARTIAL, _uap_core(text), fast)
    return _schema(_PARTIAL, fast, _NOTHING)
