"""gcp-storage-emulator (PyPI, pinned in the lock): a real Google Cloud Storage JSON API
process on 127.0.0.1 (a free port, in memory), for the ``gcs`` archive tests. It takes
resumable uploads chunk by chunk (``Content-Range: bytes a-b/*`` answered ``308`` with
the ``Range`` received, then ``bytes a-b/<total>``), and refuses a chunk that does not
start where the bytes received end. It checks no credentials. Buckets are made and
objects listed and read back with plain HTTP requests to its JSON API here (no tidegate
code)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from tests.conftest import free_port
from tests.live import live_get, live_post, serving

BINARY = Path(sys.executable).parent / "gcp-storage-emulator"


@dataclass(frozen=True)
class GcsEmulator:
    endpoint: str
    """``http://127.0.0.1:<port>``"""

    def make_bucket(self, name: str) -> str:
        made = live_post(
            f"{self.endpoint}/storage/v1/b", params={"project": "test"}, json={"name": name}
        )
        assert made.status_code == 200, made.text
        return name

    def names(self, bucket: str) -> list[str]:
        listed = live_get(f"{self.endpoint}/storage/v1/b/{bucket}/o")
        listed.raise_for_status()
        return sorted(item["name"] for item in listed.json().get("items", []))

    def metadata(self, bucket: str, name: str) -> dict[str, Any]:
        got = live_get(f"{self.endpoint}/storage/v1/b/{bucket}/o/{quote(name, safe='')}")
        got.raise_for_status()
        value: dict[str, Any] = got.json()
        return value

    def read(self, bucket: str, name: str) -> bytes:
        got = live_get(
            f"{self.endpoint}/download/storage/v1/b/{bucket}/o/{quote(name, safe='')}",
            params={"alt": "media"},
        )
        got.raise_for_status()
        return got.content


def _reachable(endpoint: str) -> bool:
    try:
        live_get(endpoint + "/storage/v1/b")
    except httpx.HTTPError:
        return False
    return True


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[GcsEmulator]:
    assert BINARY.exists(), f"{BINARY} is missing: gcp-storage-emulator is in the lock"
    port = free_port()
    process = subprocess.Popen(
        [str(BINARY), "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    with serving(
        process, lambda: _reachable(endpoint), what="gcp-storage-emulator answering", timeout=60
    ):
        yield GcsEmulator(endpoint)
