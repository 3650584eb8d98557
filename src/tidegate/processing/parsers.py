"""Parsers of text fields into structured values, for the ``parse`` processors.

Each parser is a pure function of a string that returns the parsed value, or None when
the text is not of its format; none raises on any input, and each runs in time linear
in the text (fixed patterns run on RE2, tenant patterns go through
``linear_regex.CapturingRegex``; splitting is bounded by ``MAX_PAIRS``). Field names
follow the platform's engine (Vector's ``parse_apache_log``, ``parse_syslog``...).
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final

import orjson

from tidegate.processing.grok import TemplatePattern
from tidegate.processing.linear_regex import CapturingRegex
from tidegate.processing.timestamp_format import TimestampFormat, rfc3339

__all__ = [
    "MAX_PAIRS",
    "parse_access_log",
    "parse_csv_row",
    "parse_grok",
    "parse_json",
    "parse_key_value",
    "parse_regex",
    "parse_syslog",
    "parse_timestamp",
]

MAX_PAIRS: Final = 1_000
"""Keys (key_value) or columns (csv_row) one parse produces at most; the rest is left."""

_CLF = (
    r"^(?P<host>\S+) (?P<ident>\S+) (?P<user>\S+) \[(?P<timestamp>[^\]]{1,64})\] "
    r'"(?P<request>[^"]*)" (?P<status>\d{3}|-) (?P<size>\d+|-)'
)
_COMMON: Final = CapturingRegex(_CLF + r"\s*$")
_COMBINED: Final = CapturingRegex(_CLF + r' "(?P<referrer>[^"]*)" "(?P<agent>[^"]*)"(?: .*)?$')
_REQUEST: Final = CapturingRegex(r"^(?P<method>[A-Za-z]+) (?P<path>\S+)(?: (?P<protocol>\S+))?$")
_SYSLOG_5424: Final = CapturingRegex(
    r"^<(?P<pri>\d{1,3})>(?P<version>\d{1,2}) (?P<timestamp>\S+) (?P<hostname>\S+) "
    r"(?P<appname>\S+) (?P<procid>\S+) (?P<msgid>\S+) "
    r"(?P<sd>-|(?:\[[^\]]*\])+)(?: (?P<message>[\s\S]*))?$"
)
_SYSLOG_3164: Final = CapturingRegex(
    r"^(?:<(?P<pri>\d{1,3})>)?(?P<timestamp>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) "
    r"(?P<hostname>\S+) (?P<tag>[^:\[\s]+)(?:\[(?P<procid>[^\]]*)\])?: ?(?P<message>[\s\S]*)$"
)
_SD_ELEMENT: Final = CapturingRegex(r"^\[(?P<id>[^\s\]]+)(?P<params>[^\]]*)\]")
_SD_PARAM: Final = CapturingRegex(r'^\s+(?P<name>[^=\s]+)="(?P<value>(?:[^"\\]|\\.)*)"')
_FACILITIES: Final = (
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron",
    "authpriv", "ftp", "ntp", "security", "console", "solaris-cron", "local0", "local1",
    "local2", "local3", "local4", "local5", "local6", "local7",
)  # fmt: skip
_SEVERITIES: Final = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")


def parse_json(text: str) -> Any:
    """Any JSON value; None when the text is not JSON (or is JSON ``null``)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def parse_key_value(
    text: str, *, field_delimiter: str = " ", key_value_delimiter: str = "="
) -> dict[str, Any] | None:
    """``a=1 b="two words"``: pairs split on ``field_delimiter`` (quotes keep a value
    whole), keys and values on the first ``key_value_delimiter``; a word without the
    delimiter becomes a key with the value ``true``. None when no pair is found."""
    result: dict[str, Any] = {}
    for part in _split_outside_quotes(text, field_delimiter):
        if len(result) >= MAX_PAIRS:
            break
        if not part:
            continue
        key, found, value = part.partition(key_value_delimiter)
        key = _unquote(key.strip())
        if not key:
            continue
        result[key] = _unquote(value.strip()) if found else True
    return result or None


def _split_outside_quotes(text: str, delimiter: str) -> list[str]:
    """Split on ``delimiter`` (runs of whitespace when it is one space) outside double
    quotes; linear in the text."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i, n, width = 0, len(text), len(delimiter)
    whitespace = delimiter == " "
    while i < n:
        char = text[i]
        if char == '"':
            quoted = not quoted
            current.append(char)
            i += 1
        elif not quoted and (
            (whitespace and char.isspace()) or (not whitespace and text.startswith(delimiter, i))
        ):
            parts.append("".join(current))
            current = []
            i += 1 if whitespace else width
        else:
            current.append(char)
            i += 1
    parts.append("".join(current))
    return parts


def parse_regex(text: str, regex: CapturingRegex) -> dict[str, Any] | None:
    """The named groups of the first match (a group that did not take part is absent)."""
    groups = regex.named_groups(text)
    if groups is None:
        return None
    return {name: value for name, value in groups.items() if value is not None}


def parse_grok(text: str, pattern: TemplatePattern) -> dict[str, Any] | None:
    """The fields a grok pattern captures in its first match, by the names written
    (``%{IP:client.ip}`` is the key ``client.ip``, as VRL's ``parse_grok`` answers);
    a name captured twice keeps its first value that took part."""
    found = pattern.fields(text)
    if found is None:
        return None
    result: dict[str, Any] = {}
    for name, value in found:
        result.setdefault(name, value)
    return result


def parse_timestamp(text: str, time_format: TimestampFormat) -> str | None:
    """The time the whole text states in ``time_format``, as RFC 3339 in UTC."""
    moment = time_format.read(text)
    return None if moment is None else rfc3339(moment)


_MONTHS: Final = {
    name: index + 1
    for index, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    )
}


def _clf_time(text: str) -> str | None:
    """``10/Oct/2000:13:55:36 -0700`` as RFC 3339 UTC (by hand: strptime costs ~10x)."""
    if len(text) != 26 or text[2] != "/" or text[6] != "/" or text[20] != " ":
        return None
    try:
        sign = {"+": 1, "-": -1}[text[21]]
        offset = timedelta(hours=int(text[22:24]), minutes=int(text[24:26])) * sign
        moment = datetime(
            int(text[7:11]),
            _MONTHS[text[3:6]],
            int(text[0:2]),
            int(text[12:14]),
            int(text[15:17]),
            int(text[18:20]),
            tzinfo=timezone(offset),
        )
    except (KeyError, ValueError):
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_access_log(text: str, *, log_format: str = "combined") -> dict[str, Any] | None:
    """Apache/nginx access logs: ``common`` (CLF) or ``combined`` (CLF + referrer and
    user agent). ``-`` fields are left out; status and size are integers; the time is
    RFC 3339 in UTC."""
    groups = (_COMBINED if log_format == "combined" else _COMMON).named_groups(text)
    if groups is None:
        return None
    result: dict[str, Any] = {}
    for name in ("host", "ident", "user", "referrer", "agent"):
        value = groups.get(name)
        if value is not None and value != "-":
            result[name] = value
    stamp = _clf_time(groups["timestamp"] or "")
    result["timestamp"] = stamp if stamp is not None else groups["timestamp"]
    request = groups["request"] or ""
    result["message"] = request
    parts = _REQUEST.named_groups(request)
    if parts is not None:
        result.update({key: value for key, value in parts.items() if value is not None})
    for name in ("status", "size"):
        value = groups[name]
        if value is not None and value != "-":
            result[name] = int(value)
    return result


def _priority(result: dict[str, Any], pri: str | None) -> bool:
    if pri is None:
        return True
    value = int(pri)
    if value > 191:
        return False
    result["facility"] = _FACILITIES[value >> 3]
    result["severity"] = _SEVERITIES[value & 7]
    return True


def _structured_data(text: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    rest = text
    while rest.startswith("[") and len(found) < MAX_PAIRS:
        element = _SD_ELEMENT.named_groups(rest)
        if element is None:
            break
        params: dict[str, str] = {}
        body = (element["params"] or "").lstrip()
        while body and len(params) < MAX_PAIRS:
            param = _SD_PARAM.named_groups(" " + body)
            if param is None:
                break
            name, value = param["name"] or "", param["value"] or ""
            params[name] = value.replace('\\"', '"').replace("\\]", "]")
            body = body[len(name) + len(value) + 3 :].lstrip()
        found[element["id"] or ""] = params
        rest = rest[len(element["id"] or "") + len(element["params"] or "") + 2 :]
    return found


def parse_syslog(text: str, *, now: datetime | None = None) -> dict[str, Any] | None:
    """RFC 5424, else RFC 3164 (BSD). ``-`` (nil) fields are left out; RFC 3164 has no
    year: the current year (of ``now``, UTC) is assumed."""
    result: dict[str, Any] = {}
    groups = _SYSLOG_5424.named_groups(text)
    if groups is not None:
        if not _priority(result, groups["pri"]):
            return None
        result["version"] = int(groups["version"] or "1")
        for name in ("timestamp", "hostname", "appname", "procid", "msgid"):
            value = groups[name]
            if value is not None and value != "-":
                result[name] = value
        if groups["sd"] and groups["sd"] != "-":
            result.update(_structured_data(groups["sd"]))
        result["message"] = (groups["message"] or "").removeprefix("\ufeff")
        return result
    groups = _SYSLOG_3164.named_groups(text)
    if groups is None or not _priority(result, groups["pri"]):
        return None
    year = (now or datetime.now(UTC)).year
    try:
        stamp = datetime.strptime(f"{year} {groups['timestamp']} +0000", "%Y %b %d %H:%M:%S %z")
        result["timestamp"] = stamp.isoformat().replace("+00:00", "Z")
    except ValueError:
        result["timestamp"] = groups["timestamp"]
    result["hostname"] = groups["hostname"]
    result["appname"] = groups["tag"]
    if groups["procid"]:
        result["procid"] = groups["procid"]
    result["message"] = groups["message"] or ""
    return result


def parse_csv_row(
    text: str, *, delimiter: str = ",", headers: list[str] | None = None
) -> dict[str, Any] | list[str] | None:
    """One CSV row: a list of strings, or an object by ``headers`` (extra columns are
    dropped, missing ones absent). None when the text holds several lines."""
    if "\n" in text.rstrip("\r\n"):
        return None
    try:
        rows = list(csv.reader([text], delimiter=delimiter, strict=True))
    except csv.Error:
        return None
    if not rows:
        return None
    row = rows[0][:MAX_PAIRS]
    if headers is None:
        return row
    return dict(zip(headers, row, strict=False))
