"""Azurite (Microsoft's Azure Storage emulator, from npm) as a real Blob service process
on 127.0.0.1 for the azure-blob-storage tests. It is pinned in
``tests/tools/azurite/package-lock.json`` and installed there with ``npm ci`` (by
``.ci/run``, or by this fixture when it is missing); no node or npm fails the tests,
it never skips them.

Containers are made public (``x-ms-blob-public-access: container``, signed with the
emulator's well-known account key), so blobs are listed and read back anonymously:
reading back uses no tidegate code."""

from __future__ import annotations

import base64
import hashlib
import hmac
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path

import httpx
import pytest
from tests.conftest import free_port
from tests.live import live_get, live_request, serving, tls

TOOLS = Path(__file__).resolve().parents[1] / "tools" / "azurite"
BINARY = TOOLS / "node_modules" / ".bin" / "azurite-blob"
ACCOUNT = "devstoreaccount1"
# Azurite's documented development key (public).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@dataclass(frozen=True)
class Azurite:
    endpoint: str
    """``http://127.0.0.1:<port>/devstoreaccount1``"""

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
            f"BlobEndpoint={self.endpoint};"
        )

    def _signed(
        self, method: str, path: str, query: dict[str, str], **extra: str
    ) -> dict[str, str]:
        """Headers of a request signed by hand here, from Azure's documented Shared Key
        rules (no tidegate code): ``path`` under the account, no body."""
        headers = {**extra, "x-ms-date": formatdate(usegmt=True), "x-ms-version": "2021-08-06"}
        canonical = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
        resource = f"/{ACCOUNT}/{ACCOUNT}/{path}" + "".join(
            f"\n{k}:{v}" for k, v in sorted(query.items())
        )
        to_sign = f"{method}\n" + "\n" * 11 + canonical + resource
        digest = hmac.new(base64.b64decode(KEY), to_sign.encode(), hashlib.sha256).digest()
        headers["Authorization"] = f"SharedKey {ACCOUNT}:{base64.b64encode(digest).decode()}"
        return headers

    def make_container(self, name: str) -> str:
        """A container whose blobs anyone may list and read."""
        query = {"restype": "container"}
        headers = self._signed("PUT", name, query, **{"x-ms-blob-public-access": "container"})
        made = live_request("PUT", f"{self.endpoint}/{name}", params=query, headers=headers)
        assert made.status_code == 201, made.text
        return name

    def names(self, container: str) -> list[str]:
        listed = live_get(f"{self.endpoint}/{container}?restype=container&comp=list")
        listed.raise_for_status()
        root = ElementTree.fromstring(listed.content)
        return sorted(element.text or "" for element in root.iter("Name"))

    def read(
        self, container: str, name: str, *, signed: bool = False
    ) -> tuple[bytes, httpx.Headers]:
        """The blob as stored (never inflated on the way) and its headers; ``signed``:
        with the account's key (a private container)."""
        headers = self._signed("GET", f"{container}/{name}", {}) if signed else {}
        with httpx.stream(
            "GET", f"{self.endpoint}/{container}/{name}", headers=headers, verify=tls()
        ) as got:
            got.raise_for_status()
            return b"".join(got.iter_raw()), got.headers

    def committed_blocks(self, container: str, name: str) -> list[int]:
        """The sizes of the blob's committed blocks (``Get Block List``, signed)."""
        query = {"comp": "blocklist", "blocklisttype": "committed"}
        headers = self._signed("GET", f"{container}/{name}", query)
        got = live_get(f"{self.endpoint}/{container}/{name}", params=query, headers=headers)
        assert got.status_code == 200, got.text
        committed = ElementTree.fromstring(got.content).find("CommittedBlocks")
        assert committed is not None
        return [int(block.findtext("Size") or -1) for block in committed.iter("Block")]


def _install() -> None:
    npm = shutil.which("npm")
    assert npm is not None, "npm is missing: Azurite is needed (apt-get install npm; .ci/run)"
    subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--prefix", str(TOOLS)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )


def _reachable(endpoint: str) -> bool:
    try:
        live_get(endpoint + "?comp=list")
    except httpx.HTTPError:
        return False
    return True


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    if not BINARY.exists():
        _install()
    assert BINARY.exists(), f"{BINARY} is missing after npm ci"
    port = free_port()
    data = tmp_path_factory.mktemp("azurite")
    process = subprocess.Popen(
        [
            str(BINARY),
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            str(port),
            "--location",
            str(data),
            "--skipApiVersionCheck",
            "--disableTelemetry",
            "--silent",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}/{ACCOUNT}"
    with serving(process, lambda: _reachable(endpoint), what="Azurite answering", timeout=120):
        yield Azurite(endpoint)
