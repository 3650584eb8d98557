"""moto in server mode: a real S3 API process on 127.0.0.1 (a free port), for the
archiving and s3 destination tests. Buckets are made and objects read back with boto3
(moto's own dependency), in a worker thread from async tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest
from tests.conftest import free_port
from tests.live import live_get, serving

REGION = "us-east-1"
ACCESS_KEY_ID = "tidegate-test-key"
SECRET_ACCESS_KEY = "tidegate-test-secret"


@dataclass(frozen=True)
class MotoServer:
    endpoint: str

    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY_ID,
            aws_secret_access_key=SECRET_ACCESS_KEY,
        )

    def make_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        listed = self.client().list_objects_v2(Bucket=bucket)
        return sorted(item["Key"] for item in listed.get("Contents", []))

    def read(self, bucket: str, key: str) -> tuple[bytes, dict[str, Any]]:
        got = self.client().get_object(Bucket=bucket, Key=key)
        return got["Body"].read(), got


def _reachable(endpoint: str) -> bool:
    try:
        live_get(endpoint + "/moto-api/")
    except httpx.HTTPError:
        return False
    return True


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        # Parts of 1 KiB (S3's minimum is 5 MiB) let a test stream a day in many parts.
        env={**os.environ, "S3_UPLOAD_PART_MIN_SIZE": "1024"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    with serving(process, lambda: _reachable(endpoint), what="moto_server answering", timeout=60):
        yield MotoServer(endpoint)
