"""Azure Blob Storage's REST API: where blobs go (from an account's connection string)
and requests signed with the account's Shared Key, or carrying a shared access
signature (SAS). ``put_blob_headers`` is a pure function (the pipeline destination
sends its requests through its own sender); ``AzureBlobClient`` sends requests with
the retries of ``tidegate.objectstore.http``, and ``BlockBlobUpload`` writes one blob
block by block (``Put Block``, then ``Put Block List``), so a writer holds one block in
memory, never the blob.

Connection strings (``Key=Value;...``, as the Azure portal, the CLI and Azurite give
them): ``AccountName`` and ``AccountKey`` (Shared Key), or ``SharedAccessSignature``;
``BlobEndpoint`` (e.g. Azurite's ``http://127.0.0.1:10000/devstoreaccount1``), else
``<DefaultEndpointsProtocol>://<AccountName>.blob.<EndpointSuffix>`` (https,
``core.windows.net``); ``UseDevelopmentStorage=true`` is Azurite's well-known account.
A bare URL is read as a Blob service URL, its query (if any) as a SAS.

Shared Key (https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key):
``Authorization: SharedKey <account>:<base64 HMAC-SHA256 of the string to sign>``,
the string being the verb, the standard headers (``Content-Length`` empty when 0), the
``x-ms-*`` headers lower-cased and sorted, and ``/<account><URL path>`` with the query
parameters sorted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any, Final
from urllib.parse import parse_qsl, quote, urlsplit

import httpx

from tidegate.objectstore.http import StoreClient, StoreFailed

__all__ = [
    "API_VERSION",
    "AzureBlobClient",
    "AzureFailed",
    "AzureTarget",
    "BlockBlobUpload",
    "parse_connection_string",
    "put_blob_headers",
    "shared_key_headers",
    "string_to_sign",
]

log = logging.getLogger("tidegate.objectstore")

API_VERSION: Final = "2021-08-06"
# Azurite's documented development account (public, not a secret).
_DEV_ACCOUNT: Final = "devstoreaccount1"
_DEV_KEY: Final = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
_STANDARD: Final = (
    "content-encoding",
    "content-language",
    "content-length",
    "content-md5",
    "content-type",
    "date",
    "if-modified-since",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "range",
)


@dataclass(frozen=True, slots=True)
class AzureTarget:
    """The Blob service endpoint (no trailing slash) and the credential: the account
    and its key (Shared Key), or a SAS query string."""

    endpoint: str
    account: str
    key: bytes = b""
    sas: str = ""

    def url(self, container: str, name: str, query: str = "") -> str:
        """The blob's URL (the container's when ``name`` is empty), with ``query`` and
        the SAS."""
        url = f"{self.endpoint}/{quote(container, safe='')}"
        if name:
            url += f"/{quote(name, safe='/')}"
        query = "&".join(part for part in (query, self.sas) if part)
        return f"{url}?{query}" if query else url


def parse_connection_string(text: str) -> AzureTarget:
    """The target a connection string names; ValueError saying what is missing."""
    text = text.strip()
    if text.startswith(("http://", "https://")):
        parts = urlsplit(text)
        if not parts.hostname:
            raise ValueError("the Blob service URL has no host")
        endpoint = f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")
        return AzureTarget(endpoint, parts.hostname.split(".")[0], sas=parts.query)
    fields: dict[str, str] = {}
    for item in text.split(";"):
        if not item.strip():
            continue
        name, equals, value = item.partition("=")
        if not equals:
            raise ValueError("a connection string is Key=Value pairs separated by ';'")
        fields[name.strip().lower()] = value.strip()
    if fields.get("usedevelopmentstorage", "").lower() == "true":
        fields.setdefault("accountname", _DEV_ACCOUNT)
        fields.setdefault("accountkey", _DEV_KEY)
        fields.setdefault("blobendpoint", f"http://127.0.0.1:10000/{_DEV_ACCOUNT}")
    account = fields.get("accountname", "")
    sas = fields.get("sharedaccesssignature", "").lstrip("?")
    endpoint = fields.get("blobendpoint", "").rstrip("/")
    if not endpoint:
        if not account:
            raise ValueError("the connection string needs AccountName or BlobEndpoint")
        protocol = fields.get("defaultendpointsprotocol", "https").lower()
        if protocol not in ("http", "https"):
            raise ValueError("DefaultEndpointsProtocol must be http or https")
        suffix = fields.get("endpointsuffix", "core.windows.net")
        endpoint = f"{protocol}://{account}.blob.{suffix}"
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("BlobEndpoint must be an http or https URL")
    if sas:
        return AzureTarget(endpoint, account, sas=sas)
    if not account or "accountkey" not in fields:
        raise ValueError("the connection string needs AccountName and AccountKey, or a SAS")
    try:
        key = base64.b64decode(fields["accountkey"], validate=True)
    except binascii.Error:
        raise ValueError("AccountKey must be base64") from None
    if not key:
        raise ValueError("AccountKey is empty")
    return AzureTarget(endpoint, account, key=key)


def string_to_sign(method: str, url: str, headers: Sequence[tuple[str, str]], account: str) -> str:
    by_name: dict[str, str] = {}
    for name, value in headers:
        by_name[name.lower()] = value.strip()
    if by_name.get("content-length") == "0":
        by_name["content-length"] = ""
    standard = [by_name.get(name, "") for name in _STANDARD]
    canonical_headers = "".join(
        f"{name}:{value}\n" for name, value in sorted(by_name.items()) if name.startswith("x-ms-")
    )
    parts = urlsplit(url)
    resource = f"/{account}{parts.path or '/'}"
    query: dict[str, list[str]] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        query.setdefault(name.lower(), []).append(value)
    for name in sorted(query):
        resource += f"\n{name}:{','.join(sorted(query[name]))}"
    return "\n".join([method.upper(), *standard]) + "\n" + canonical_headers + resource


def shared_key_headers(
    target: AzureTarget,
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]],
    *,
    content_length: int,
    now: float | None = None,
) -> tuple[tuple[str, str], ...]:
    """``headers`` with ``x-ms-date``, ``x-ms-version`` and, with a key,
    ``Authorization`` (a SAS travels in the URL). ``Content-Length`` is signed as the
    HTTP client will send it (``content_length``)."""
    out = [
        *headers,
        ("x-ms-date", formatdate(now, usegmt=True)),
        ("x-ms-version", API_VERSION),
    ]
    if not target.key:
        return tuple(out)
    signed = string_to_sign(
        method, url, [*out, ("Content-Length", str(content_length))], target.account
    )
    digest = hmac.new(target.key, signed.encode("utf-8"), hashlib.sha256).digest()
    signature = base64.b64encode(digest).decode("ascii")
    return (*out, ("Authorization", f"SharedKey {target.account}:{signature}"))


def _blob_properties(headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """``Content-Type`` and ``Content-Encoding`` as the blob's properties
    (``x-ms-blob-content-type``, ``x-ms-blob-content-encoding``)."""
    return [
        (f"x-ms-blob-{name.lower()}", value)
        for name, value in headers
        if name.lower() in ("content-type", "content-encoding")
    ]


def put_blob_headers(
    target: AzureTarget,
    url: str,
    body: bytes,
    headers: Sequence[tuple[str, str]] = (),
    *,
    now: float | None = None,
) -> tuple[tuple[str, str], ...]:
    """The headers of a ``Put Blob`` (block blob) of ``body`` at ``url``: ``headers``
    (``Content-Type``, ``Content-Encoding``; also sent as the blob's properties) and
    ``shared_key_headers``'."""
    out = [*headers, *_blob_properties(headers), ("x-ms-blob-type", "BlockBlob")]
    return shared_key_headers(target, "PUT", url, out, content_length=len(body), now=now)


class AzureFailed(StoreFailed):
    """A request the Blob service refused or that could not be sent (after the
    retries)."""


class AzureBlobClient(StoreClient):
    """Signed requests to one container with retries (``tidegate.objectstore.http``)."""

    failure = AzureFailed
    service = "Azure Blob"

    def __init__(
        self, client: httpx.AsyncClient, target: AzureTarget, container: str, **options: Any
    ) -> None:
        super().__init__(client, **options)
        self.target = target
        self.container = container

    def url(self, key: str, query: str) -> str:
        return self.target.url(self.container, key, query)

    async def sign(
        self, method: str, url: str, body: bytes, headers: Sequence[tuple[str, str]]
    ) -> Sequence[tuple[str, str]]:
        # An HMAC of the request's headers: the body is not hashed (no Content-MD5).
        return shared_key_headers(self.target, method, url, headers, content_length=len(body))

    def describe(self, key: str) -> str:
        """The blob's (or the container's) URL without a SAS."""
        return "/".join(part for part in (self.target.endpoint, self.container, key) if part)

    async def create_container(self) -> None:
        """Makes the container (private) unless it exists (``ContainerAlreadyExists``,
        409)."""
        try:
            await self.send("PUT", "", query="restype=container")
        except AzureFailed as error:
            if error.status != 409:
                raise


class BlockBlobUpload:
    """One block blob written block by block: ``start`` (the container made if
    missing), ``part`` (each a ``Put Block``, in order), ``complete`` (``Put Block
    List`` commits them, in order, with the blob's properties). Until then the blob
    (or the one it replaces) is unchanged. Blocks left uncommitted by a failed attempt
    are dropped by the service (a week later, Azure's rule; nothing can abort them
    sooner); their ids are unique to the attempt, so they never mix with another's."""

    def __init__(self, azure: AzureBlobClient, key: str) -> None:
        self.azure = azure
        self.key = key
        self.started = False
        self.block_ids: list[str] = []
        self._attempt = uuid.uuid4().hex[:16]
        self._properties: list[tuple[str, str]] = []

    async def start(self, *, content_type: str, content_encoding: str | None = None) -> None:
        headers = [("Content-Type", content_type)]
        if content_encoding:
            headers.append(("Content-Encoding", content_encoding))
        self._properties = _blob_properties(headers)
        await self.azure.create_container()
        self.started = True

    async def part(self, data: bytes) -> None:
        # Every id of a blob has the same length (Azure's rule): 16 + 1 + 8 characters.
        raw = f"{self._attempt}-{len(self.block_ids):08d}".encode("ascii")
        block_id = base64.b64encode(raw).decode("ascii")
        query = f"comp=block&blockid={quote(block_id, safe='')}"
        await self.azure.send("PUT", self.key, query=query, body=data)
        self.block_ids.append(block_id)

    async def complete(self) -> None:
        latest = "".join(f"<Latest>{block_id}</Latest>" for block_id in self.block_ids)
        body = f'<?xml version="1.0" encoding="utf-8"?><BlockList>{latest}</BlockList>'.encode()
        headers = [("Content-Type", "application/xml"), *self._properties]
        await self.azure.send("PUT", self.key, query="comp=blocklist", body=body, headers=headers)

    async def abort(self) -> None:
        if self.block_ids:
            log.info(
                "%s: %d uncommitted blocks left to expire",
                self.azure.describe(self.key),
                len(self.block_ids),
            )
