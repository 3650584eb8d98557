"""The VRL parsers the platform's Terraform provider names besides the classic ones
(``modelutils/parsers.go``): ``parse_query_string``, ``parse_url``, ``parse_tokens``,
``parse_int``, ``parse_klog``, ``parse_glog``, ``parse_linux_authorization``,
``parse_aws_vpc_flow_log``, ``parse_aws_cloudwatch_log_subscription_message``,
``parse_aws_alb_log``; and the ``error`` format of ``parse_apache_log`` and
``parse_nginx_log``.

Each answers what VRL's function of that name documents for its examples (its
``docs/generated/<name>.json``), with VRL's defaults for the options the provider
never sends (it sends none for these). As in ``parsers``: a pure function of a string,
None when the text is not of the format, never raising; linear in the text (fixed
patterns on RE2, splitting bounded by ``MAX_PAIRS``); a VRL timestamp is written as
RFC 3339 UTC text.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from urllib.parse import unquote_plus, urlsplit

from tidegate.clock import now_ms
from tidegate.processing.linear_regex import CapturingRegex
from tidegate.processing.parsers import MAX_PAIRS, parse_json, parse_syslog
from tidegate.processing.timestamp_format import TimestampFormat, rfc3339

__all__ = [
    "APACHE_ERROR_TIME",
    "NGINX_ACCESS_TIME",
    "NGINX_ERROR_TIME",
    "parse_apache_error_log",
    "parse_aws_alb_log",
    "parse_aws_cloudwatch_log_subscription_message",
    "parse_aws_vpc_flow_log",
    "parse_glog",
    "parse_int",
    "parse_klog",
    "parse_linux_authorization",
    "parse_nginx_combined_log",
    "parse_nginx_error_log",
    "parse_query_string",
    "parse_tokens",
    "parse_url",
]


def _add(result: dict[str, Any], key: str, value: str) -> None:
    """A repeated key becomes a list of its values, in order."""
    if key not in result:
        result[key] = value
    elif isinstance(result[key], list):
        result[key].append(value)
    else:
        result[key] = [result[key], value]


def parse_query_string(text: str) -> dict[str, Any]:
    """``foo=%2B1&bar=2&bar=3&xyz`` -> ``{"foo": "+1", "bar": ["2", "3"], "xyz": ""}``
    (form encoding: ``+`` is a space; a leading ``?`` is dropped). At most
    ``MAX_PAIRS`` pairs are read."""
    result: dict[str, Any] = {}
    for key, value in _form_pairs(text.removeprefix("?")):
        _add(result, key, value)
    return result


def _form_pairs(text: str) -> list[tuple[str, str]]:
    """The first ``MAX_PAIRS`` pairs of a form-encoded text, decoded."""
    pairs = []
    for piece in text.split("&", MAX_PAIRS)[:MAX_PAIRS]:
        if piece:
            key, _, value = piece.partition("=")
            pairs.append((unquote_plus(key), unquote_plus(value)))
    return pairs


_SPECIAL_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21, "file": None}
_SCHEME: Final = CapturingRegex(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):")
_HOST_FORBIDDEN: Final = frozenset(' \t\n\r#%/:<>?@[\\]^|"')


def _host(netloc: str, special: bool) -> str | None:
    """The host as rust's ``url`` writes it (IPv6 in brackets; lowercase and IDNA for
    the special schemes), or None when it is not a host."""
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        return hostport[: end + 1].lower() if end > 0 else None
    host = hostport.partition(":")[0]
    if not special:
        return host
    if not host or any(char in _HOST_FORBIDDEN for char in host):
        return None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    return host.lower()


def parse_url(text: str, *, default_known_ports: bool = False) -> dict[str, Any] | None:
    """``scheme``, ``username``, ``password``, ``host`` (null without one), ``port``
    (an integer, or null: a special scheme's own port is null unless
    ``default_known_ports``), ``path``, ``query`` (an object, the last of a repeated
    key), ``fragment`` (null without one). None without a scheme or with a bad host
    or port."""
    text = text.strip(" \t\r\n\f\v\x00")
    if _SCHEME.named_groups(text) is None:
        return None
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme
    special = scheme in _SPECIAL_PORTS
    host: str | None = None
    if parts.netloc or text[len(scheme) + 1 :].startswith("//"):
        host = _host(parts.netloc, special)
        if host is None or (special and scheme != "file" and not host):
            return None
    elif special:
        return None
    default = _SPECIAL_PORTS.get(scheme)
    if port is not None and port == default:
        port = None
    if port is None and default_known_ports:
        port = default
    path = parts.path or ("/" if special else "")
    return {
        "scheme": scheme,
        "username": parts.username or "",
        "password": parts.password or "",
        "host": host if host or not special else None,
        "port": port,
        "path": path,
        "query": dict(_form_pairs(parts.query)),
        "fragment": parts.fragment if "#" in text else None,
    }


def _closing(text: str, start: int, close: str) -> int:
    """The index of ``close`` after ``start`` not escaped by a backslash, or -1."""
    i, n = start, len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            if i + 1 == n or text[i + 1] not in (close, "\\"):
                return -1  # VRL's tokenizer allows no other escape
            i += 2
        elif char == close:
            return i
        else:
            i += 1
    return -1


def parse_tokens(text: str) -> list[Any]:
    """Words split on spaces and tabs; a ``"quoted string"`` or a ``[bracketed
    group]`` is one token without its delimiters (escapes kept as written); ``-``
    and an empty token are null. An unclosed quote or bracket takes the rest of the text as it is. At
    most ``MAX_PAIRS`` tokens; the rest is left out."""
    tokens: list[Any] = []
    i, n = 0, len(text)
    while i < n and len(tokens) < MAX_PAIRS:
        char = text[i]
        if char in " \t":
            i += 1
            continue
        if char in '"[':
            end = _closing(text, i + 1, '"' if char == '"' else "]")
            if end >= 0:
                tokens.append(text[i + 1 : end] or None)
                i = end + 1
                continue
            tokens.append(text[i:])
            break
        end = i
        while end < n and text[end] not in ' \t["':
            end += 1
        word = text[i:end]
        tokens.append(None if word == "-" else word)
        i = end
    return tokens


_INT_PREFIXES: Final = {"0b": 2, "0o": 8, "0x": 16}


def parse_int(text: str, *, base: int | None = None) -> int | None:
    """An integer (rust's ``i64::from_str_radix``: an optional ``+`` or ``-``, then
    digits of the base). Without ``base``: ``0b``, ``0o`` and ``0x`` choose 2, 8 and
    16, another leading ``0`` 8 (VRL's rule: ``010`` is 8), else 10. None when not an
    integer of 64 bits or longer than 80 characters."""
    if not text or len(text) > 80:
        return None
    if base is None:
        base = _INT_PREFIXES.get(text[:2], 8 if text[0] == "0" else 10)
        if text[:2] in _INT_PREFIXES:
            text = text[2:]
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not all(char.isascii() and char.isalnum() for char in digits):
        return None
    try:
        value = int(text, base)
    except ValueError:
        return None
    return value if -(2**63) <= value < 2**63 else None


_LEVELS: Final = {"I": "info", "W": "warning", "E": "error", "F": "fatal"}
_TAIL: Final = r"\s+(?P<id>\d+)\s(?P<file>.+):(?P<line>\d+)\]\s(?P<message>.*?)\s*$"
_KLOG: Final = CapturingRegex(
    r"^\s*(?P<level>\w)(?P<month>\d{2})(?P<day>\d{2})\s(?P<time>\d{2}:\d{2}:\d{2}\.\d{6})" + _TAIL
)
_GLOG: Final = CapturingRegex(
    r"^\s*(?P<level>\w)(?P<year>\d{4})(?P<month>\d{2})(?P<day>\d{2})\s"
    r"(?P<time>\d{2}:\d{2}:\d{2}\.\d{6})" + _TAIL
)


def _go_log(groups: dict[str, str | None], year: int) -> dict[str, Any] | None:
    level = _LEVELS.get(groups["level"] or "")
    time = groups["time"] or ""
    try:
        moment = datetime(
            year,
            int(groups["month"] or ""),
            int(groups["day"] or ""),
            int(time[0:2]),
            int(time[3:5]),
            int(time[6:8]),
            int(time[9:15]),
            tzinfo=UTC,
        )
        thread, line = int(groups["id"] or ""), int(groups["line"] or "")
    except ValueError:
        return None
    if level is None or thread >= 2**63 or line >= 2**63:
        return None
    return {
        "level": level,
        "timestamp": rfc3339(moment),
        "id": thread,
        "file": groups["file"],
        "line": line,
        "message": groups["message"],
    }


def _year_of(month: str | None, now: datetime | None) -> int:
    """klog states no year: this year, or last year for a December line in January
    (VRL's rule, as for RFC 3164 syslog)."""
    today = now or datetime.fromtimestamp(now_ms() / 1000, UTC)
    return today.year - 1 if month == "12" and today.month == 1 else today.year


def parse_klog(text: str, *, now: datetime | None = None) -> dict[str, Any] | None:
    """``I0505 17:59:40.692994   28133 klog.go:70] hello from klog``: level (info,
    warning, error, fatal), timestamp (the year guessed), id, file, line, message."""
    groups = _KLOG.named_groups(text)
    if groups is None:
        return None
    return _go_log(groups, _year_of(groups["month"], now))


def parse_glog(text: str) -> dict[str, Any] | None:
    """``I20210131 14:48:54.411655 15520 main.c++:9] Hello world!``: as klog, with
    the year written."""
    groups = _GLOG.named_groups(text)
    if groups is None:
        return None
    return _go_log(groups, int(groups["year"] or "0"))


def parse_linux_authorization(text: str, *, now: datetime | None = None) -> dict[str, Any] | None:
    """``/var/log/auth.log`` and ``/var/log/secure`` lines: the ``syslog`` parser's
    fields (VRL's function is its ``parse_syslog``), a decimal ``procid`` an
    integer."""
    result = parse_syslog(text, now=now)
    if result is None:
        return None
    procid = result.get("procid")
    if isinstance(procid, str) and (number := parse_int(procid, base=10)) is not None:
        result["procid"] = number
    return result


_VPC_FIELDS: Final = (
    "version account_id interface_id srcaddr dstaddr srcport dstport protocol packets "
    "bytes start end action log_status"
).split()
_VPC_INTEGERS: Final = frozenset(
    ("version", "srcport", "dstport", "protocol", "packets", "bytes", "start", "end")
)


def parse_aws_vpc_flow_log(text: str) -> dict[str, Any] | None:
    """A VPC flow log record in AWS's default (version 2) format, the one the
    provider's body means (it sends no ``format``): 14 fields split on single
    spaces, ``-`` null, the counts, ports and times integers, ``account_id`` text."""
    values = text.split(" ", len(_VPC_FIELDS))
    if len(values) != len(_VPC_FIELDS):
        return None
    result: dict[str, Any] = {}
    for name, value in zip(_VPC_FIELDS, values, strict=True):
        if value == "-":
            result[name] = None
        elif name in _VPC_INTEGERS:
            number = parse_int(value, base=10)
            if number is None:
                return None
            result[name] = number
        else:
            result[name] = value
    return result


_CLOUDWATCH_KEYS: Final = {
    "owner": "owner",
    "messageType": "message_type",
    "logGroup": "log_group",
    "logStream": "log_stream",
    "subscriptionFilters": "subscription_filters",
    "logEvents": "log_events",
}
_MESSAGE_TYPES: Final = ("CONTROL_MESSAGE", "DATA_MESSAGE")
_MAX_EPOCH_MS: Final = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


def _log_event(event: Any) -> dict[str, Any] | None:
    if not isinstance(event, dict) or set(event) != {"id", "timestamp", "message"}:
        return None
    stamp, ident, message = event["timestamp"], event["id"], event["message"]
    if not (isinstance(ident, str) and isinstance(message, str)):
        return None
    if isinstance(stamp, bool) or not isinstance(stamp, int) or abs(stamp) > _MAX_EPOCH_MS:
        return None
    moment = datetime.fromtimestamp(0, UTC) + timedelta(milliseconds=stamp)
    return {"id": ident, "timestamp": rfc3339(moment), "message": message}


def parse_aws_cloudwatch_log_subscription_message(text: str) -> dict[str, Any] | None:
    """The JSON a CloudWatch Logs subscription delivers: ``owner``, ``message_type``
    (CONTROL_MESSAGE or DATA_MESSAGE), ``log_group``, ``log_stream``,
    ``subscription_filters`` (strings), ``log_events`` (``id``, ``timestamp`` (the
    epoch milliseconds as RFC 3339 UTC), ``message``). Every key is required and no
    other is allowed, as VRL reads it."""
    data = parse_json(text)
    if not isinstance(data, dict) or set(data) != set(_CLOUDWATCH_KEYS):
        return None
    filters, events = data["subscriptionFilters"], data["logEvents"]
    strings = (data["owner"], data["logGroup"], data["logStream"])
    if data["messageType"] not in _MESSAGE_TYPES or not all(
        isinstance(value, str) for value in strings
    ):
        return None
    if not isinstance(filters, list) or not all(isinstance(name, str) for name in filters):
        return None
    if not isinstance(events, list):
        return None
    read = [_log_event(event) for event in events]
    if any(event is None for event in read):
        return None
    result = {ours: data[theirs] for theirs, ours in _CLOUDWATCH_KEYS.items()}
    result["log_events"] = read
    return result


class _NotAlb(Exception):
    """Raised inside ``parse_aws_alb_log`` only, caught there."""


_ALB_TIME: Final = frozenset("0123456789.-:TZ")
_ALB_HOST: Final = frozenset("0123456789abcdef.:-")
_ALB_CODE: Final = frozenset("0123456789-")
_ALB_DIGITS: Final = frozenset("0123456789")


class _AlbCursor:
    """VRL's ``parse_aws_alb_log`` field readers, each from ``at`` onwards, linear."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def run(self, allowed: frozenset[str] | None, *, space: bool = True) -> str:
        """A space (unless ``space`` is false), then one or more characters of
        ``allowed`` (None: any but a space)."""
        text, at = self.text, self.at
        if space:
            if not text.startswith(" ", at):
                raise _NotAlb
            at += 1
        end = at
        while end < len(text) and (
            text[end] in allowed if allowed is not None else text[end] != " "
        ):
            end += 1
        if end == at:
            raise _NotAlb
        self.at = end
        return text[at:end]

    def quoted(self) -> str:
        """`` "...."``: a backslash keeps the character after it."""
        text = self.text
        if not text.startswith(' "', self.at):
            raise _NotAlb
        out: list[str] = []
        i, escaped = self.at + 2, False
        while i < len(text):
            char = text[i]
            if char == "\\" and not escaped:
                escaped = True
            elif char == '"' and not escaped:
                self.at = i + 1
                return "".join(out)
            else:
                out.append(char)
                escaped = False
            i += 1
        raise _NotAlb

    def number(self, kind: type[float] | type[int]) -> float | int:
        value = self.run(_ALB_CODE | {"."} if kind is float else _ALB_CODE)
        if kind is int:
            number = parse_int(value, base=10)
            if number is None:
                raise _NotAlb
            return number
        try:
            return float(value)
        except ValueError:
            raise _NotAlb from None

    def listed(self, allowed: frozenset[str]) -> list[str]:
        """`` "-"`` (none), `` "v"`` or `` v``."""
        if self.text.startswith(' "-"', self.at):
            self.at += 4
            return []
        if self.text.startswith(' "', self.at):
            self.at += 2
            value = self.run(allowed, space=False)
            if not self.text.startswith('"', self.at):
                raise _NotAlb
            self.at += 1
            return [value]
        return [self.run(allowed)]


def _dash(value: str) -> str | None:
    return None if value == "-" else value


def _alb_request(request: str) -> dict[str, Any]:
    method, found, rest = request.partition(" ")
    if not found:
        raise _NotAlb
    url, found, protocol = rest.rpartition(" ")
    if not found:
        raise _NotAlb
    return {
        "request_method": _dash(method),
        "request_protocol": _dash(protocol),
        "request_url": url,
    }


def parse_aws_alb_log(text: str) -> dict[str, Any] | None:
    """An Application Load Balancer access log entry, field by field as VRL reads it
    (strict: the provider sends no ``strict_mode``, so nothing may follow the last
    field, an optional ``TID_...``). ``-`` is null; the processing times are
    floats, the byte counts integers, the status codes and rule priority text; the
    request line is split into ``request_method``, ``request_url``,
    ``request_protocol``; the target port and status code lists are lists."""
    cursor = _AlbCursor(text)
    try:
        result: dict[str, Any] = {
            "type": cursor.run(frozenset("abcdefghijklmnopqrstuvwxyz0123456789"), space=False),
            "timestamp": _dash(cursor.run(_ALB_TIME)),
            "elb": _dash(cursor.run(None)),
            "client_host": _dash(cursor.run(_ALB_HOST)),
            "target_host": _dash(cursor.run(_ALB_HOST)),
            "request_processing_time": cursor.number(float),
            "target_processing_time": cursor.number(float),
            "response_processing_time": cursor.number(float),
            "elb_status_code": _dash(cursor.run(_ALB_CODE)),
            "target_status_code": _dash(cursor.run(_ALB_CODE)),
            "received_bytes": cursor.number(int),
            "sent_bytes": cursor.number(int),
        }
        result.update(_alb_request(cursor.quoted()))
        result["user_agent"] = _dash(cursor.quoted())
        for name in ("ssl_cipher", "ssl_protocol", "target_group_arn"):
            result[name] = _dash(cursor.run(None))
        for name in ("trace_id", "domain_name", "chosen_cert_arn"):
            result[name] = _dash(cursor.quoted())
        result["matched_rule_priority"] = _dash(cursor.run(_ALB_CODE))
        result["request_creation_time"] = _dash(cursor.run(_ALB_TIME))
        for name in ("actions_executed", "redirect_url", "error_reason"):
            result[name] = _dash(cursor.quoted())
        result["target_port_list"] = cursor.listed(_ALB_HOST)
        result["target_status_code_list"] = cursor.listed(_ALB_DIGITS)
        for name in ("classification", "classification_reason"):
            result[name] = _dash(cursor.quoted())
        result["traceability_id"] = (
            cursor.run(None) if text.startswith(" TID_", cursor.at) else None
        )
    except _NotAlb:
        return None
    return result if cursor.at == len(text) else None


# The error log formats of ``parse_apache_log`` and ``parse_nginx_log``, and the
# latter's combined format (VRL's ``log_util.rs``): the captured fields, ``timestamp``
# read in the time format given (VRL's defaults below), the integers and floats VRL
# converts by their names; a group that did not take part is left out, and a value that
# does not convert (a time not in the format) leaves the line not parsed, as VRL's
# error does.
_CLF_TIME: Final = "%d/%b/%Y:%T %z"
APACHE_ERROR_TIME: Final = _CLF_TIME  # VRL's one default for parse_apache_log
NGINX_ACCESS_TIME: Final = _CLF_TIME  # parse_nginx_log's for its access logs
NGINX_ERROR_TIME: Final = "%Y/%m/%d %H:%M:%S"  # and for its error log
_INTEGERS: Final = frozenset({"status", "size", "pid", "tid", "cid", "port"})
_FLOATS: Final = frozenset({"excess"})

_APACHE_ERROR: Final = (
    # The simple format (flog's), every part `-` or bracketed.
    CapturingRegex(
        r"^\s*(?:-|\[(?:-|(?P<timestamp>[^\[]*))\])\s+"
        r"(?:-|\[(?:-|(?P<module>[^:]*):(?P<severity>[^\[]*))\])\s+"
        r"(?:-|\[\s*pid\s*(?:-|(?P<pid>[^:]*)(?::\s*tid\s*(?P<thread>[^\[]*))?)\])\s"
        r"(?:-|\[\s*client\s*(?:-|(?P<client>.*:?):(?P<port>[^\[]*))\])\s"
        r"(?:-|(?P<message>.*))\s*$"
    ),
    # The threaded MPM's (httpd's ErrorLogFormat default).
    CapturingRegex(
        r"^\s*\[(?P<timestamp>[^\]]+)\]\s+"
        r"\[(?:-|(?P<module>[^:]+)):(?P<severity>[^\]]+)\]\s+"
        r"\[pid\s+(?P<pid>\d+)(?::tid\s+(?P<thread>\d+))?\]\s+"
        r"(?P<message1>[^\[]*?:\s+(?:[^\[]*?:\s+)?)?"
        r"(?:\[client\s+(?P<client>.+?):(?P<port>\d+)\]\s+)?"
        r"(?P<message2>.*)(?:, referer .*)?\s*$"
    ),
)
_NGINX_COMBINED: Final = CapturingRegex(
    r"^\s*(?:-|(?P<client>\S+))\s+-\s+(?:-|(?P<user>\S+))\s+\[(?P<timestamp>.+)\]\s+"
    r'"(?P<request>[^"]*)"\s+(?P<status>\d+)\s+(?P<size>\d+)\s+'
    r'"(?P<referer>[^"]*)"\s+"(?P<agent>[^"]*)"(?:\s+"(?:-|(?P<compression>[^"]+))")?\s*$'
)
_NGINX_ERROR: Final = CapturingRegex(
    r"^\s*(?P<timestamp>.+)\s+\[(?P<severity>\w+)\]\s+(?P<pid>\d+)#(?P<tid>\d+):"
    r"(?:\s+\*(?P<cid>\d+))?\s+(?P<message>.+?)"
    r'(?:,\s+excess:\s+(?P<excess>[^\s,]+),?\sby\szone\s"(?P<zone>[^,]+)")?'
    r"(?:,\s+client:\s+(?P<client>[^,]+))?"
    r"(?:,\s+server:\s+(?P<server>[^,]*))?"
    r'(?:,\s+request:\s+"(?P<request>[^"]*)")?'
    r'(?:,\s+upstream:\s+"(?P<upstream>[^"]*)")?'
    r'(?:,\s+host:\s+"(?P<host>[^"]*)")?'
    r'(?:,\s+refer?rer:\s+"(?P<referer>[^"]*)")?'
    r"\s*$"
)


def _log_fields(
    groups: dict[str, str | None], time_format: TimestampFormat
) -> dict[str, Any] | None:
    result: dict[str, Any] = {}
    for name, value in groups.items():
        if value is None:
            continue
        if name == "timestamp":
            moment = time_format.read(value)
            if moment is None:
                return None
            result[name] = rfc3339(moment)
        elif name in _INTEGERS:
            integer = parse_int(value, base=10)
            if integer is None:
                return None
            result[name] = integer
        elif name in _FLOATS:
            try:
                real = float(value)
            except ValueError:
                return None
            if "_" in value or not math.isfinite(real):  # Rust's f64 takes neither
                return None
            result[name] = real
        else:
            result[name] = value
    return result


def parse_apache_error_log(text: str, *, time_format: TimestampFormat) -> dict[str, Any] | None:
    """VRL's ``parse_apache_log(format: "error")``: the simple format, else the threaded
    MPM's (``message1`` and ``message2`` as VRL names them)."""
    for pattern in _APACHE_ERROR:
        groups = pattern.named_groups(text)
        if groups is not None:
            return _log_fields(groups, time_format)
    return None


def parse_nginx_combined_log(text: str, *, time_format: TimestampFormat) -> dict[str, Any] | None:
    """VRL's ``parse_nginx_log(format: "combined")``: ``client, user, timestamp, request,
    status, size, referer, agent, compression`` (a ``-`` client, user or compression left
    out; the referer and agent as written, ``-`` too)."""
    groups = _NGINX_COMBINED.named_groups(text)
    return None if groups is None else _log_fields(groups, time_format)


def parse_nginx_error_log(text: str, *, time_format: TimestampFormat) -> dict[str, Any] | None:
    """VRL's ``parse_nginx_log(format: "error")``: nginx's error log line (``pid#tid:
    *cid message, client: ..., server: ..., request: "...", host: "..."``)."""
    groups = _NGINX_ERROR.named_groups(text)
    return None if groups is None else _log_fields(groups, time_format)
