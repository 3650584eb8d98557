"""Line parsing: the fields a line's text carries, read once as the line is stored.

``parse_text`` looks at a line's text and returns what it found (``Parsed``): its fields
(a JSON object, logfmt pairs, an Apache or nginx access line, an nginx error line, a
syslog line, a klog line, a PostgreSQL, Redis, Tomcat, Ruby Logger or Go ``log`` line:
``logs.server_formats``; an AWS load balancer's, S3's or HAProxy's access log line:
``logs.access_formats``), the level those fields or the text give, and whether a ``level`` field
overrides the line's own. ``parse_line`` applies that to a ``NewLine`` in the one writer
(``logs.intake.judge_lines``), so every way in parses alike. docs/line-parsing.md has
the rules and each decision.

Tenant input, so every step is linear in the text and bounded:

- only the first ``MAX_PARSED_CHARS`` of a line are parsed (a longer line is stored as
  plain text, its level still read from its start); at most ``MAX_FIELDS`` fields are
  kept and objects nest ``MAX_DEPTH`` deep (deeper ones are kept as their JSON text);
- the JSON object at the end of a text is looked for at the first ``MAX_JSON_STARTS``
  ``{`` of the text only, each try one pass of orjson (C);
- the regular expressions are anchored, without nested quantifiers, and no two
  adjacent quantified parts can match the same character, so Python's engine never
  backtracks more than a constant per character.

Nothing here raises on a line: a text that parses as nothing is a plain line.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from tidegate.logs.access_formats import access_log, haproxy_log
from tidegate.logs.cloud_formats import cloud_log
from tidegate.logs.server_formats import ServerFormat, from_digit, ruby_logger
from tidegate.logs.store import NewLine
from tidegate.logs.timestamps import text_time
from tidegate.search.compiler import PREFIXED_FIELDS

log = logging.getLogger(__name__)

__all__ = [
    "MAX_FIELDS",
    "MAX_PARSED_CHARS",
    "CustomParser",
    "Parsed",
    "canonical_level",
    "level_from_text",
    "parse_line",
    "parse_syslog",
    "parse_text",
    "parsed_message",
    "structured_data",
]

MAX_PARSED_CHARS = 32_768
MAX_FIELDS = 200
MAX_DEPTH = 8
MAX_JSON_STARTS = 4
# A level word must sit within this many characters of the start (after a timestamp).
_LEVEL_WINDOW = 128
# Where the level, app and host are stored (their columns' sizes).
_MAX_LEVEL = 64
_MAX_APP = 512
_MAX_HOST = 256

# The platform's level words and their usual spellings, folded, to what is stored.
_LEVELS: dict[str, str] = {
    "critical": "CRITICAL",
    "crit": "CRITICAL",
    "debug": "DEBUG",
    "dbg": "DEBUG",
    "emergency": "EMERGENCY",
    "emerg": "EMERGENCY",
    "error": "ERROR",
    "err": "ERROR",
    "eror": "ERROR",
    "fatal": "FATAL",
    "info": "INFO",
    "inf": "INFO",
    "information": "INFO",
    "severe": "SEVERE",
    "trace": "TRACE",
    "trc": "TRACE",
    "warn": "WARN",
    "warning": "WARNING",
    "wrn": "WARN",
    "notice": "NOTICE",
    "alert": "ALERT",
}

# A timestamp at the start of a line: ISO 8601 / RFC 3339 (date, T or space, time,
# fraction, zone), syslog's "Oct 11 22:14:15", nginx's "2024/01/15 10:30:00", a bare
# clock time, or epoch seconds/milliseconds. Each alternative is a fixed shape.
_TIMESTAMP = (
    r"(?:\d{4}[-/]\d{2}[-/]\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d{1,9})?)?"
    r"(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?"
    r"|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
    r"|\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
    r"|\d{10}(?:\d{3})?(?:\.\d{1,9})?)"
)
# The start of a line up to its level word: an optional timestamp (in brackets or
# not), separators, an optional opening bracket, then the word and what ends it.
_LEVEL_AT_START = re.compile(
    r"[ \t]{0,8}(?P<ts>\[?" + _TIMESTAMP + r"\]?[ \t|:,-]{1,4})?"
    r"(?P<open>[\[<(])?(?P<word>[A-Za-z]{3,11})(?P<close>[\]>)]|:|[ \t|,-]|$)"
)


def canonical_level(text: str) -> str:
    """A level as stored: a known level word in its canonical spelling (``err``:
    ``ERROR``), any other text as written (trimmed)."""
    word = text.strip()
    return _LEVELS.get(word.casefold(), word)


def level_from_text(text: str) -> str | None:
    """The level word a line's text starts with, after an optional timestamp and a
    separator. Without a timestamp or a bracket around it, the word must be written in
    capitals (``ERROR disk full``), so a sentence that starts with ``error`` or ``Info``
    is not taken for a level."""
    found = _LEVEL_AT_START.match(text, 0, _LEVEL_WINDOW)
    if found is None:
        return None
    word = found.group("word")
    level = _LEVELS.get(word.casefold())
    if level is None:
        return None
    if found.group("open") is not None:
        closing = found.group("close")
        if closing not in ("]", ">", ")"):
            return None
        return level
    if found.group("ts") is None and not word.isupper():
        return None
    return level


@dataclass(slots=True)
class Parsed:
    """What a line's text holds. ``fields``: the parsed fields (reserved names already
    prefixed), None when the text is not in a known form. ``level``: the level the
    text gives (a ``level`` field, a format's severity, or a level word).
    ``overrides``: the level came from a ``level`` field, which sets the line's level
    even when the sender gave one."""

    fields: dict[str, Any] | None = None
    level: str | None = None
    overrides: bool = False
    # The line's own app, host and time a parsing template captured (``_app``,
    # ``_host``, ``_ts``: logs.templates), which replace the sender's.
    app: str | None = None
    host: str | None = None
    time: str | None = None


# An account's own parsing (its templates): the fields of a text, None when it declines.
CustomParser = Callable[[str], Parsed | None]


def parse_text(text: str, templates: CustomParser | None = None) -> Parsed:
    """The fields and level of ``text`` (see the module's docstring). ``templates``:
    the account's own parsing templates, tried first (``logs.templates``)."""
    if len(text) <= MAX_PARSED_CHARS:
        parsed = templates(text) if templates is not None else None
        if parsed is None:
            parsed = _structured(text)
        if parsed is not None:
            return parsed
    return Parsed(level=level_from_text(text))


def parsed_message(text: str) -> str | None:
    """The ``message`` field the built-in forms read in ``text`` (JSON, syslog, logfmt,
    nginx error, klog, the servers' and CloudWatch's forms), None when the text is in
    none of them or its form carries no message. A template's is not looked at: what
    the account's templates were when the line was stored is not known afterwards."""
    if len(text) > MAX_PARSED_CHARS:
        return None
    parsed = _structured(text)
    if parsed is None or not parsed.fields:
        return None
    message = parsed.fields.get("message")
    return message if isinstance(message, str) else None


def parse_line(line: NewLine, templates: CustomParser | None = None) -> NewLine:
    """``line`` with the fields its text holds merged into its meta (the sender's meta
    keys win) and its level set: a ``level`` field sets it, otherwise a level the text
    gives fills a missing one. Changes ``line`` in place and returns it."""
    try:
        parsed = parse_text(line.line, templates)
    except Exception:  # any: a parser's bug must not fail the line's whole request
        log.exception("a line could not be parsed; stored as plain text")
        return line
    if parsed.fields:
        meta = line.meta
        line.meta = parsed.fields if not meta else {**parsed.fields, **meta}
    level = parsed.level
    if level is not None and (parsed.overrides or line.level is None):
        line.level = level[:_MAX_LEVEL]
    if parsed.app:
        line.app = parsed.app[:_MAX_APP]
    if parsed.host:
        line.host = parsed.host[:_MAX_HOST]
    if parsed.time is not None:
        moment = text_time(parsed.time, near_ms=line.ts)
        if moment is not None:
            line.ts = moment
    return line


def _structured(text: str) -> Parsed | None:
    """The first known form ``text`` is in, cheapest tests first."""
    stripped = text.rstrip()
    if stripped.endswith("}"):
        parsed = _json_at_end(stripped)
        if parsed is not None:
            return parsed
    if not stripped:
        return None
    first = stripped[0]
    if first == "<" or first.isupper():  # RFC 5424's "<", RFC 3164's month ("Nov")
        parsed = parse_syslog(stripped)
        if parsed is not None:
            return parsed
    if first.isdigit():
        parsed = _nginx_error(stripped) or _server_format(from_digit(stripped), stripped)
        if parsed is not None:
            return parsed
    elif first in _KLOG_LEVELS:
        parsed = _klog(stripped)
        if parsed is not None:
            return parsed
    if stripped.startswith(", [", 1):
        parsed = _server_format(ruby_logger(stripped), stripped)
        if parsed is not None:
            return parsed
    if stripped.startswith(_CLOUD_STARTS) or (
        stripped[10:11] == "T" and stripped[23:24] == "Z"  # CloudWatch's time in front
    ):  # AWS Lambda in CloudWatch: a gate of C calls, so other lines pay no call
        parsed = _server_format(cloud_log(stripped), stripped)
        if parsed is not None:
            return parsed
    if first.isalnum() or first == ":":  # an IPv4 or IPv6 address, or a host name
        if '] "' in stripped:  # the access log's "[time] "request"": a C test first
            parsed = _access_log(stripped)
            if parsed is not None:
                return parsed
        fields = access_log(stripped)  # load balancers', S3's, HAProxy's
        if fields is not None:
            return Parsed(fields=fields)
    if "=" in stripped:
        return _logfmt(stripped)
    return None


# How Lambda's own lines start (START, END, REPORT, the Python runtime's "[INFO]").
_CLOUD_STARTS = ("START R", "END R", "REPORT R", "[")


def _server_format(found: ServerFormat | None, text: str) -> Parsed | None:
    """A server's line (``logs.server_formats``): its fields, and the level its format
    gives or else a level word the text or its message starts with."""
    if found is None:
        return None
    fields, level = found
    if level is None:
        level = level_from_text(text) or level_from_text(fields.get("message", ""))
    return Parsed(fields=fields, level=level)


# -- JSON --------------------------------------------------------------------------------


def _json_at_end(text: str) -> Parsed | None:
    """The JSON object the text ends with: the whole text, or the text from one of its
    first ``MAX_JSON_STARTS`` ``{`` on."""
    start = text.find("{")
    for _ in range(MAX_JSON_STARTS):
        if start < 0:
            return None
        try:
            value = orjson.loads(text[start:])
        except (orjson.JSONDecodeError, UnicodeEncodeError):
            start = text.find("{", start + 1)
            continue
        if not isinstance(value, dict):
            return None
        return _from_object(value, text)
    return None


# Numeric levels of Node's pino and bunyan loggers.
_NUMERIC_LEVELS = {10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL"}


def _from_object(value: dict[str, Any], text: str) -> Parsed:
    fields = _small(value, text) or _bounded(value, depth=1, budget=[MAX_FIELDS])
    level = fields.get("level")
    if isinstance(level, str) and (stripped := level.strip()):
        return Parsed(fields=fields, level=stripped, overrides=True)
    if type(level) is int and level in _NUMERIC_LEVELS:
        return Parsed(fields=fields, level=_NUMERIC_LEVELS[level], overrides=True)
    # No level field: the text before the object may still start with a level word.
    return Parsed(fields=fields, level=level_from_text(text))


def _small(value: dict[str, Any], text: str) -> dict[str, Any] | None:
    """The usual object, within the bounds by its text alone (C-speed counts): fewer
    separators than ``MAX_FIELDS`` (every field and array item needs a ``:`` or a ``,``)
    and fewer brackets than ``MAX_DEPTH`` (strings may hold some: the counts only err
    high; a text shorter than ``MAX_FIELDS`` has fewer separators, uncounted). Only its
    reserved top-level names need renaming. None: walk it."""
    if (len(text) >= MAX_FIELDS and text.count(":") + text.count(",") >= MAX_FIELDS) or text.count(
        "{"
    ) + text.count("[") >= MAX_DEPTH:
        return None
    if PREFIXED_FIELDS.isdisjoint(value):
        return value
    return {("_" + key if key in PREFIXED_FIELDS else key): item for key, item in value.items()}


def _bounded(value: Mapping[str, Any], *, depth: int, budget: list[int]) -> dict[str, Any]:
    """``value`` with reserved names prefixed (at the top), at most ``budget[0]`` fields
    in all (the rest dropped) and objects below ``MAX_DEPTH`` kept as JSON text."""
    kept: dict[str, Any] = {}
    for key, item in value.items():
        if budget[0] <= 0:
            break
        budget[0] -= 1
        name = "_" + key if depth == 1 and key in PREFIXED_FIELDS else key
        if isinstance(item, dict):
            if depth >= MAX_DEPTH:
                kept[name] = orjson.dumps(item).decode()
            else:
                kept[name] = _bounded(item, depth=depth + 1, budget=budget)
        elif isinstance(item, list) and len(item) > budget[0]:
            kept[name] = item[: max(budget[0], 0)]
            budget[0] = 0
        else:
            if isinstance(item, list):
                budget[0] -= len(item)
            kept[name] = item
    return kept


# -- logfmt ------------------------------------------------------------------------------

# One key=value pair and the spaces after it: a quoted value with escapes, or a bare one.
_LOGFMT_PAIR = re.compile(
    r'(?P<key>[A-Za-z_][A-Za-z0-9_.\-/]{0,127})=(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s"=]*))(?:[ \t]+|$)'
)
_LOGFMT_ESCAPE = re.compile(r"\\(.)")
_LOGFMT_MESSAGE = ("msg", "message")


def _logfmt(text: str) -> Parsed | None:
    """logfmt: the whole text is ``key=value`` pairs (at least two), separated by spaces.
    Values stay strings, as written."""
    fields: dict[str, Any] = {}
    position = 0
    end = len(text)
    while position < end:
        pair = _LOGFMT_PAIR.match(text, position)
        if pair is None or pair.end() == position:
            return None
        position = pair.end()
        if len(fields) < MAX_FIELDS:
            key, quoted, bare = pair.groups()
            if quoted is None:
                value = bare
            else:  # the escapes taken out (a value without a backslash has none)
                value = _LOGFMT_ESCAPE.sub(r"\1", quoted) if "\\" in quoted else quoted
            fields["_" + key if key in PREFIXED_FIELDS else key] = value
    if len(fields) < 2:
        return None
    for name in _LOGFMT_MESSAGE:
        message = fields.get(name)
        if message is not None and "message" not in fields:
            fields["message"] = message
    level = fields.get("level") or fields.get("lvl")
    return Parsed(
        fields=fields,
        level=level if isinstance(level, str) and level else None,
        overrides=True,
    )


# -- Apache / nginx access ---------------------------------------------------------------

# Common Log Format, and Combined (referrer and user agent) after it: the access log of
# Apache and nginx's default. Quoted parts hold no unescaped quote.
_ACCESS = re.compile(
    r'(?P<clientip>[^\s"]+) (?P<ident>[^\s"]+) (?P<auth>[^\s"]+) \[(?P<timestamp>[^\]]{1,64})\] '
    r'"(?P<request_line>(?:[^"\\]|\\.){0,8192})" (?P<response>\d{3}) (?P<bytes>\d{1,19}|-)'
    r'(?: "(?P<referrer>(?:[^"\\]|\\.){0,8192})" "(?P<agent>(?:[^"\\]|\\.){0,8192})")?'
)
_REQUEST_LINE = re.compile(
    r"(?P<verb>[A-Z]{1,16}) (?P<request>\S{1,8192}) (?P<httpversion>HTTP/[\d.]{1,4})"
)


def _access_log(text: str) -> Parsed | None:
    found = _ACCESS.fullmatch(text)
    if found is None:
        return None
    # One tuple of the groups (in the pattern's order), not a call for each by name.
    clientip, ident, auth, timestamp, request_line, response, size, referrer, agent = found.groups()
    fields: dict[str, Any] = {
        "clientip": clientip,
        "ident": ident,
        "auth": auth,
        "timestamp": timestamp,
        "response": int(response),
    }
    if size != "-":
        fields["bytes"] = int(size)
    request = _REQUEST_LINE.fullmatch(request_line)
    if request is not None:
        verb, path, version = request.groups()
        fields["verb"] = verb
        fields["request"] = path
        fields["httpversion"] = version.removeprefix("HTTP/")
    else:
        fields["request"] = request_line
    if agent is not None:
        fields["referrer"] = referrer
        fields["agent"] = agent
    return Parsed(fields=fields)


# -- nginx error -------------------------------------------------------------------------

_NGINX_ERROR = re.compile(
    r"(?P<timestamp>\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}) \[(?P<level>[a-z]{1,8})\] "
    r"(?P<pid>\d{1,10})#(?P<tid>\d{1,20}): (?:\*(?P<connection>\d{1,20}) )?"
)
# The context nginx appends: ", client: 1.2.3.4, server: x, request: "GET / HTTP/1.1"".
_NGINX_CONTEXT = re.compile(
    r', (?P<key>client|server|request|upstream|host|referrer|subrequest): (?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^,]*))'
)
_NGINX_LEVELS = {"emerg", "alert", "crit", "error", "warn", "notice", "info", "debug"}


def _nginx_error(text: str) -> Parsed | None:
    head = _NGINX_ERROR.match(text)
    if head is None:
        return None
    timestamp, level, pid, tid, connection = head.groups()
    if level not in _NGINX_LEVELS:
        return None
    rest = text[head.end() :]
    fields: dict[str, Any] = {"timestamp": timestamp, "pid": int(pid), "tid": int(tid)}
    if connection is not None:
        fields["connection"] = int(connection)
    context = rest.find(", client: ")
    message = rest if context < 0 else rest[:context]
    if context >= 0:
        for item in _NGINX_CONTEXT.finditer(rest, context):
            key, quoted, bare = item.groups()
            fields[key] = quoted if quoted is not None else bare
    fields["message"] = message
    return Parsed(fields=fields, level=_LEVELS[level])


# -- Go's klog / glog (Kubernetes' own components) ---------------------------------------

_KLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}
# Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg
_KLOG = re.compile(
    r"(?P<level>[IWEF])(?P<date>\d{4}) (?P<time>\d{2}:\d{2}:\d{2}\.\d{6}) {1,8}"
    r"(?P<threadid>\d{1,20}) (?P<caller>[^\s:\]]{1,256}:\d{1,9})\] "
)


def _klog(text: str) -> Parsed | None:
    head = _KLOG.match(text)
    if head is None:
        return None
    fields: dict[str, Any] = {
        "timestamp": f"{head.group('date')} {head.group('time')}",
        "threadid": int(head.group("threadid")),
        "caller": head.group("caller"),
        "message": text[head.end() :],
    }
    return Parsed(fields=fields, level=_KLOG_LEVELS[head.group("level")])


# -- syslog ------------------------------------------------------------------------------

_SEVERITIES = ("EMERGENCY", "ALERT", "CRITICAL", "ERROR", "WARNING", "NOTICE", "INFO", "DEBUG")
_FACILITIES = (
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron",
    "authpriv", "ftp", "ntp", "security", "console", "solaris-cron", "local0", "local1",
    "local2", "local3", "local4", "local5", "local6", "local7",
)  # fmt: skip
_PRIORITY = r"<(?P<priority>\d{1,3})>"
# RFC 5424: <PRI>VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID [SD] MSG.
_RFC5424 = re.compile(
    _PRIORITY + r"(?P<version>\d{1,2}) (?P<timestamp>\S{1,64}) (?P<hostname>\S{1,255}) "
    r"(?P<appname>\S{1,48}) (?P<procid>\S{1,128}) (?P<msgid>\S{1,32}) "
)
_SD_ELEMENT = re.compile(
    r"\[(?P<id>[^\s=\]\"]{1,32})(?P<params>(?: [^\s=\]\"]{1,32}=\"(?:[^\"\\]|\\.)*\")*)\]"
)
_SD_PARAM = re.compile(r' (?P<name>[^\s=\]"]{1,32})="(?P<value>(?:[^"\\]|\\.)*)"')
# RFC 3164 (BSD): [<PRI>]Mmm dd hh:mm:ss HOST TAG[PID]: MSG; without the priority too
# (the lines of /var/log/syslog).
_RFC3164 = re.compile(
    r"(?:" + _PRIORITY + r")?(?P<timestamp>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}) "
    r"(?:(?P<hostname>[^\s:\[]{1,255}) (?P<appname>[^\s:\[]{1,48})(?:\[(?P<procid>[^\]\s]{1,128})\])?"
    # Without a host name (HAProxy and other daemons sending straight to a listener)
    # only as TAG[PID], so that "Nov 22 08:00:01 word: text" stays what it was.
    r"|(?P<tag>[^\s:\[]{1,48})\[(?P<tagpid>[^\]\s]{1,128})\]): "
)


def _priority(fields: dict[str, Any], priority: str | None) -> str | None:
    """Facility and severity of a priority value, and the level it gives."""
    if priority is None:
        return None
    value = int(priority)
    if value > 191:
        return None
    fields["priority"] = value
    fields["facility"] = _FACILITIES[value >> 3]
    severity = _SEVERITIES[value & 7]
    fields["severity"] = severity.lower()
    return severity


def structured_data(text: str) -> tuple[dict[str, dict[str, str]], int]:
    """The RFC 5424 structured-data elements ``text`` starts with (``{sd-id: {name:
    value}}``, values as written) and where they end (0: none)."""
    data: dict[str, dict[str, str]] = {}
    position = 0
    while (element := _SD_ELEMENT.match(text, position)) is not None:
        data[element.group("id")] = {
            param.group("name"): param.group("value")
            for param in _SD_PARAM.finditer(element.group("params"))
        }
        position = element.end()
    return data, position


def parse_syslog(text: str) -> Parsed | None:
    """The fields of an RFC 5424 or RFC 3164 line (see ``docs/line-parsing.md``), None
    when ``text`` is neither."""
    modern = _RFC5424.match(text) if text.startswith("<") else None
    if modern is not None:
        fields: dict[str, Any] = {}
        level = _priority(fields, modern.group("priority"))
        if "priority" not in fields:
            return None
        fields["version"] = int(modern.group("version"))
        for name in ("timestamp", "hostname", "appname", "procid", "msgid"):
            value = modern.group(name)
            if value != "-":
                fields[name] = value
        rest = text[modern.end() :]
        if rest.startswith("-"):
            rest = rest[1:]
        else:
            data, position = structured_data(rest)
            if position == 0:
                return None
            fields["structured_data"] = data
            rest = rest[position:]
        message = fields["message"] = rest.removeprefix(" ").removeprefix("\ufeff")
        if message.find(" [", 0, _HAPROXY_BRACKET) > 0:
            _haproxy_inside(fields, message)
        return Parsed(fields=fields, level=level)
    bsd = _RFC3164.match(text)
    if bsd is None:
        return None
    fields = {}
    level = _priority(fields, bsd.group("priority"))
    if bsd.group("priority") is not None and "priority" not in fields:
        return None
    timestamp, hostname, appname, procid, tag, tagpid = bsd.group(
        "timestamp", "hostname", "appname", "procid", "tag", "tagpid"
    )
    fields["timestamp"] = timestamp
    if hostname is not None:
        fields["hostname"] = hostname
    fields["appname"] = appname if appname is not None else tag
    if procid is not None or tagpid is not None:
        fields["procid"] = procid if procid is not None else tagpid
    message = fields["message"] = text[bsd.end() :]
    if message.find(" [", 0, _HAPROXY_BRACKET) > 0:
        _haproxy_inside(fields, message)
    return Parsed(fields=fields, level=level or level_from_text(message))


# HAProxy's message starts "address:port [date] ": its " [" comes within this many
# characters (an IPv6 address and a port), so other syslog messages skip the pattern.
_HAPROXY_BRACKET = 72


def _haproxy_inside(fields: dict[str, Any], message: str) -> None:
    """Adds the fields of the HAProxy log line a syslog message is (HAProxy logs through
    syslog) to the envelope's, whose names (``message`` among them) win."""
    first = message[:1]
    if first.isalnum() or first == ":":
        inner = haproxy_log(message)
        if inner is not None:
            fields.update((name, value) for name, value in inner.items() if name not in fields)
