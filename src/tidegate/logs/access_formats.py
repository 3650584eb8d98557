"""Access logs of load balancers and storage, as the platform recognises them
(docs/line-parsing.md, "Known formats"): AWS Application and Classic Load Balancers,
Amazon S3's server access log, and HAProxy's HTTP log.

Each parser takes a line's text (stripped at its end, at most
``parsing.MAX_PARSED_CHARS``) and answers its fields, or None when the text is not in its
form. The whole line is the record: there is no message field, and no level. Tenant
input: every expression is anchored, its repeats bounded, and no two adjacent parts can
match the same character, so matching is linear in the text (as in ``logs.parsing``).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["access_log", "haproxy_log"]

# A double-quoted value with backslash escapes, and a number that may be -1 or "-".
_QUOTED = r'"(?P<{}>(?:[^"\\]|\\.){{0,8192}})"'
_SECONDS = r"(?P<{}>-?\d{{1,10}}(?:\.\d{{1,9}})?)"
_CODE = r"(?P<{}>\d{{3}}|-)"
_COUNT = r"(?P<{}>\d{{1,20}}|-)"
_TOKEN = r"(?P<{}>[^\s]{{1,{}}})"

# The parts both load balancers write after their name, from the client on.
_BALANCED = (
    " " + _TOKEN.format("client", 64) + " " + _TOKEN.format("target", 64)
    + " " + _SECONDS.format("request_processing_time")
    + " " + _SECONDS.format("target_processing_time")
    + " " + _SECONDS.format("response_processing_time")
    + " " + _CODE.format("elb_status_code") + " " + _CODE.format("target_status_code")
    + " " + _COUNT.format("received_bytes") + " " + _COUNT.format("sent_bytes")
    + " " + _QUOTED.format("request") + " " + _QUOTED.format("user_agent")
    + " " + _TOKEN.format("ssl_cipher", 128) + " " + _TOKEN.format("ssl_protocol", 32)
)  # fmt: skip
_ISO_Z = r"(?P<timestamp>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{1,9}Z)"

# Application Load Balancer: "http 2025-11-22T08:00:01.186641Z app/web/50dc6c4 ...".
_ALB = re.compile(
    r"(?P<type>https?|h2|grpcs?|wss?) " + _ISO_Z + " " + _TOKEN.format("elb", 256) + _BALANCED
)
# Classic Load Balancer: the same without the type (and "backend" for "target").
_ELB = re.compile(_ISO_Z + " " + _TOKEN.format("elb", 256) + _BALANCED)

# S3 server access log: "<owner> <bucket> [06/Feb/2025:00:00:38 +0000] <ip> ...".
_S3 = re.compile(
    r"(?P<bucket_owner>[0-9a-f]{64}|-) " + _TOKEN.format("bucket", 255)
    + r" \[(?P<timestamp>\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4})\] "
    + _TOKEN.format("remote_ip", 64) + " " + _TOKEN.format("requester", 256)
    + " " + _TOKEN.format("request_id", 64) + " " + _TOKEN.format("operation", 64)
    + " " + _TOKEN.format("key", 1024) + " " + _QUOTED.format("request")
    + " " + _CODE.format("http_status") + " " + _TOKEN.format("error_code", 64)
    + " " + _COUNT.format("bytes_sent") + " " + _COUNT.format("object_size")
    + " " + _COUNT.format("total_time") + " " + _COUNT.format("turn_around_time")
    + " " + _QUOTED.format("referrer") + " " + _QUOTED.format("user_agent")
)  # fmt: skip

# HAProxy's HTTP log (option httplog), with or without "haproxy[pid]: " in front:
# "10.0.1.2:33317 [06/Feb/2025:12:14:14.655] http-in static/srv1 10/0/30/69/109 200
# 2750 - - ---- 1/1/1/1/0 0/0 {headers} "GET /index.html HTTP/1.1"".
_HAPROXY = re.compile(
    r"(?:haproxy\[(?P<pid>\d{1,10})\]: )?"
    r"(?P<client_ip>[^\s\[]{1,64}):(?P<client_port>\d{1,5}) "
    r"\[(?P<accept_date>\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2}\.\d{3})\] "
    r"(?P<frontend>[^\s]{1,128}) (?P<backend>[^\s/]{1,128})/(?P<server>[^\s]{1,128}) "
    r"(?P<timers>-?\d{1,10}/-?\d{1,10}/-?\d{1,10}/-?\d{1,10}/\+?-?\d{1,10}) "
    r"(?P<status_code>-?\d{1,4}) (?P<bytes_read>\+?\d{1,20}) "
)
_HAPROXY_TIMERS = ("time_request", "time_queue", "time_connect", "time_response", "time_total")

# Numbers as numbers ("-" is left out, as the other parsers leave out absent values).
_INTS = {
    "elb_status_code", "target_status_code", "received_bytes", "sent_bytes",
    "http_status", "bytes_sent", "object_size", "total_time", "turn_around_time",
    "pid", "client_port", "status_code", "bytes_read",
}  # fmt: skip
_FLOATS = {"request_processing_time", "target_processing_time", "response_processing_time"}


def _fields(found: re.Match[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, value in found.groupdict().items():
        if value is None or value == "-":
            continue
        if name in _INTS:
            fields[name] = int(value.lstrip("+"))
        elif name in _FLOATS:
            fields[name] = float(value)
        else:
            fields[name] = value
    return fields


def _request_parts(fields: dict[str, Any]) -> None:
    """``verb``, ``url`` and ``httpversion`` of the request line, when it has them."""
    parts = str(fields.get("request", "")).split(" ")
    if len(parts) == 3 and parts[2].startswith("HTTP/"):
        fields["verb"], fields["url"], fields["httpversion"] = parts[0], parts[1], parts[2][5:]


def _balancer(found: re.Match[str]) -> dict[str, Any]:
    fields = _fields(found)
    _request_parts(fields)
    return fields


def haproxy_log(text: str) -> dict[str, Any] | None:
    """An HAProxy HTTP log line's fields (also the message of a syslog line), or None."""
    found = _HAPROXY.match(text)
    if found is None:
        return None
    fields = _fields(found)
    timers = fields.pop("timers").split("/")
    for name, value in zip(_HAPROXY_TIMERS, timers, strict=True):
        fields[name] = int(value.lstrip("+"))
    # The line ends with the quoted request line.
    opening = text.rfind('"', found.end(), len(text) - 1) if text.endswith('"') else -1
    if opening >= 0:
        fields["request"] = text[opening + 1 : -1]
        _request_parts(fields)
    return fields


def access_log(text: str) -> dict[str, Any] | None:
    """The fields of an access log line in one of the forms above, or None."""
    first = text[:1]
    if len(text) > 65 and text[64] == " ":
        found = _S3.match(text)
        if found is not None:
            return _balancer(found)
    if first.isdigit():
        found = _ELB.match(text)
        if found is not None:
            return _balancer(found)
    elif first in "hgw":
        found = _ALB.match(text)
        if found is not None:
            return _balancer(found)
    if first.isalnum() or first == ":":
        return haproxy_log(text)
    return None
