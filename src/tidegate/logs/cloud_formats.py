"""AWS CloudWatch Logs' text lines, as the platform recognises them (docs/line-parsing.md,
"Known formats"): what AWS Lambda writes to CloudWatch (its ``START``, ``END`` and
``REPORT`` lines, and the Node.js and Python runtimes' log lines), alone or after the
timestamp that CloudWatch's export to S3 puts in front of each event.

``cloud_log`` takes a line's text (stripped at its end, at most
``parsing.MAX_PARSED_CHARS``) and answers its fields and level (``ServerFormat``), or
None. Tenant input: each expression is anchored at the start, its repeats bounded, and
no two adjacent parts can match the same character; ``REPORT``'s metrics are split on
tabs (at most ``_MAX_METRICS``), each matched once: linear in the text.
"""

from __future__ import annotations

import re
from typing import Any, Final

from tidegate.logs.server_formats import ServerFormat

__all__ = ["cloud_log"]

_REQUEST_ID = (
    r"(?P<request_id>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
)
# CloudWatch's and Lambda's own time: RFC 3339 in UTC, milliseconds.
_ISO_Z = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"
_LEVELS: Final = {
    "TRACE": "TRACE",
    "DEBUG": "DEBUG",
    "INFO": "INFO",
    "WARN": "WARN",
    "WARNING": "WARNING",
    "ERROR": "ERROR",
    "CRITICAL": "CRITICAL",
    "FATAL": "FATAL",
}

# "START RequestId: <id> Version: $LATEST", "END RequestId: <id>",
# "REPORT RequestId: <id>\tDuration: 102.25 ms\tBilled Duration: 103 ms\t...".
_START = re.compile(r"START RequestId: " + _REQUEST_ID + r" Version: (?P<version>\S{1,128})")
_END = re.compile(r"END RequestId: " + _REQUEST_ID)
_REPORT = re.compile(r"REPORT RequestId: " + _REQUEST_ID + r"\t")
_METRIC = re.compile(
    r"(?P<name>[A-Za-z][A-Za-z ]{0,39}): (?P<value>[^\s]{1,128})(?: (?P<unit>ms|MB))?"
)
_MAX_METRICS: Final = 16
_TEXT_METRICS: Final = {"xray_traceid": "xray_trace_id", "segmentid": "segment_id"}
# Node.js: "<time>\t<request id>\t<LEVEL>\t<message>"; Python: "[<LEVEL>]\t<time>\t<id>\t<message>".
_NODE = re.compile(r"(?P<timestamp>" + _ISO_Z + r")\t" + _REQUEST_ID + r"\t(?P<level>[A-Z]{4,8})\t")
_PYTHON = re.compile(
    r"\[(?P<level>[A-Z]{4,8})\]\t(?P<timestamp>" + _ISO_Z + r")\t" + _REQUEST_ID + r"\t"
)
# CloudWatch's export to S3: "<time> <the event's text>".
_EXPORTED = re.compile(r"(?P<timestamp>" + _ISO_Z + r") ")


def _number(value: str) -> int | float | str:
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def _report(text: str, head: re.Match[str]) -> dict[str, Any]:
    """``REPORT``'s metrics, named in snake case with their unit (``Billed Duration: 103
    ms`` is ``billed_duration_ms: 103``); X-Ray's ids as text."""
    fields: dict[str, Any] = {"type": "REPORT", "request_id": head.group("request_id")}
    for part in text[head.end() :].split("\t", _MAX_METRICS)[:_MAX_METRICS]:
        metric = _METRIC.fullmatch(part.strip())
        if metric is None:
            continue
        name = "_".join(metric.group("name").lower().split())
        unit = metric.group("unit")
        value = metric.group("value")
        if unit is not None:
            fields[f"{name}_{unit.lower()}"] = _number(value)
        else:
            fields[_TEXT_METRICS.get(name, name)] = value
    return fields


def _lambda(text: str) -> ServerFormat | None:
    # Plain string tests first: most lines that start with these characters are not
    # Lambda's, and a test of a few characters costs less than a call into ``re``.
    if text.startswith("START R"):
        found = _START.fullmatch(text)
        if found is not None:
            return {"type": "START", **found.groupdict()}, None
    elif text.startswith("END R"):
        found = _END.fullmatch(text)
        if found is not None:
            return {"type": "END", "request_id": found.group("request_id")}, None
    elif text.startswith("REPORT R"):
        found = _REPORT.match(text)
        if found is not None:
            return _report(text, found), None
    elif text.startswith("[") and "]\t" in text[:12]:
        found = _PYTHON.match(text)
        if found is not None:
            return _runtime(text, found)
    elif _iso_z_at_start(text) and text[24:25] == "\t":
        found = _NODE.match(text)
        if found is not None:
            return _runtime(text, found)
    return None


def _iso_z_at_start(text: str) -> bool:
    """Whether ``text`` may start with CloudWatch's time (``2025-11-22T08:00:01.123Z``)."""
    return text[10:11] == "T" and text[23:24] == "Z" and text[:1].isdigit()


def _runtime(text: str, head: re.Match[str]) -> ServerFormat | None:
    level = _LEVELS.get(head.group("level"))
    if level is None:
        return None
    fields = {
        "timestamp": head.group("timestamp"),
        "request_id": head.group("request_id"),
        "message": text[head.end() :],
    }
    return fields, level


def cloud_log(text: str) -> ServerFormat | None:
    """The fields and level of a Lambda line in CloudWatch, or of one exported to S3
    with its time in front (that time is its ``timestamp`` when the line has none)."""
    found = _lambda(text)
    if found is not None or not _iso_z_at_start(text) or text[24:25] != " ":
        return found
    exported = _EXPORTED.match(text)
    if exported is None:
        return None
    inner = _lambda(text[exported.end() :])
    if inner is None:
        return None
    fields, level = inner
    fields.setdefault("timestamp", exported.group("timestamp"))
    return fields, level
