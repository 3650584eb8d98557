"""Protocol-exact receivers for the vendors' HTTP APIs, as their documentation states
them: each checks the path, the credential header, the content type, the encoding and
the batch's shape and limits, and answers as the API does (or refuses as it does).
``faults`` injects the API's transient failures (the statuses of the next answers)."""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from tests.components.receiver import Request

Check = Callable[[Request, Any], tuple[int, Any]]


@dataclass
class Api:
    """One API: its path prefix, credential header and key, body limits, and what it
    answers to a valid batch. ``accepted`` collects the decoded batches taken."""

    path: str
    key_header: str
    key: str
    max_items: int
    max_bytes: int
    ok: Callable[[Any], tuple[int, Any]]
    gzip_required: bool = False
    max_sent_bytes: int | None = None
    """A limit on the body as sent (compressed), when the API states one."""
    shape: Callable[[Any], str | None] = lambda _body: None
    target: Callable[[str], str | None] = lambda _target: None
    """Why the API refuses the request's target (its path and query), or None."""
    faults: list[int] = field(default_factory=list)
    accepted: list[Any] = field(default_factory=list)

    def respond(self, request: Request) -> tuple[int, bytes]:
        status, answer = self._check(request)
        return status, orjson.dumps(answer)

    def _check(self, request: Request) -> tuple[int, Any]:
        if request.method != "POST" or not request.target.startswith(self.path):
            return 404, {"error": f"no such endpoint {request.method} {request.target}"}
        refused = self.target(request.target)
        if refused is not None:
            return 400, {"error": refused}
        if request.header(self.key_header) != self.key:
            return 403, {"errors": ["Forbidden"]}
        if (request.header("content-type") or "").split(";")[0] != "application/json":
            return 415, {"errors": ["Unsupported media type"]}
        body = request.body
        if self.max_sent_bytes is not None and len(body) > self.max_sent_bytes:
            return 413, {"errors": ["Payload too large"]}
        encoding = request.header("content-encoding")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding is not None or self.gzip_required:
            return 415, {"errors": [f"encoding {encoding!r}"]}
        if len(body) > self.max_bytes:
            return 413, {"errors": ["Payload too large"]}
        try:
            document = orjson.loads(body)  # refuses text that is not UTF-8, as the APIs do
        except orjson.JSONDecodeError as error:
            return 400, {"errors": [f"malformed JSON: {error}"]}
        problem = self.shape(document)
        if problem is not None:
            return 400, {"errors": [problem]}
        items = _items(document)
        if len(items) > self.max_items:
            return 413, {"errors": ["Too many items"]}
        if self.faults:
            return self.faults.pop(0), {"errors": ["try again"]}
        self.accepted.append(document)
        return self.ok(document)


def _items(document: Any) -> list[Any]:
    if isinstance(document, list) and document and isinstance(document[0], dict):
        for wrapper in ("logs", "metrics"):
            if wrapper in document[0]:
                return list(document[0][wrapper])
    return document if isinstance(document, list) else [document]


def _array_of_objects(document: Any) -> str | None:
    if not isinstance(document, list) or not all(isinstance(item, dict) for item in document):
        return "the body must be a JSON array of objects"
    return None


def datadog(key: str) -> Api:
    """POST /api/v2/logs, DD-API-KEY; an array of at most 1,000 logs, 5 MB
    uncompressed; 202 {}."""
    return Api(
        "/api/v2/logs", "DD-API-KEY", key, 1_000, 5 * 1024 * 1024,
        lambda _document: (202, {}), shape=_array_of_objects,
    )  # fmt: skip


# RFC 3339 (the Batch API's ``time``: "RFC3339 high precision format").
_RFC3339: Final = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)


def _honeycomb_shape(document: Any) -> str | None:
    problem = _array_of_objects(document)
    if problem is not None:
        return problem
    if not document:
        return "Request body should not be empty."
    for item in document:
        if not isinstance(item.get("data"), dict):
            return "each event needs an object data"
        time = item.get("time")
        if time is not None and not (isinstance(time, str) and _RFC3339.match(time)):
            return f"time {time!r} is not RFC 3339"
        rate = item.get("samplerate")
        if rate is not None and not (
            isinstance(rate, int) and not isinstance(rate, bool) and rate >= 1
        ):
            return "samplerate is an integer of at least 1"
    return None


def honeycomb(key: str, dataset: str) -> Api:
    """POST /1/batch/<dataset>, X-Honeycomb-Team; an array of {data, time?}; 200 with
    one {status: 202} per event."""
    return Api(
        f"/1/batch/{dataset}", "X-Honeycomb-Team", key, 1_000, 5 * 1024 * 1024,
        lambda document: (200, [{"status": 202} for _ in document]), shape=_honeycomb_shape,
        target=_honeycomb_target,
    )  # fmt: skip


def _honeycomb_target(target: str) -> str | None:
    """Dataset names "may contain URL-encoded spaces or other special characters, but not
    URL-encoded slashes"."""
    return "dataset names cannot hold a slash" if "%2f" in target.lower() else None


def _new_relic_shape(wrapper: str) -> Callable[[Any], str | None]:
    def shape(document: Any) -> str | None:
        if not isinstance(document, list) or not all(
            isinstance(block, dict) and isinstance(block.get(wrapper), list) for block in document
        ):
            return f"the body must be [{{{wrapper}: [...]}}]"
        return None

    return shape


def _flat_count(attributes: dict[str, Any]) -> int:
    """Attributes as New Relic stores them: nested objects flattened to dotted names."""
    return sum(_flat_count(v) if isinstance(v, dict) else 1 for v in attributes.values())


def _new_relic_logs_shape(document: Any) -> str | None:
    """The Log API's detailed JSON: ``[{"common": {"attributes": {...}}?, "logs":
    [{"timestamp"?: <epoch ms or s, an integer>, "message"?: <string>, "attributes"?:
    {...}, ...}]}]``, at most 255 attributes a log."""
    problem = _new_relic_shape("logs")(document)
    if problem is not None:
        return problem
    for block in document:
        if set(block) - {"common", "logs"}:
            return "a block holds common and logs only"
        common = block.get("common", {})
        if not isinstance(common, dict) or not isinstance(common.get("attributes", {}), dict):
            return "common is {attributes: {...}}"
        for log in block["logs"]:
            if not isinstance(log, dict):
                return "each log is an object"
            stamp = log.get("timestamp")
            if stamp is not None and (isinstance(stamp, bool) or not isinstance(stamp, int)):
                return "timestamp is an integer (Unix epoch milliseconds or seconds)"
            if "message" in log and not isinstance(log["message"], str):
                return "message is a string"
            attributes = log.get("attributes", {})
            if not isinstance(attributes, dict):
                return "attributes is an object"
            if _flat_count(attributes) > 255:
                return "more than 255 attributes"
    return None


def new_relic_logs(key: str) -> Api:
    """POST /log/v1, X-License-Key; [{common?, logs: [{message, timestamp, attributes}]}];
    1 MB (10^6 bytes) a POST, compressed or not; 202 {requestId}."""
    return Api(
        "/log/v1", "X-License-Key", key, 10_000, 1_000_000,
        lambda _document: (202, {"requestId": "0f3b"}), shape=_new_relic_logs_shape,
        max_sent_bytes=1_000_000,
    )  # fmt: skip


def new_relic_metrics(key: str) -> Api:
    """POST /metric/v1, Api-Key; [{metrics: [{name, type, value, timestamp}]}]."""
    return Api(
        "/metric/v1", "Api-Key", key, 10_000, 1_000_000,
        lambda _document: (202, {"requestId": "7c1e"}), shape=_new_relic_shape("metrics"),
    )  # fmt: skip


def _series_shape(document: Any) -> str | None:
    series = document.get("series") if isinstance(document, dict) else None
    if not isinstance(series, list) or not series:
        return 'the body must be {"series": [...]}'
    for item in series:
        if not isinstance(item, dict) or not isinstance(item.get("metric"), str):
            return "each series needs a metric"
        if item.get("type", 0) not in (0, 1, 2, 3):
            return "type is 0 (unspecified), 1 (count), 2 (rate) or 3 (gauge)"
        points = item.get("points")
        if (
            not isinstance(points, list)
            or not points
            or not all(
                isinstance(p, dict)
                and isinstance(p.get("timestamp"), int)
                and isinstance(p.get("value"), int | float)
                for p in points
            )
        ):
            return "points are [{timestamp: <s>, value}]"
        if not all(isinstance(tag, str) for tag in item.get("tags", [])):
            return "tags are strings"
        if not all(
            isinstance(r, dict) and set(r) == {"name", "type"} for r in item.get("resources", [])
        ):
            return "resources are [{name, type}]"
    return None


def datadog_metrics(key: str) -> Api:
    """POST /api/v2/series, DD-API-KEY; {series: [...]}, 5 MiB decompressed; 202
    {errors: []}."""
    return Api(
        "/api/v2/series", "DD-API-KEY", key, 1, 5 * 1024 * 1024,
        lambda _document: (202, {"errors": []}), shape=_series_shape,
    )  # fmt: skip
