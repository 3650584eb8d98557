"""OpenStack Swift (the Object Storage API v1) with a token from Keystone (the Identity
API), sent with the retries of ``tidegate.objectstore.http`` through the caller's
``httpx.AsyncClient`` (the destination guard's).

Authentication (``authenticate``), by the auth URL's version, as OpenStack's clients
read it:

* an auth URL ending in ``/auth/v1.0`` (or ``/v1.0``): Swift's own v1 authentication
  (TempAuth, SwAuth and the like), ``GET <authurl>`` with ``X-Auth-User:
  <tenantname>:<username>`` and ``X-Auth-Key: <password>``; the token and the storage
  URL come back in ``X-Auth-Token`` and ``X-Storage-Url``;
* an auth URL ending in ``/v2.0``: Identity v2.0, ``POST <authurl>/tokens`` with
  ``{"auth": {"tenantName", "passwordCredentials": {"username", "password"}}}``; the
  token is ``access.token.id``, the storage URL the ``publicURL`` of the
  ``object-store`` service in ``access.serviceCatalog``;
* any other (``/v3``, or no version: ``https://keystone.example.com:5000``): Identity
  v3 password authentication, ``POST <authurl>/v3/auth/tokens`` (``<authurl>/auth/tokens``
  when it ends in ``/v3``), the user and the project (the tenant) by name in the
  ``Default`` domain (the platform's body has no domain); the token comes back in
  ``X-Subject-Token``, the storage URL is the ``public`` endpoint of the
  ``object-store`` service in ``token.catalog``.

``SwiftClient`` sends ``X-Auth-Token`` with every request; a ``401`` (the token expired
or was revoked) gets a new token and the request once more (to the storage URL of the
first token: a project's does not change). ``SwiftUpload`` writes one
object: the container made when missing (``PUT`` answers 201 or 202), an object of one
part with one ``PUT`` (its ``ETag`` the MD5 of the body, which Swift checks: 422 when
it differs, and answers it back); an object of several parts as a Static Large Object,
each part a segment object (``.segments/<key>/<attempt>/<n>``, each ``PUT`` with its
MD5), then the manifest (``PUT <key>?multipart-manifest=put``, the segments' path, etag
and size), so the object appears only then, whole. A failed attempt deletes the
segments it wrote. ``X-Delete-After`` (seconds) makes Swift delete the object (and its
segments) when the account asked for archives that expire.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

import httpx

from tidegate import json_codec
from tidegate.objectstore.http import StoreClient, StoreFailed

__all__ = [
    "SEGMENTS",
    "KeystoneFailed",
    "SwiftClient",
    "SwiftCredentials",
    "SwiftFailed",
    "SwiftSession",
    "SwiftUpload",
    "TokenRequest",
    "authenticate",
    "token_request",
]

log = logging.getLogger("tidegate.objectstore")

SEGMENTS: Final = ".segments"
DEFAULT_DOMAIN: Final = "default"  # Keystone's domain id for "Default"
# A service catalog of a large cloud (many services and regions) is a few hundred KiB.
MAX_CATALOG_BYTES: Final = 1024 * 1024
HASH_OFF_LOOP_BYTES: Final = 256 * 1024


class KeystoneFailed(StoreFailed):
    """Keystone (or Swift's v1 authentication) refused the credentials, could not be
    reached (after the retries), or answered without a token or a storage URL."""


class SwiftFailed(StoreFailed):
    """A request Swift refused or that could not be sent (after the retries)."""


@dataclass(frozen=True, slots=True)
class SwiftCredentials:
    """The platform's ``swift`` fields: the auth URL (with its scheme), the user, its
    password and the project (``tenantname``)."""

    authurl: str
    username: str
    password: str
    project: str

    def __repr__(self) -> str:  # never the password in a log
        return f"SwiftCredentials({self.authurl!r}, {self.username!r}, project={self.project!r})"


@dataclass(frozen=True, slots=True)
class SwiftSession:
    storage_url: str
    token: str


@dataclass(frozen=True, slots=True)
class TokenRequest:
    method: str
    url: str
    body: bytes
    headers: tuple[tuple[str, str], ...]
    version: str  # "v1.0", "v2.0" or "v3"


_JSON: Final = (("Content-Type", "application/json"), ("Accept", "application/json"))


def token_request(credentials: SwiftCredentials) -> TokenRequest:
    """The token request for the auth URL's version (the module's rules)."""
    base = credentials.authurl.rstrip("/")
    if base.endswith("/v1.0"):
        user = f"{credentials.project}:{credentials.username}"
        headers = (("X-Auth-User", user), ("X-Auth-Key", credentials.password))
        return TokenRequest("GET", base, b"", headers, "v1.0")
    if base.endswith("/v2.0"):
        body: dict[str, Any] = {
            "auth": {
                "tenantName": credentials.project,
                "passwordCredentials": {
                    "username": credentials.username,
                    "password": credentials.password,
                },
            }
        }
        return TokenRequest("POST", f"{base}/tokens", json_codec.dumps(body), _JSON, "v2.0")
    url = f"{base}/auth/tokens" if base.endswith("/v3") else f"{base}/v3/auth/tokens"
    body = {
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {
                    "user": {
                        "name": credentials.username,
                        "domain": {"id": DEFAULT_DOMAIN},
                        "password": credentials.password,
                    }
                },
            },
            "scope": {"project": {"name": credentials.project, "domain": {"id": DEFAULT_DOMAIN}}},
        }
    }
    return TokenRequest("POST", url, json_codec.dumps(body), _JSON, "v3")


class _Keystone(StoreClient):
    failure = KeystoneFailed
    service = "Keystone"

    async def sign(
        self, method: str, url: str, body: bytes, headers: Sequence[tuple[str, str]]
    ) -> Sequence[tuple[str, str]]:
        return headers

    def explain(self, head: bytes) -> str:
        """Keystone's JSON error's ``title`` (``Unauthorized``)."""
        try:
            title = json_codec.loads(head)["error"]["title"]
        except (ValueError, KeyError, TypeError):
            return ""
        return f" ({str(title)[:100]})" if title else ""


async def authenticate(client: httpx.AsyncClient, credentials: SwiftCredentials) -> SwiftSession:
    """A token for the user in the project and the project's storage URL (the module's
    rules); ``KeystoneFailed`` naming the user and project (never the password)."""
    asked = token_request(credentials)
    who = f"{asked.url} (user {credentials.username!r}, project {credentials.project!r})"
    answer = await _Keystone(client).request(
        asked.method,
        asked.url,
        who,
        body=asked.body,
        headers=asked.headers,
        answer_bytes=MAX_CATALOG_BYTES + 1,
    )
    headers = dict(answer.headers)
    token: object
    if asked.version == "v1.0":
        token, storage = headers.get("x-auth-token"), headers.get("x-storage-url")
        if not storage:
            raise KeystoneFailed(f"{asked.method} {who}: answered without X-Storage-Url")
    else:
        token, storage = _token_and_storage(answer.head, headers, asked.version, who)
    if not isinstance(token, str) or not token:
        raise KeystoneFailed(f"{asked.method} {who}: answered without a token")
    return SwiftSession(storage.rstrip("/"), token)


def _token_and_storage(
    head: bytes, headers: dict[str, str], version: str, who: str
) -> tuple[object, str]:
    """The token and the storage URL of an Identity v3 or v2.0 answer."""
    if len(head) > MAX_CATALOG_BYTES:
        raise KeystoneFailed(f"POST {who}: the answer is too large")
    try:
        document = json_codec.loads(head)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise KeystoneFailed(f"POST {who}: the answer is not a JSON object")
    if version == "v2.0":
        access = _dict(document.get("access"))
        token = _dict(access.get("token")).get("id")
        storage = _v2_storage_url(access.get("serviceCatalog"))
    else:
        token = headers.get("x-subject-token")
        storage = _v3_storage_url(_dict(document.get("token")).get("catalog"))
    if storage is None:
        raise KeystoneFailed(f"POST {who}: the service catalog has no public object-store endpoint")
    return token, storage


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _object_store(catalog: object) -> list[dict[str, Any]]:
    if not isinstance(catalog, list):
        return []
    for service in catalog:
        if _dict(service).get("type") == "object-store":
            endpoints = service.get("endpoints")
            return [_dict(item) for item in endpoints] if isinstance(endpoints, list) else []
    return []


def _v3_storage_url(catalog: object) -> str | None:
    for endpoint in _object_store(catalog):
        url = endpoint.get("url")
        if endpoint.get("interface") == "public" and isinstance(url, str) and url:
            return url
    return None


def _v2_storage_url(catalog: object) -> str | None:
    for endpoint in _object_store(catalog):
        url = endpoint.get("publicURL")
        if isinstance(url, str) and url:
            return url
    return None


class SwiftClient(StoreClient):
    """Requests to one container of the project's Swift account, with a Keystone token
    (taken by ``create_container``, an upload's first request; taken anew once per
    request after a ``401``)."""

    failure = SwiftFailed
    service = "Swift"

    def __init__(
        self,
        client: httpx.AsyncClient,
        credentials: SwiftCredentials,
        container: str,
        **options: Any,
    ) -> None:
        super().__init__(client, **options)
        self.credentials = credentials
        self.container = container
        self.session: SwiftSession | None = None
        self.tokens = 0  # how many tokens this client asked for

    async def _authenticate(self) -> SwiftSession:
        self.session = await authenticate(self.client, self.credentials)
        self.tokens += 1
        return self.session

    def url(self, key: str, query: str) -> str:
        assert self.session is not None
        url = f"{self.session.storage_url}/{quote(self.container, safe='')}"
        if key:
            url += f"/{quote(key, safe='/')}"
        return f"{url}?{query}" if query else url

    async def sign(
        self, method: str, url: str, body: bytes, headers: Sequence[tuple[str, str]]
    ) -> Sequence[tuple[str, str]]:
        assert self.session is not None
        return [*headers, ("X-Auth-Token", self.session.token)]

    def describe(self, key: str) -> str:
        return f"swift://{self.container}/{key}" if key else f"swift://{self.container}"

    async def renew(self, status: int) -> bool:
        if status != 401:
            return False
        log.info("Swift: the token was refused (401); taking a new one")
        await self._authenticate()
        return True

    async def create_container(self) -> None:
        """Takes a token (the first request of an upload), then makes the container
        unless it exists (Swift answers 201, or 202 when it does)."""
        if self.session is None:
            await self._authenticate()
        await self.send("PUT", "")


async def _md5(data: bytes) -> str:
    if len(data) > HASH_OFF_LOOP_BYTES:
        return await asyncio.to_thread(_md5_hex, data)
    return _md5_hex(data)


def _md5_hex(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


class SwiftUpload:
    """One object written part by part (the module's rules). A writer holds the part
    it was given and the one before it (the last part decides between one ``PUT`` and
    a manifest)."""

    def __init__(self, swift: SwiftClient, key: str, *, delete_after_s: int = 0) -> None:
        self.swift = swift
        self.key = key
        self.started = False
        self.segments: list[tuple[str, str, int]] = []  # (name, etag, size)
        self._attempt = uuid.uuid4().hex[:16]
        self._pending: bytes | None = None
        self._headers: list[tuple[str, str]] = []
        self._expiry: list[tuple[str, str]] = (
            [("X-Delete-After", str(delete_after_s))] if delete_after_s > 0 else []
        )

    async def start(self, *, content_type: str, content_encoding: str | None = None) -> None:
        self._headers = [("Content-Type", content_type)]
        if content_encoding:
            self._headers.append(("Content-Encoding", content_encoding))
        await self.swift.create_container()
        self.started = True

    async def part(self, data: bytes) -> None:
        if self._pending is not None:
            await self._segment(self._pending)
        self._pending = data

    async def complete(self) -> None:
        last, self._pending = self._pending or b"", None
        if not self.segments:
            await self._put(self.key, last, self._headers)
            return
        if last:
            await self._segment(last)
        manifest = [
            {"path": f"/{self.swift.container}/{name}", "etag": etag, "size_bytes": size}
            for name, etag, size in self.segments
        ]
        await self.swift.send(
            "PUT",
            self.key,
            query="multipart-manifest=put",
            body=json_codec.dumps(manifest),
            headers=[*self._headers, *self._expiry],
        )

    async def _segment(self, data: bytes) -> None:
        name = f"{SEGMENTS}/{self.key}/{self._attempt}/{len(self.segments):08d}"
        etag = await self._put(name, data, [("Content-Type", "application/octet-stream")])
        self.segments.append((name, etag, len(data)))

    async def _put(self, name: str, data: bytes, headers: list[tuple[str, str]]) -> str:
        digest = await _md5(data)
        answer = await self.swift.send(
            "PUT", name, body=data, headers=[*headers, *self._expiry, ("ETag", digest)]
        )
        if (answer.etag or "").strip('"') != digest:
            raise SwiftFailed(f"PUT {self.swift.describe(name)}: answered ETag {answer.etag!r}")
        return digest

    async def abort(self) -> None:
        for name, _etag, _size in self.segments:
            try:
                await self.swift.send("DELETE", name)
            except (StoreFailed, httpx.HTTPError) as error:
                log.warning("could not delete %s: %s", self.swift.describe(name), error)
