"""Protocol-exact receivers for Elasticsearch's bulk API and Loki's push API, as their
documentation states them (Elasticsearch's "Bulk API" reference; Loki's "HTTP API",
``POST /loki/api/v1/push``): each checks the method, path, credentials, content type
and encoding, parses the body as the service does and refuses what it refuses, with
the service's status and answer, and keeps what it took (documents per index; entries
per stream) for the tests to read. ``faults`` injects transient failures (the statuses
of the next answers).

Not modelled: Loki's protobuf + snappy body (tidegate sends JSON; such a request is a
415 here) and limits that are a server's configuration (Loki's sample age, rate
limits; Elasticsearch's mappings)."""

from __future__ import annotations

import base64
import gzip
import re
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

import orjson
from tests.components.receiver import Request

_BULK_ACTIONS: Final = frozenset({"index", "create", "update", "delete"})
# Action and metadata line parameters the bulk API documents.
_BULK_META: Final = frozenset(
    {
        "_index", "_id", "routing", "pipeline", "require_alias", "require_data_stream",
        "if_seq_no", "if_primary_term", "version", "version_type", "dynamic_templates",
        "list_executed_pipelines", "retry_on_conflict", "_source",
    }
)  # fmt: skip
_BULK_QUERY: Final = frozenset(
    {
        "pipeline", "refresh", "routing", "timeout", "wait_for_active_shards",
        "require_alias", "require_data_stream", "_source", "_source_excludes",
        "_source_includes", "list_executed_pipelines", "include_source_on_error",
        "filter_path",  # a common option of every REST API
    }
)  # fmt: skip
# An item's refusal by status, as Elasticsearch answers it.
_ITEM_ERRORS: Final = {
    400: ("document_parsing_exception", "failed to parse field [n] of type [long]"),
    429: ("es_rejected_execution_exception", "rejected execution of coordinating operation"),
    500: ("exception", "internal error"),
    503: ("unavailable_shards_exception", "primary shard is not active"),
}
# Index names: lowercase, none of these characters, not starting with - _ +, not . or ..,
# at most 255 bytes ("Create index API", path parameters).
_INDEX_FORBIDDEN: Final = re.compile(r'[\\/*?"<>| ,#:]')
_METADATA_FIELDS: Final = frozenset(
    {"_id", "_index", "_source", "_routing", "_version", "_seq_no", "_primary_term", "_field_names"}
)


def _es_error(status: int, kind: str, reason: str) -> tuple[int, dict[str, Any]]:
    cause = {"type": kind, "reason": reason}
    return status, {"error": {"root_cause": [cause], **cause}, "status": status}


def index_name_problem(name: str) -> str | None:
    """Why Elasticsearch refuses ``name`` as an index name, or None."""
    if not name:
        return "must not be empty"
    if name != name.lower():
        return "must be lowercase"
    if name[0] in "-_+":
        return "must not start with '_', '-', or '+'"
    if name in (".", ".."):
        return "must not be '.' or '..'"
    if _INDEX_FORBIDDEN.search(name):
        return 'must not contain the following characters [ , ", *, \\, <, |, ,, >, /, ?, #, :]'
    if len(name.encode()) > 255:
        return "index name is too long"
    return None


@dataclass
class ElasticsearchBulk:
    """``POST /_bulk`` (or ``/<index>/_bulk``), NDJSON. ``user``/``password``: basic auth
    required when set. ``indices`` holds the documents taken, per index."""

    user: str | None = None
    password: str | None = None
    faults: list[int] = field(default_factory=list)
    indices: dict[str, list[Any]] = field(default_factory=dict)
    pipelines: list[str | None] = field(default_factory=list)
    """The ``pipeline`` query parameter of each bulk request taken."""
    refusals: dict[str, list[int]] = field(default_factory=dict)
    """Items to refuse: a document's ``message`` -> the statuses of its next answers
    (400, 429, 500, 503), one used each time it arrives."""
    _ids: int = 0

    def respond(self, request: Request) -> tuple[int, bytes]:
        status, answer = self._check(request)
        paths = parse_qs(urlsplit(request.target).query).get("filter_path")
        if paths and status == 200:
            answer = _filter(answer, [path.split(".") for path in paths[0].split(",")])
        return status, orjson.dumps(answer)

    def _check(self, request: Request) -> tuple[int, Any]:
        target = urlsplit(request.target)
        parts = [part for part in target.path.split("/") if part]
        if request.method not in ("POST", "PUT") or not parts or parts[-1] != "_bulk":
            return _es_error(405, "illegal_argument_exception", f"no handler {request.target}")
        default_index = parts[0] if len(parts) == 2 else None
        if self.user is not None:
            expected = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
            if request.header("authorization") != f"Basic {expected}":
                return _es_error(401, "security_exception", "unable to authenticate user")
        query = parse_qs(target.query, keep_blank_values=True)
        unknown = set(query) - _BULK_QUERY
        if unknown:
            return _es_error(
                400, "illegal_argument_exception", f"unrecognized parameter: [{min(unknown)}]"
            )
        content_type = (request.header("content-type") or "").split(";")[0].strip()
        if content_type not in ("application/x-ndjson", "application/json"):
            return 406, {
                "error": f"Content-Type header [{content_type}] is not supported",
                "status": 406,
            }
        body = request.body
        encoding = request.header("content-encoding")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding is not None:
            return _es_error(400, "illegal_argument_exception", f"encoding {encoding!r}")
        if not body:
            return _es_error(400, "parse_exception", "request body is required")
        if not body.endswith(b"\n"):
            return _es_error(
                400,
                "illegal_argument_exception",
                "The bulk request must be terminated by a newline [\\n]",
            )
        operations = self._operations(body.split(b"\n")[:-1], default_index)
        if isinstance(operations, tuple):
            return operations
        if self.faults:
            return _es_error(self.faults.pop(0), "es_rejected_execution_exception", "try again")
        self.pipelines.append(query.get("pipeline", [None])[0])
        items = [self._apply(*operation) for operation in operations]
        errors = any("error" in next(iter(item.values())) for item in items)
        return 200, {"took": 1, "errors": errors, "items": items}

    def _operations(
        self, lines: list[bytes], default_index: str | None
    ) -> list[tuple[str, str, dict[str, Any], Any]] | tuple[int, Any]:
        """(action, index, metadata, source) per operation, or the request's refusal."""
        operations = []
        at = 0
        while at < len(lines):
            number = at + 1
            try:
                action_line = orjson.loads(lines[at])
            except orjson.JSONDecodeError:
                return _es_error(
                    400, "x_content_parse_exception", f"[{number}] malformed action/metadata line"
                )
            if not isinstance(action_line, dict) or len(action_line) != 1:
                return _es_error(
                    400,
                    "illegal_argument_exception",
                    f"Malformed action/metadata line [{number}], expected a single object",
                )
            [(action, meta)] = action_line.items()
            if action not in _BULK_ACTIONS:
                return _es_error(
                    400,
                    "illegal_argument_exception",
                    f"Malformed action/metadata line [{number}], expected one of "
                    f"[create, delete, index, update] but found [{action}]",
                )
            if not isinstance(meta, dict):
                return _es_error(
                    400, "illegal_argument_exception", f"Malformed action/metadata line [{number}]"
                )
            unknown = set(meta) - _BULK_META
            if unknown:
                return _es_error(
                    400,
                    "illegal_argument_exception",
                    f"Action/metadata line [{number}] contains an unknown parameter "
                    f"[{min(unknown)}]",
                )
            index = meta.get("_index", default_index)
            if not isinstance(index, str):
                return _es_error(400, "action_request_validation_exception", "index is missing")
            at += 1
            source: Any = None
            if action != "delete":
                if at >= len(lines):
                    return _es_error(
                        400, "illegal_argument_exception", f"[{number}] no source line follows"
                    )
                try:
                    source = orjson.loads(lines[at])
                except orjson.JSONDecodeError:
                    source = _NotJson()
                at += 1
            operations.append((action, index, meta, source))
        if not operations:
            return _es_error(400, "action_request_validation_exception", "no requests added")
        return operations

    def _apply(self, action: str, index: str, meta: dict[str, Any], source: Any) -> dict[str, Any]:
        message = source.get("message") if isinstance(source, dict) else None
        planned = self.refusals.get(message) if isinstance(message, str) else None
        if planned:
            status = planned.pop(0)
            return _item_error(action, index, status, *_ITEM_ERRORS[status])
        problem = index_name_problem(index)
        if problem is not None:
            return _item_error(
                action, index, 400, "invalid_index_name_exception",
                f"Invalid index name [{index}], {problem}",
            )  # fmt: skip
        if action in ("index", "create"):
            if isinstance(source, _NotJson) or not isinstance(source, dict):
                return _item_error(
                    action, index, 400, "document_parsing_exception",
                    "failed to parse: the document must be a JSON object",
                )  # fmt: skip
            reserved = sorted(_METADATA_FIELDS & set(source))
            if reserved:
                return _item_error(
                    action, index, 400, "document_parsing_exception",
                    f"Field [{reserved[0]}] is a metadata field and cannot be added inside a "
                    "document. Use the index API request parameters.",
                )  # fmt: skip
            self._ids += 1
            self.indices.setdefault(index, []).append(source)
            identifier = str(meta.get("_id", f"id-{self._ids}"))
            return {
                action: {
                    "_index": index, "_id": identifier, "_version": 1, "result": "created",
                    "_shards": {"total": 1, "successful": 1, "failed": 0},
                    "_seq_no": self._ids - 1, "_primary_term": 1, "status": 201,
                }
            }  # fmt: skip
        return _item_error(action, index, 400, "illegal_argument_exception", "not modelled")


class _NotJson:
    """A source line that is not JSON."""


def _filter(value: Any, paths: list[list[str]]) -> Any:
    """``filter_path`` (Elasticsearch's common option): only the fields the paths name,
    ``*`` any key; arrays keep their elements, each filtered."""
    if isinstance(value, list):
        return [_filter(item, paths) for item in value]
    if not isinstance(value, dict):
        return value
    kept: dict[str, Any] = {}
    for key, inner in value.items():
        rest = [path[1:] for path in paths if path and path[0] in ("*", key)]
        if any(not path for path in rest):
            kept[key] = inner
        elif rest:
            filtered = _filter(inner, rest)
            if filtered not in ({}, []):
                kept[key] = filtered
    return kept


def _item_error(action: str, index: str, status: int, kind: str, reason: str) -> dict[str, Any]:
    return {
        action: {
            "_index": index,
            "_id": None,
            "status": status,
            "error": {"type": kind, "reason": reason},
        }
    }


_LABEL_NAME: Final = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_NANOS: Final = re.compile(r"^[0-9]{1,19}$")


@dataclass
class LokiPush:
    """``POST /loki/api/v1/push`` with a JSON body (gzip allowed). ``tenant``: the
    ``X-Scope-OrgID`` required (multi-tenant Loki), else none is needed.
    ``user``/``password``: basic auth (a gateway in front of Loki) when set.
    ``streams`` holds the entries taken, per stream (its labels, sorted)."""

    tenant: str | None = None
    user: str | None = None
    password: str | None = None
    max_label_names: int = 15
    max_label_name_length: int = 1024
    max_label_value_length: int = 2048
    max_line_size: int = 256 * 1024
    faults: list[int] = field(default_factory=list)
    streams: dict[tuple[tuple[str, str], ...], list[tuple[int, str]]] = field(default_factory=dict)

    def respond(self, request: Request) -> tuple[int, bytes]:
        status, text = self._check(request)
        return status, text.encode()

    def _check(self, request: Request) -> tuple[int, str]:
        if request.method != "POST" or urlsplit(request.target).path != "/loki/api/v1/push":
            return 404, "404 page not found\n"
        if self.user is not None:
            expected = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
            if request.header("authorization") != f"Basic {expected}":
                return 401, "Unauthorized\n"
        if self.tenant is not None and request.header("x-scope-orgid") != self.tenant:
            return 401, "no org id\n"
        content_type = (request.header("content-type") or "").split(";")[0].strip()
        if content_type != "application/json":
            # Loki reads anything else as protobuf + snappy, which tidegate never sends.
            return 415, f"content type {content_type!r}: this receiver reads JSON only\n"
        body = request.body
        encoding = request.header("content-encoding")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding not in (None, ""):
            return 415, f"unsupported Content-Encoding {encoding}\n"
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as error:
            return 400, f"loghttp.PushRequest: {error}\n"
        parsed = self._streams(document)
        if isinstance(parsed, str):
            return 400, parsed + "\n"
        if self.faults:
            return self.faults.pop(0), "try again\n"
        for labels, entries in parsed:
            self.streams.setdefault(labels, []).extend(entries)
        return 204, ""

    def _streams(
        self, document: Any
    ) -> list[tuple[tuple[tuple[str, str], ...], list[tuple[int, str]]]] | str:
        if not isinstance(document, dict) or not isinstance(document.get("streams"), list):
            return 'the body must be {"streams": [...]}'
        out = []
        for stream in document["streams"]:
            if not isinstance(stream, dict) or set(stream) - {"stream", "values"}:
                return "each stream is {stream, values}"
            labels = stream.get("stream")
            if not isinstance(labels, dict) or not all(
                isinstance(value, str) for value in labels.values()
            ):
                return "stream labels are an object of strings"
            present = {name: value for name, value in labels.items() if value != ""}
            if not present:
                return "error at least one label pair is required per stream"
            if len(present) > self.max_label_names:
                return f"stream has {len(present)} label names, the limit is {self.max_label_names}"
            for name, value in present.items():
                if not _LABEL_NAME.match(name) or len(name) > self.max_label_name_length:
                    return f"error parsing labels: invalid label name {name!r}"
                if len(value) > self.max_label_value_length:
                    return f"label value too long for label {name!r}"
            values = stream.get("values")
            if not isinstance(values, list):
                return "values is an array of [<ns>, <line>]"
            entries = []
            for value in values:
                problem = self._entry_problem(value)
                if problem is not None:
                    return problem
                entries.append((int(value[0]), value[1]))
            out.append((tuple(sorted(present.items())), entries))
        return out

    def _entry_problem(self, value: Any) -> str | None:
        if not isinstance(value, list) or len(value) not in (2, 3):
            return "each value is [<ns>, <line>] or [<ns>, <line>, <structured metadata>]"
        stamp, line = value[0], value[1]
        if not isinstance(stamp, str) or not _NANOS.match(stamp):
            return f"timestamp {stamp!r}: a string of Unix epoch nanoseconds"
        if not isinstance(line, str):
            return "the line must be a string"
        if len(line.encode()) > self.max_line_size:
            return f"line too long (limit {self.max_line_size} bytes)"
        if len(value) == 3 and not (
            isinstance(value[2], dict) and all(isinstance(v, str) for v in value[2].values())
        ):
            return "structured metadata is an object of strings"
        return None
