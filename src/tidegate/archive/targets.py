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

An endpoint written without a scheme (``s3.us-south.cloud-object-storage.appdomain.cloud``,
as the provider's examples have it) is HTTPS.
"""

from __future__ import annotations

import base64
from typing import Any, Final

import httpx

from tidegate import json_codec
from tidegate.archive.writer import BLOCK_BYTES, PART_BYTES, ObjectUpload
from tidegate.config import Settings
from tidegate.objectstore.azure import AzureBlobClient, AzureTarget, BlockBlobUpload
from tidegate.objectstore.http import StoreFailed
from tidegate.objectstore.s3 import MultipartUpload, S3Client, S3Target, aws_endpoint

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
    target = await target_for(config, settings=settings, client=client)
    return MultipartUpload(S3Client(client, target), key)


async def ibm_token(apikey: str, *, settings: Settings, client: httpx.AsyncClient) -> str:
    """IBM IAM: ``POST`` the API key (``grant_type=urn:ibm:params:oauth:grant-type:apikey``)
    and take ``access_token`` from the answer."""
    head = bytearray()
    try:
        async with client.stream(
            "POST",
            settings.ibm_iam_token_url,
            data={"grant_type": "urn:ibm:params:oauth:grant-type:apikey", "apikey": apikey},
            headers={"Accept": "application/json"},
            timeout=30.0,
        ) as response:
            async for chunk in response.aiter_bytes():
                head += chunk
                if len(head) > _MAX_TOKEN_BYTES:
                    break
    except httpx.TransportError as error:
        raise ArchiveUnavailable(f"IBM IAM: {type(error).__name__}: {error}") from None
    if response.status_code != 200 or len(head) > _MAX_TOKEN_BYTES:
        raise ArchiveUnavailable(f"IBM IAM answered HTTP {response.status_code} for the API key")
    try:
        token = json_codec.loads(bytes(head)).get("access_token")
    except (ValueError, AttributeError):
        token = None
    if not isinstance(token, str) or not token:
        raise ArchiveUnavailable("IBM IAM answered without an access_token")
    return token


def describe_failure(error: Exception) -> str:
    if isinstance(error, StoreFailed | ArchiveUnavailable):
        return str(error)
    return f"{type(error).__name__}: {error}".rstrip(": ")
