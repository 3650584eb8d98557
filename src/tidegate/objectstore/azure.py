"""Azure Blob Storage's REST API: where blobs go (from an account's connection string)
and ``Put Blob`` requests signed with the account's Shared Key, or carrying a shared
access signature (SAS). Pure functions: the caller sends the requests (through the
destination guard's client, with its retries).

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
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import formatdate
from typing import Final
from urllib.parse import parse_qsl, quote, urlsplit

__all__ = [
    "API_VERSION",
    "AzureTarget",
    "parse_connection_string",
    "put_blob_headers",
    "string_to_sign",
]

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

    def url(self, container: str, name: str) -> str:
        url = f"{self.endpoint}/{quote(container, safe='')}/{quote(name, safe='/')}"
        return f"{url}?{self.sas}" if self.sas else url


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


def put_blob_headers(
    target: AzureTarget,
    url: str,
    body: bytes,
    headers: Sequence[tuple[str, str]] = (),
    *,
    now: float | None = None,
) -> tuple[tuple[str, str], ...]:
    """The headers of a ``Put Blob`` (block blob) of ``body`` at ``url``: ``headers``
    (``Content-Type``, ``Content-Encoding``; also sent as the blob's properties
    ``x-ms-blob-content-type``, ``x-ms-blob-content-encoding``), the other ``x-ms-*``
    ones and, with a key,
    ``Authorization`` (a SAS travels in the URL). ``Content-Length`` is signed as the
    HTTP client will send it (the body's length)."""
    properties = [
        (f"x-ms-blob-{name.lower()}", value)
        for name, value in headers
        if name.lower() in ("content-type", "content-encoding")
    ]
    out = [
        *headers,
        *properties,
        ("x-ms-blob-type", "BlockBlob"),
        ("x-ms-date", formatdate(now, usegmt=True)),
        ("x-ms-version", API_VERSION),
    ]
    if not target.key:
        return tuple(out)
    signed = string_to_sign("PUT", url, [*out, ("Content-Length", str(len(body)))], target.account)
    digest = hmac.new(target.key, signed.encode("utf-8"), hashlib.sha256).digest()
    signature = base64.b64encode(digest).decode("ascii")
    return (*out, ("Authorization", f"SharedKey {target.account}:{signature}"))
