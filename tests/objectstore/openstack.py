"""A protocol-exact OpenStack Keystone and Swift for the ``swift`` archive tests, on a
real HTTP server on 127.0.0.1 (``tests/components/receiver.py``), written from
OpenStack's documented APIs (no OpenStack server runs here, docs/archiving.md):

* Identity v3 (https://docs.openstack.org/api-ref/identity/v3/, "Password
  authentication with scoped authorization"): ``POST /v3/auth/tokens`` with
  ``auth.identity.methods == ["password"]``, the user by name in a domain, the project
  scope by name in a domain; ``201`` with the token in ``X-Subject-Token`` and
  ``token.catalog`` holding the ``object-store`` service's ``public``, ``internal`` and
  ``admin`` endpoints; ``401`` with Keystone's JSON error for a wrong password. Identity
  v2.0 (``POST /v2.0/tokens``, ``passwordCredentials`` and ``tenantName``; ``200`` with
  ``access.token.id`` and ``access.serviceCatalog``).
* Object Storage v1 (https://docs.openstack.org/api-ref/object-store/): under
  ``/v1/AUTH_<project id>``, every request needs a live ``X-Auth-Token`` (``401``
  otherwise); ``PUT`` of a container ``201`` (``202`` when it exists); ``PUT`` of an
  object ``404`` without its container, ``422`` when the ``ETag`` sent is not the
  body's MD5, else ``201`` with ``ETag`` the MD5; a Static Large Object manifest
  (``?multipart-manifest=put``: each segment must exist with the etag and size given,
  ``400`` otherwise) read back as its segments joined; ``GET`` and ``DELETE`` of an
  object; ``X-Delete-After`` kept as sent.

``expire_tokens`` makes every token given so far expired (Swift answers 401);
``fail_next`` answers the next object ``PUT``s with a status (a 5xx)."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.components.receiver import Answer, Request

from tidegate import json_codec

UNAUTHORIZED = json_codec.dumps(
    {
        "error": {
            "code": 401,
            "message": "The request you have made requires authentication.",
            "title": "Unauthorized",
        }
    }
)
SWIFT_UNAUTHORIZED = (
    b"<html><h1>Unauthorized</h1><p>This server could not verify that you are "
    b"authorized to access the document you requested.</p></html>"
)


@dataclass
class StoredObject:
    body: bytes
    headers: dict[str, str]
    manifest: list[dict[str, Any]] | None = None


@dataclass
class OpenStack:
    """One user in one project of the ``Default`` domain, and its Swift account."""

    username: str = "archiver"
    password: str = "s3cret-pass"
    project: str = "logs"
    domain_id: str = "default"
    project_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    base: str = ""
    tokens: dict[str, bool] = field(default_factory=dict)  # token: live
    containers: dict[str, dict[str, StoredObject]] = field(default_factory=dict)
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)

    @property
    def storage_url(self) -> str:
        return f"{self.base}/v1/AUTH_{self.project_id}"

    def expire_tokens(self) -> None:
        for token in self.tokens:
            self.tokens[token] = False

    def fail_next(self, *statuses: int) -> None:
        self.failures.extend(statuses)

    def read(self, container: str, name: str) -> bytes:
        """An object's bytes (a manifest's: its segments' joined)."""
        stored = self.containers[container][name]
        if stored.manifest is None:
            return stored.body
        return b"".join(self.read(*_split(item["path"].lstrip("/"))) for item in stored.manifest)

    def respond(self, request: Request) -> Answer:
        path = urlsplit(request.target).path
        if request.method == "POST" and path == "/v3/auth/tokens":
            return self._token_v3(request)
        if request.method == "POST" and path == "/v2.0/tokens":
            return self._token_v2(request)
        prefix = f"/v1/AUTH_{self.project_id}/"
        if not path.startswith(prefix):
            return 404, b"Not Found"
        if not self.tokens.get(request.header("X-Auth-Token") or ""):
            return 401, SWIFT_UNAUTHORIZED, [("Content-Type", "text/html; charset=UTF-8")]
        return self._storage(request, unquote(path[len(prefix) :]))

    def _issue(self) -> str:
        token = f"gAAAAA{uuid.uuid4().hex}"
        self.tokens[token] = True
        return token

    def _catalog(self) -> list[dict[str, Any]]:
        return [
            {"type": "identity", "name": "keystone", "id": "k1", "endpoints": []},
            {
                "type": "object-store",
                "name": "swift",
                "id": "s1",
                "endpoints": [
                    {
                        "interface": "internal",
                        "region": "RegionOne",
                        "url": "http://10.9.9.9:8080/v1",
                    },
                    {"interface": "public", "region": "RegionOne", "url": self.storage_url},
                    {"interface": "admin", "region": "RegionOne", "url": "http://10.9.9.9:8080/v1"},
                ],
            },
        ]

    def _token_v3(self, request: Request) -> Answer:
        try:
            auth = json_codec.loads(request.body)["auth"]
            identity = auth["identity"]
            user = identity["password"]["user"]
            scope = auth["scope"]["project"]
        except (ValueError, KeyError, TypeError):
            return 400, json_codec.dumps({"error": {"code": 400, "title": "Bad Request"}})
        self.token_requests.append(auth)
        if request.header("Content-Type") != "application/json":
            return 415, b""
        right = (
            identity.get("methods") == ["password"]
            and user.get("name") == self.username
            and user.get("domain") == {"id": self.domain_id}
            and user.get("password") == self.password
            and scope.get("name") == self.project
            and scope.get("domain") == {"id": self.domain_id}
        )
        if not right:
            return 401, UNAUTHORIZED
        body = {
            "token": {
                "methods": ["password"],
                "expires_at": "2099-01-01T00:00:00.000000Z",
                "user": {"name": self.username, "id": "u1", "domain": {"id": self.domain_id}},
                "project": {"name": self.project, "id": self.project_id},
                "catalog": self._catalog(),
            }
        }
        return 201, json_codec.dumps(body), [("X-Subject-Token", self._issue())]

    def _token_v2(self, request: Request) -> Answer:
        try:
            auth = json_codec.loads(request.body)["auth"]
            credentials = auth["passwordCredentials"]
        except (ValueError, KeyError, TypeError):
            return 400, b"{}"
        self.token_requests.append(auth)
        if (credentials.get("username"), credentials.get("password"), auth.get("tenantName")) != (
            self.username,
            self.password,
            self.project,
        ):
            return 401, UNAUTHORIZED
        catalog = [
            {
                "type": "object-store",
                "name": "swift",
                "endpoints": [
                    {"region": "RegionOne", "publicURL": self.storage_url, "internalURL": "x"}
                ],
            }
        ]
        body = {"access": {"token": {"id": self._issue()}, "serviceCatalog": catalog}}
        return 200, json_codec.dumps(body)

    def _storage(self, request: Request, path: str) -> Answer:
        container, _, name = path.partition("/")
        if not name:
            if request.method != "PUT":
                return 405, b""
            if container in self.containers:
                return 202, b""
            self.containers[container] = {}
            return 201, b""
        objects = self.containers.get(container)
        if objects is None:
            return 404, b"<html><h1>Not Found</h1></html>"
        if request.method == "GET":
            if name not in objects:
                return 404, b""
            return 200, self.read(container, name)
        if request.method == "DELETE":
            return (204, b"") if objects.pop(name, None) is not None else (404, b"")
        if request.method != "PUT":
            return 405, b""
        if self.failures:
            return self.failures.pop(0), b"<html><h1>Service Unavailable</h1></html>"
        headers = {key.lower(): value for key, value in request.headers}
        query = parse_qs(urlsplit(request.target).query, keep_blank_values=True)
        if query.get("multipart-manifest") == ["put"]:
            return self._manifest(objects, name, request.body, headers)
        digest = hashlib.md5(request.body).hexdigest()
        if headers.get("etag", digest) != digest:
            return 422, b"<html><h1>Unprocessable Entity</h1></html>"
        objects[name] = StoredObject(request.body, headers)
        return 201, b"", [("ETag", digest)]

    def _manifest(
        self, objects: dict[str, StoredObject], name: str, body: bytes, headers: dict[str, str]
    ) -> Answer:
        items = json_codec.loads(body)
        etags = []
        for item in items:
            container, segment = _split(item["path"].lstrip("/"))
            stored = self.containers.get(container, {}).get(segment)
            digest = hashlib.md5(stored.body).hexdigest() if stored else None
            if stored is None or digest != item["etag"] or len(stored.body) != item["size_bytes"]:
                return 400, f"Errors:\n{item['path']}, 404 Not Found or etag/size".encode()
            etags.append(digest)
        objects[name] = StoredObject(b"", headers, manifest=items)
        etag = hashlib.md5("".join(etags).encode()).hexdigest()
        return 201, b"", [("ETag", f'"{etag}"')]


def _split(path: str) -> tuple[str, str]:
    container, _, name = path.partition("/")
    return container, name
