"""Protocol-exact receivers for the Google Cloud APIs the ``gcp-*`` destinations call,
as Google documents them, behind one local HTTP server (``tests.components.receiver``):

* the OAuth 2.0 token endpoint of a service account key
  (https://developers.google.com/identity/protocols/oauth2/service-account): a form
  ``assertion=<JWT>&grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer``; the JWT's
  RS256 signature is verified here with the key's public half (``cryptography``, not
  the library that signed it), its header's ``kid``, and its claims ``iss``, ``aud``,
  ``scope``, ``iat``/``exp`` (an hour); answers ``{"access_token", "expires_in",
  "token_type"}``, a token per scope;
* Pub/Sub ``POST /v1/projects/<p>/topics/<t>:publish``;
* Cloud Logging ``POST /v2/entries:write``;
* Cloud Storage ``POST /upload/storage/v1/b/<bucket>/o?uploadType=multipart``;
* Cloud Monitoring ``POST /v3/projects/<p>/timeSeries``.

Each API checks ``Authorization: Bearer`` against the tokens issued for its scope (else
401), its content type, body shape and limits, and answers as the API does.
``faults`` injects the statuses of the next answers of an API.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from tests.components.receiver import Request

GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SCOPES = {
    "pubsub": "https://www.googleapis.com/auth/pubsub",
    "logging": "https://www.googleapis.com/auth/logging.write",
    "storage": "https://www.googleapis.com/auth/devstorage.read_write",
    "monitoring": "https://www.googleapis.com/auth/monitoring.write",
}
_PUBLISH = re.compile(r"^/v1/projects/([^/]+)/topics/([^/:]+):publish$")
_UPLOAD = re.compile(r"^/upload/storage/v1/b/([^/?]+)/o$")
_TIME_SERIES = re.compile(r"^/v3/projects/([^/]+)/timeSeries$")
_METRIC_TYPE = re.compile(r"^custom\.googleapis\.com/[A-Za-z0-9_./]+$")
_LABEL_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,99}$")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
_LOG_NAME = re.compile(r"^projects/[^/]+/logs/[^/]+$")
_SEVERITIES = {
    "DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"
}  # fmt: skip


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class ServiceAccountKey:
    """A service account key file, as Google's console downloads it."""

    private: rsa.RSAPrivateKey
    email: str
    key_id: str
    token_uri: str

    @classmethod
    def make(cls, token_uri: str) -> ServiceAccountKey:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return cls(private, "pipeline@proj-1.iam.gserviceaccount.com", "4f6e2a", token_uri)

    def json(self) -> str:
        pem = self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        return json.dumps(
            {
                "type": "service_account",
                "project_id": "proj-1",
                "private_key_id": self.key_id,
                "private_key": pem,
                "client_email": self.email,
                "client_id": "1234567890",
                "auth_uri": "https://accounts.google.com/o/oauth2/auth",
                "token_uri": self.token_uri,
            }
        )


@dataclass
class Google:
    key: ServiceAccountKey
    tokens: dict[str, str] = field(default_factory=dict)
    """Issued token -> its scope."""
    assertions: list[dict[str, Any]] = field(default_factory=list)
    token_faults: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    faults: dict[str, list[int]] = field(default_factory=dict)
    published: list[dict[str, Any]] = field(default_factory=list)
    written: list[dict[str, Any]] = field(default_factory=list)
    objects: dict[str, tuple[dict[str, Any], bytes]] = field(default_factory=dict)
    buckets: set[str] = field(default_factory=lambda: {"logs"})
    time_series: list[dict[str, Any]] = field(default_factory=list)

    def respond(self, request: Request) -> tuple[int, bytes]:
        status, answer = self._route(request)
        return status, json.dumps(answer).encode()

    def _route(self, request: Request) -> tuple[int, Any]:
        path = urlsplit(request.target).path
        if request.method != "POST":
            return 405, _error(405, "method not allowed")
        if path == "/token":
            return self._token(request)
        for api, check in (
            ("pubsub", self._publish),
            ("logging", self._write),
            ("storage", self._upload),
            ("monitoring", self._create_time_series),
        ):
            if self._is(api, path):
                scope = self.tokens.get((request.header("authorization") or "")[7:])
                if not (request.header("authorization") or "").startswith("Bearer ") or (
                    scope != SCOPES[api]
                ):
                    return 401, _error(401, "Request had invalid authentication credentials.")
                faults = self.faults.get(api) or []
                if faults:
                    return faults.pop(0), _error(503, "The service is currently unavailable.")
                return check(request)
        return 404, _error(404, f"no such endpoint {path}")

    @staticmethod
    def _is(api: str, path: str) -> bool:
        if api == "pubsub":
            return _PUBLISH.match(path) is not None
        if api == "logging":
            return path == "/v2/entries:write"
        if api == "monitoring":
            return _TIME_SERIES.match(path) is not None
        return _UPLOAD.match(path) is not None

    def _token(self, request: Request) -> tuple[int, Any]:
        if request.header("content-type") != "application/x-www-form-urlencoded":
            return 400, {"error": "invalid_request"}
        form = parse_qs(request.body.decode(), strict_parsing=True)
        if list(form) != ["assertion", "grant_type"] or form["grant_type"] != [GRANT]:
            return 400, {"error": "unsupported_grant_type"}
        parts = form["assertion"][0].split(".")
        if len(parts) != 3:
            return 400, {"error": "invalid_grant", "error_description": "not a JWT"}
        header, claims = json.loads(_b64url(parts[0])), json.loads(_b64url(parts[1]))
        try:
            self.key.private.public_key().verify(
                _b64url(parts[2]),
                f"{parts[0]}.{parts[1]}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except Exception:
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        good = (
            header == {"alg": "RS256", "typ": "JWT", "kid": self.key.key_id}
            and claims.get("iss") == self.key.email
            and claims.get("aud") == self.key.token_uri
            and claims.get("scope") in SCOPES.values()
            and claims.get("exp", 0) - claims.get("iat", 0) == 3600
        )
        if not good:
            return 400, {"error": "invalid_grant", "error_description": "bad claims"}
        self.assertions.append(claims)
        if self.token_faults:
            return self.token_faults.pop(0)
        token = f"ya29.token-{len(self.tokens)}"
        self.tokens[token] = claims["scope"]
        return 200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"}

    def _publish(self, request: Request) -> tuple[int, Any]:
        if request.header("content-type") != "application/json":
            return 400, _error(400, "content type")
        document = json.loads(request.body)
        messages = document.get("messages") if isinstance(document, dict) else None
        if not isinstance(messages, list) or not messages or len(messages) > 1_000:
            return 400, _error(400, "1 to 1000 messages")
        if len(request.body) > 10_000_000:
            return 400, _error(400, "request too large")
        for message in messages:
            try:
                data = base64.b64decode(message["data"], validate=True)
            except (KeyError, TypeError, binascii.Error):
                return 400, _error(400, "data must be base64")
            if not data:
                return 400, _error(400, "a message needs data or attributes")
        project, topic = _PUBLISH.match(urlsplit(request.target).path).groups()  # type: ignore[union-attr]
        self.published.append({"project": project, "topic": topic, **document})
        first = len(self.published) * 1000
        return 200, {"messageIds": [str(first + n) for n in range(len(messages))]}

    def _write(self, request: Request) -> tuple[int, Any]:
        if request.header("content-type") != "application/json":
            return 400, _error(400, "content type")
        document = json.loads(request.body)
        entries = document.get("entries")
        if not isinstance(entries, list) or not entries:
            return 400, _error(400, "entries")
        if not _LOG_NAME.match(str(document.get("logName"))):
            return 400, _error(400, "logName")
        resource = document.get("resource")
        if not isinstance(resource, dict) or not resource.get("type"):
            return 400, _error(400, "resource.type")
        for entry in entries:
            payloads = [name for name in ("jsonPayload", "textPayload") if name in entry]
            if len(payloads) != 1:
                return 400, _error(400, "one payload per entry")
            if "severity" in entry and entry["severity"] not in _SEVERITIES:
                return 400, _error(400, "severity")
        self.written.append(document)
        return 200, {}

    def _upload(self, request: Request) -> tuple[int, Any]:
        url = urlsplit(request.target)
        bucket = unquote(_UPLOAD.match(url.path).group(1))  # type: ignore[union-attr]
        if parse_qs(url.query) != {"uploadType": ["multipart"]}:
            return 400, _error(400, "uploadType")
        content_type = request.header("content-type") or ""
        found = re.fullmatch(r"multipart/related; boundary=(\S+)", content_type)
        if found is None:
            return 400, _error(400, "multipart/related")
        if bucket not in self.buckets:
            return 404, _error(404, "The specified bucket does not exist.")
        mark = b"--" + found.group(1).encode()
        if not request.body.startswith(mark + b"\r\n") or not request.body.endswith(
            b"\r\n" + mark + b"--\r\n"
        ):
            return 400, _error(400, "multipart framing")
        inner = request.body[len(mark) + 2 : -(len(mark) + 6)]
        first, second = inner.split(b"\r\n" + mark + b"\r\n")
        meta_head, meta = first.split(b"\r\n\r\n", 1)
        data_head, data = second.split(b"\r\n\r\n", 1)
        if meta_head != b"Content-Type: application/json; charset=UTF-8":
            return 400, _error(400, "metadata part")
        metadata = json.loads(meta)
        if data_head != f"Content-Type: {metadata.get('contentType')}".encode():
            return 400, _error(400, "media part")
        self.objects[f"{bucket}/{metadata['name']}"] = (metadata, data)
        return 200, {
            "kind": "storage#object",
            "bucket": bucket,
            "name": metadata["name"],
            "size": str(len(data)),
        }

    def _create_time_series(self, request: Request) -> tuple[int, Any]:
        if request.header("content-type") != "application/json":
            return 400, _error(400, "content type")
        document = json.loads(request.body)
        series = document.get("timeSeries") if isinstance(document, dict) else None
        if not isinstance(series, list) or not 1 <= len(series) <= 200:
            return 400, _error(400, "1 to 200 time series per request")
        seen = set()
        for item in series:
            metric, resource = item.get("metric") or {}, item.get("resource") or {}
            if not _METRIC_TYPE.match(str(metric.get("type"))) or not resource.get("type"):
                return 400, _error(400, "metric.type and resource.type")
            if not all(_LABEL_KEY.match(key) for key in metric.get("labels", {})):
                return 400, _error(400, "label keys")
            identity = json.dumps([metric, resource], sort_keys=True)
            if identity in seen:
                return 400, _error(400, "a time series appears twice in the request")
            seen.add(identity)
            kind, points = item.get("metricKind"), item.get("points")
            if kind not in ("GAUGE", "CUMULATIVE") or item.get("valueType") != "DOUBLE":
                return 400, _error(400, "metricKind GAUGE or CUMULATIVE, valueType DOUBLE")
            if not isinstance(points, list) or len(points) != 1:
                return 400, _error(400, "exactly one point per time series")
            interval, value = points[0].get("interval") or {}, points[0].get("value") or {}
            if not _TIME.match(str(interval.get("endTime"))) or set(value) != {"doubleValue"}:
                return 400, _error(400, "point interval and value")
            start = interval.get("startTime")
            if (kind == "CUMULATIVE") != (start is not None) or (
                start is not None and not start < interval["endTime"]
            ):
                return 400, _error(400, "a cumulative point's start time is before its end")
        self.time_series.append(document)
        return 200, {}


def _error(code: int, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}
