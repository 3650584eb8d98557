"""Where an account's archive goes: its configuration (as sent) and the server's
settings become the upload of a day's object (``open_upload``): an S3 multipart upload
to an ``S3Target``, or an Azure block blob.

* ``s3``: the bucket on AWS (or ``TIDEGATE_S3_ENDPOINT``), written with the server's
  own credentials (``TIDEGATE_ARCHIVE_S3_*``), as the platform writes with its own
  account's (the bucket's policy lets it).
* ``dos``: DigitalOcean Spaces: ``space`` at ``endpoint`` with the account's
  ``accesskey`` and ``secretkey`` (SigV4; Spaces take the region ``us-east-1``).
* ``ibm``: IBM Cloud Object Storage: ``bucket`` at ``endpoint``, with an IAM token that
  the account's ``apikey`` is exchanged for at ``TIDEGATE_IBM_IAM_TOKEN_URL``.
* ``azblob``: Azure Blob Storage: the account ``accountname`` at
  ``TIDEGATE_AZURE_BLOB_ENDPOINT`` (``https://<account>.blob.core.windows.net``), Shared
  Key with ``accountkey``, in the container ``TIDEGATE_ARCHIVE_AZURE_CONTAINER``.
* ``gcs``: Google Cloud Storage: ``bucket`` through the JSON API
  (``TIDEGATE_GCS_ENDPOINT``), a resumable upload with the server's own service
  account (``TIDEGATE_ARCHIVE_GCS_CREDENTIALS_FILE``), as ``s3`` writes with the
  server's credentials; ``projectid`` is stored and read back, not needed to write.
* ``swift``: OpenStack Swift: a Keystone token for ``username`` / ``password`` in the
  project ``tenantname`` at ``authurl`` (``objectstore/swift.py``), objects in the
  container ``TIDEGATE_ARCHIVE_SWIFT_CONTAINER`` of the project's storage URL, deleted
  by Swift ``expires`` days later when it is set.

An endpoint written without a scheme (``s3.us-south.cloud-object-storage.appdomain.cloud``,
as the provider's examples have it) is HTTPS.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any, Final

import httpx
import jwt

from tidegate import json_codec
from tidegate.archive.writer import BLOCK_BYTES, PART_BYTES, ObjectUpload
from tidegate.clock import now_ms
from tidegate.components.destinations.gcp import GRANT_TYPE, assertion, service_account
from tidegate.config import Settings
from tidegate.delivery import DeliveryFailed
from tidegate.objectstore.azure import AzureBlobClient, AzureTarget, BlockBlobUpload
from tidegate.objectstore.gcs import GCS_ENDPOINT, GcsClient, GcsTarget, ResumableUpload
from tidegate.objectstore.http import StoreFailed
from tidegate.objectstore.s3 import MultipartUpload, S3Client, S3Target, aws_endpoint
from tidegate.objectstore.swift import SwiftClient, SwiftCredentials, SwiftUpload

__all__ = [
    "ArchiveUnavailable",
    "azure_target",
    "endpoint_url",
    "open_upload",
    "part_bytes_for",
    "target_for",
]

SPACES_REGION: Final = "us-east-1"
IBM_REGION: Final = "us-standard"
_MAX_TOKEN_BYTES: Final = 64 * 1024
GCS_SCOPE: Final = "https://www.googleapis.com/auth/devstorage.read_write"
DAY_S: Final = 86_400


class ArchiveUnavailable(Exception):
    """The archive cannot be written now (missing server credentials, an IAM refusal):
    reported in the day's status and retried."""


def endpoint_url(endpoint: str) -> str:
    text = endpoint.strip().rstrip("/")
    if "://" not in text:
        text = f"https://{text}"
    return text


async def target_for(
    config: dict[str, Any], *, settings: Settings, client: httpx.AsyncClient
) -> S3Target:
    integration = config["integration"]
    if integration == "dos":
        return S3Target(
            endpoint_url(config["endpoint"]),
            config["space"],
            SPACES_REGION,
            config["accesskey"],
            config["secretkey"],
        )
    if integration == "ibm":
        token = await ibm_token(config["apikey"], settings=settings, client=client)
        return S3Target(
            endpoint_url(config["endpoint"]), config["bucket"], IBM_REGION, "", "", token
        )
    if not (settings.archive_s3_access_key_id and settings.archive_s3_secret_access_key):
        raise ArchiveUnavailable(
            "this server has no S3 credentials for archiving "
            "(TIDEGATE_ARCHIVE_S3_ACCESS_KEY_ID, TIDEGATE_ARCHIVE_S3_SECRET_ACCESS_KEY)"
        )
    region = settings.archive_s3_region
    return S3Target(
        settings.s3_endpoint or aws_endpoint(region),
        config["bucket"],
        region,
        settings.archive_s3_access_key_id,
        settings.archive_s3_secret_access_key,
    )


def azure_target(config: dict[str, Any], *, settings: Settings) -> AzureTarget:
    """The ``azblob`` account's Blob service (its key was checked on save)."""
    account = config["accountname"]
    endpoint = settings.azure_blob_endpoint.replace("{account}", account).rstrip("/")
    return AzureTarget(endpoint, account, key=base64.b64decode(config["accountkey"]))


def part_bytes_for(config: dict[str, Any]) -> int:
    """The size of the parts (blocks) a day goes up in: a few MiB."""
    return BLOCK_BYTES if config["integration"] == "azblob" else PART_BYTES


async def open_upload(
    config: dict[str, Any], key: str, *, settings: Settings, client: httpx.AsyncClient
) -> ObjectUpload:
    """The upload of the object ``key`` to the configuration's bucket (or container)."""
    if config["integration"] == "azblob":
        azure = AzureBlobClient(
            client, azure_target(config, settings=settings), settings.archive_azure_container
        )
        return BlockBlobUpload(azure, key)
    if config["integration"] == "swift":
        credentials = SwiftCredentials(
            endpoint_url(config["authurl"]),
            config["username"],
            config["password"],
            config["tenantname"],
        )
        swift = SwiftClient(client, credentials, settings.archive_swift_container)
        return SwiftUpload(swift, key, delete_after_s=config.get("expires", 0) * DAY_S)
    if config["integration"] == "gcs":
        token = await google_token(settings=settings, client=client)
        gcs = GcsTarget(settings.gcs_endpoint or GCS_ENDPOINT, config["bucket"], token)
        return ResumableUpload(GcsClient(client, gcs), key)
    target = await target_for(config, settings=settings, client=client)
    return MultipartUpload(S3Client(client, target), key)


async def ibm_token(apikey: str, *, settings: Settings, client: httpx.AsyncClient) -> str:
    """IBM IAM: ``POST`` the API key (``grant_type=urn:ibm:params:oauth:grant-type:apikey``)
    and take ``access_token`` from the answer."""
    form = {"grant_type": "urn:ibm:params:oauth:grant-type:apikey", "apikey": apikey}
    return await _access_token(
        settings.ibm_iam_token_url, form, client=client, who="IBM IAM", what="the API key"
    )


async def google_token(*, settings: Settings, client: httpx.AsyncClient) -> str:
    """Google OAuth for the server's service account (``archive_gcs_credentials_file``):
    a JWT signed with its key (``components.destinations.gcp.assertion``, as Google's
    libraries make it) ``POST``ed to its ``token_uri``; ``access_token`` from the answer."""
    path = settings.archive_gcs_credentials_file
    if not path:
        raise ArchiveUnavailable(
            "this server has no Google service account for archiving "
            "(TIDEGATE_ARCHIVE_GCS_CREDENTIALS_FILE)"
        )
    try:
        text = await asyncio.to_thread(Path(path).read_text, "utf-8")
        account = service_account(text)
        signed = await asyncio.to_thread(assertion, account, GCS_SCOPE, now_ms() // 1000)
    except (OSError, ValueError, DeliveryFailed, jwt.PyJWTError) as error:
        raise ArchiveUnavailable(f"the Google service account key {path}: {error}") from None
    form = {"assertion": signed, "grant_type": GRANT_TYPE}  # google-auth's order
    return await _access_token(
        account.token_uri, form, client=client, who="Google OAuth", what="the service account"
    )


async def _access_token(
    url: str, form: dict[str, str], *, client: httpx.AsyncClient, who: str, what: str
) -> str:
    """``access_token`` of the JSON answer to a form ``POST`` (read up to 64 KiB)."""
    head = bytearray()
    try:
        async with client.stream(
            "POST", url, data=form, headers={"Accept": "application/json"}, timeout=30.0
        ) as response:
            async for chunk in response.aiter_bytes():
                head += chunk
                if len(head) > _MAX_TOKEN_BYTES:
                    break
    except httpx.TransportError as error:
        raise ArchiveUnavailable(f"{who}: {type(error).__name__}: {error}") from None
    if response.status_code != 200 or len(head) > _MAX_TOKEN_BYTES:
        raise ArchiveUnavailable(f"{who} answered HTTP {response.status_code} for {what}")
    try:
        token = json_codec.loads(bytes(head)).get("access_token")
    except (ValueError, AttributeError):
        token = None
    if not isinstance(token, str) or not token:
        raise ArchiveUnavailable(f"{who} answered without an access_token")
    return token


def describe_failure(error: Exception) -> str:
    if isinstance(error, StoreFailed | ArchiveUnavailable):
        return str(error)
    return f"{type(error).__name__}: {error}".rstrip(": ")
