"""The S3 API: requests signed with AWS Signature V4 (botocore's signer), sent through
the caller's ``httpx.AsyncClient`` (the destination guard's: every connection is vetted,
docs/runtime.md), with retries and backoff (``tidegate.objectstore.http``).

One shape for AWS S3, IBM Cloud Object Storage and DigitalOcean Spaces: path-style
URLs (``<endpoint>/<bucket>/<key>``) on the target's endpoint. ``put_object`` writes
one object; ``MultipartUpload`` writes an object part by part (at least
``MIN_PART_BYTES`` per part but the last), so a writer holds one part in memory, never
the object; ``upload_file`` writes a file either way. ``get_object`` streams an object
into a file, ``list_keys`` and ``delete_object`` serve a store that sweeps what it no
longer names. Answers are read up to ``MAX_ANSWER_BYTES`` (a listing's up to
``MAX_LISTING_BYTES``); an endless answer cannot hold the worker or its memory.
"""

from __future__ import annotations

import asyncio
import html
import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final
from urllib.parse import quote

import httpx

from tidegate.objectstore.http import MAX_ANSWER_BYTES, StoreClient, StoreFailed, error_code

__all__ = [
    "MAX_ANSWER_BYTES",
    "MIN_PART_BYTES",
    "AmbientCredentials",
    "MultipartUpload",
    "S3Client",
    "S3Failed",
    "S3Target",
    "abort_upload",
    "aws_endpoint",
    "delete_object",
    "get_object",
    "list_keys",
    "list_uploads",
    "put_object",
    "signed_headers",
    "upload_file",
]

log = logging.getLogger("tidegate.objectstore")

MIN_PART_BYTES: Final = 5 * 1024 * 1024  # S3's smallest part but the last
# A page of ListObjectsV2 (1,000 keys) is a few hundred KiB.
MAX_LISTING_BYTES: Final = 4 * 1024 * 1024
# Bodies larger than this are signed (hashed) in a worker thread, not on the loop.
SIGN_OFF_LOOP_BYTES: Final = 256 * 1024
_UPLOAD_ID: Final = re.compile(r"<UploadId>([^<]{1,1024})</UploadId>")
_LISTED_KEY: Final = re.compile(r"<Key>([^<]{1,4096})</Key>")
_NEXT_TOKEN: Final = re.compile(r"<NextContinuationToken>([^<]{1,4096})</NextContinuationToken>")
_UPLOAD: Final = re.compile(r"<Upload>(.{1,16384}?)</Upload>", re.DOTALL)
_NEXT_KEY_MARKER: Final = re.compile(r"<NextKeyMarker>([^<]{1,4096})</NextKeyMarker>")
_NEXT_UPLOAD_MARKER: Final = re.compile(r"<NextUploadIdMarker>([^<]{1,1024})</NextUploadIdMarker>")


class S3Failed(StoreFailed):
    """A request the S3 API refused or that could not be sent (after the retries)."""


@dataclass(frozen=True, slots=True)
class S3Target:
    """Where objects go: ``endpoint`` (scheme and host, no path), the bucket, the
    region signed for and the HMAC credentials; or, for IBM COS with an API key, the
    IAM ``bearer`` token instead of a signature."""

    endpoint: str
    bucket: str
    region: str
    access_key_id: str
    secret_access_key: str
    bearer: str | None = None
    # An operator's bucket with no keys set: the AWS default credential chain's (never
    # for a bucket a tenant names: that would lend them the server's own rights).
    ambient: AmbientCredentials | None = field(default=None, compare=False)

    def url(self, key: str) -> str:
        return f"{self.endpoint.rstrip('/')}/{quote(self.bucket, safe='')}/{quote(key, safe='/')}"


class AmbientCredentials:
    """The AWS default credential chain: environment variables, the shared files, web
    identity (EKS), the container endpoint (ECS), the instance metadata (EC2). Resolved
    on first use and kept; botocore refreshes temporary credentials before they expire.
    ``frozen`` may make HTTP requests (to the metadata or container endpoint): call it
    in a worker thread, never on the loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._resolved: Any = None

    def frozen(self) -> tuple[str, str, str | None]:
        """``(access key id, secret access key, session token)``; ``S3Failed`` when the
        chain finds none (tried again on the next request)."""
        with self._lock:
            if self._resolved is None:
                import botocore.session

                self._resolved = botocore.session.get_session().get_credentials()
                if self._resolved is None:
                    raise S3Failed("no AWS credentials: the default credential chain found none")
            frozen = self._resolved.get_frozen_credentials()
        return frozen.access_key, frozen.secret_key, frozen.token


def aws_endpoint(region: str) -> str:
    return f"https://s3.{region}.amazonaws.com"


def signed_headers(
    target: S3Target,
    method: str,
    url: str,
    body: bytes,
    headers: Sequence[tuple[str, str]] = (),
    keys: tuple[str, str, str | None] | None = None,
) -> tuple[tuple[str, str], ...]:
    """``headers`` with the SigV4 ones added (``Authorization``, ``X-Amz-Date``,
    ``X-Amz-Content-SHA256``: the payload's hash is always signed; with a session token
    in ``keys``, ``X-Amz-Security-Token``). ``keys``: the ambient credentials, else the
    target's. ``Host`` is left to the HTTP client, which sends the URL's. A target with
    a ``bearer`` token is not signed: the token is the credential."""
    if target.bearer is not None:
        return (*headers, ("Authorization", f"Bearer {target.bearer}"))
    # Imported here: botocore is a large package (about a tenth of a second) that only a
    # server with an S3 archive or destination uses, and every server start would pay it.
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
    request.context["payload_signing_enabled"] = True
    key_id, secret, token = keys or (target.access_key_id, target.secret_access_key, None)
    credentials = Credentials(key_id, secret, token)
    S3SigV4Auth(credentials, "s3", target.region).add_auth(request)
    return tuple(
        (name, str(value)) for name, value in request.headers.items() if name.lower() != "host"
    )


class S3Client(StoreClient):
    """Signed requests to a bucket with retries (``tidegate.objectstore.http``)."""

    failure = S3Failed
    service = "S3"

    def __init__(self, client: httpx.AsyncClient, target: S3Target, **options: Any) -> None:
        super().__init__(client, **options)
        self.target = target

    def url(self, key: str, query: str) -> str:
        return self.target.url(key) + (f"?{query}" if query else "")

    async def sign(
        self, method: str, url: str, body: bytes, headers: Sequence[tuple[str, str]]
    ) -> Sequence[tuple[str, str]]:
        ambient = self.target.ambient
        keys = await asyncio.to_thread(ambient.frozen) if ambient is not None else None
        if len(body) > SIGN_OFF_LOOP_BYTES:  # hashing megabytes: not on the loop
            return await asyncio.to_thread(
                signed_headers, self.target, method, url, body, headers, keys
            )
        return signed_headers(self.target, method, url, body, headers, keys)

    def describe(self, key: str) -> str:
        return _bucket_key(self.target, key)


def _bucket_key(target: S3Target, key: str) -> str:
    return f"s3://{target.bucket}/{key}"


async def put_object(
    s3: S3Client, key: str, body: bytes, *, content_type: str, content_encoding: str | None
) -> None:
    headers = [("Content-Type", content_type)]
    if content_encoding:
        headers.append(("Content-Encoding", content_encoding))
    await s3.send("PUT", key, body=body, headers=headers)


async def get_object(s3: S3Client, key: str, into: BinaryIO) -> None:
    """The object's bytes, streamed into ``into`` (see ``S3Client.send``): a reader holds
    one chunk of it, never the object. ``S3Failed`` with ``status`` 404: no such key."""
    await s3.send("GET", key, into=into)


async def delete_object(s3: S3Client, key: str) -> None:
    """Deletes the key (S3 answers 204 whether it existed or not)."""
    await s3.send("DELETE", key)


async def list_keys(s3: S3Client, prefix: str) -> list[str]:
    """Every key of the bucket that starts with ``prefix`` (ListObjectsV2, a page of
    1,000 at a time)."""
    keys: list[str] = []
    token: str | None = None
    while True:
        query = f"list-type=2&max-keys=1000&prefix={quote(prefix, safe='')}"
        if token is not None:
            query += f"&continuation-token={quote(token, safe='')}"
        answer = await s3.send("GET", "", query=query, answer_bytes=MAX_LISTING_BYTES + 1)
        if len(answer.head) > MAX_LISTING_BYTES:
            raise S3Failed(f"listing s3://{s3.target.bucket}/{prefix}: answer too large")
        text = answer.head.decode("utf-8", "replace")
        keys += (html.unescape(found) for found in _LISTED_KEY.findall(text))
        next_token = _NEXT_TOKEN.search(text)
        if "<IsTruncated>true</IsTruncated>" not in text or next_token is None:
            return keys
        token = html.unescape(next_token.group(1))


async def list_uploads(s3: S3Client, prefix: str) -> list[tuple[str, str]]:
    """The multipart uploads in progress under ``prefix``, as ``(key, upload id)``
    (ListMultipartUploads, a page of 1,000 at a time)."""
    uploads: list[tuple[str, str]] = []
    markers = ""
    while True:
        query = f"{markers}max-uploads=1000&prefix={quote(prefix, safe='')}&uploads="
        answer = await s3.send("GET", "", query=query, answer_bytes=MAX_LISTING_BYTES + 1)
        if len(answer.head) > MAX_LISTING_BYTES:
            raise S3Failed(f"listing uploads of s3://{s3.target.bucket}/{prefix}: too large")
        text = answer.head.decode("utf-8", "replace")
        for upload in _UPLOAD.findall(text):
            key, upload_id = _LISTED_KEY.search(upload), _UPLOAD_ID.search(upload)
            if key is not None and upload_id is not None:
                uploads.append((html.unescape(key.group(1)), html.unescape(upload_id.group(1))))
        key_marker, upload_marker = _NEXT_KEY_MARKER.search(text), _NEXT_UPLOAD_MARKER.search(text)
        if "<IsTruncated>true</IsTruncated>" not in text or key_marker is None:
            return uploads
        markers = f"key-marker={quote(html.unescape(key_marker.group(1)), safe='')}&"
        if upload_marker is not None:
            upload = quote(html.unescape(upload_marker.group(1)), safe="")
            markers = f"{markers}upload-id-marker={upload}&"


async def abort_upload(s3: S3Client, key: str, upload_id: str) -> None:
    """Aborts a multipart upload: its parts are deleted (S3 answers 204)."""
    await s3.send("DELETE", key, query=f"uploadId={quote(upload_id, safe='')}")


async def upload_file(
    s3: S3Client, key: str, path: Path, *, content_type: str, part_bytes: int
) -> None:
    """Writes the file as the object ``key``: one request up to ``part_bytes``, else a
    multipart upload of parts that size (aborted on failure). The file is read a part
    at a time in a worker thread: the loop holds one part, never the file."""
    size = (await asyncio.to_thread(path.stat)).st_size
    if size <= part_bytes:
        body = await asyncio.to_thread(path.read_bytes)
        await put_object(s3, key, body, content_type=content_type, content_encoding=None)
        return
    upload = MultipartUpload(s3, key)
    try:
        await upload.start(content_type=content_type)
        for offset in range(0, size, part_bytes):
            await upload.part(await asyncio.to_thread(_read_part, path, offset, part_bytes))
        await upload.complete()
    except BaseException:
        await asyncio.shield(upload.abort())
        raise


def _read_part(path: Path, offset: int, size: int) -> bytes:
    with path.open("rb") as handle:
        handle.seek(offset)
        return handle.read(size)


class MultipartUpload:
    """One object written part by part: ``start``, ``part`` (in order), ``complete``;
    ``abort`` on failure (the parts already stored would otherwise be billed)."""

    def __init__(self, s3: S3Client, key: str) -> None:
        self.s3 = s3
        self.key = key
        self.upload_id: str | None = None
        self.etags: list[str] = []

    @property
    def started(self) -> bool:
        return self.upload_id is not None

    async def start(self, *, content_type: str, content_encoding: str | None = None) -> None:
        headers = [("Content-Type", content_type)]
        if content_encoding:
            headers.append(("Content-Encoding", content_encoding))
        answer = await self.s3.send("POST", self.key, query="uploads=", headers=headers)
        found = _UPLOAD_ID.search(answer.head.decode("utf-8", "replace"))
        if found is None:
            raise S3Failed(f"POST {_bucket_key(self.s3.target, self.key)}: no UploadId")
        self.upload_id = found.group(1)

    def _query(self, part: int | None = None) -> str:
        assert self.upload_id is not None
        upload = quote(self.upload_id, safe="")
        return f"partNumber={part}&uploadId={upload}" if part else f"uploadId={upload}"

    async def part(self, data: bytes) -> None:
        number = len(self.etags) + 1
        answer = await self.s3.send("PUT", self.key, query=self._query(number), body=data)
        if not answer.etag:
            raise S3Failed(f"part {number} of {_bucket_key(self.s3.target, self.key)}: no ETag")
        self.etags.append(answer.etag)

    async def complete(self) -> None:
        parts = "".join(
            f"<Part><PartNumber>{number}</PartNumber><ETag>{_xml_text(etag)}</ETag></Part>"
            for number, etag in enumerate(self.etags, start=1)
        )
        body = f"<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>".encode()
        answer = await self.s3.send(
            "POST",
            self.key,
            query=self._query(),
            body=body,
            headers=[("Content-Type", "application/xml")],
        )
        # S3 may answer 200 and still fail the completion, in the body.
        if b"<Error>" in answer.head:
            raise S3Failed(
                f"completing {_bucket_key(self.s3.target, self.key)}{error_code(answer.head)}"
            )

    async def abort(self) -> None:
        if self.upload_id is None:
            return
        try:
            await abort_upload(self.s3, self.key, self.upload_id)
        except (S3Failed, httpx.HTTPError) as error:
            log.warning("could not abort %s: %s", _bucket_key(self.s3.target, self.key), error)


def _xml_text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
