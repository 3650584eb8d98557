"""Generating, hashing and sealing secrets.

Keys carry 160 random bits, so a fast keyed hash (HMAC-SHA256 with a per-kind domain
key) is enough to store them: nothing can be brute-forced from the hash. Lookups go by
hash through a unique index and end in a constant-time comparison.

Signing keys must stay usable for HMAC verification, so they are sealed with Fernet
under the server secret, which lives outside the database (TIDEGATE_SECRET_KEY, or a
file under the data directory created with mode 0600 on first use).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

# Hash domains of the stored keys (hash_secret): management and ingestion keys.
MANAGEMENT_DOMAIN = "tidegate:management-key"
INGESTION_DOMAIN = "tidegate:ingestion-key"

MANAGEMENT_KEY_RE = re.compile(r"^st[a-z]_[0-9a-f]{40}$")

ENTERPRISE_PREFIX = "ste_"
SERVICE_PREFIX = "sta_"
ACCESS_KEY_PREFIX = "tga_"


def new_enterprise_key() -> str:
    return ENTERPRISE_PREFIX + secrets.token_hex(20)


def new_service_key() -> str:
    return SERVICE_PREFIX + secrets.token_hex(20)


def new_ingestion_key() -> str:
    # The platform's ingestion keys are 32 hex chars with no prefix.
    return secrets.token_hex(16)


def new_access_key() -> str:
    return ACCESS_KEY_PREFIX + secrets.token_hex(20)


def hash_secret(secret: str, *, domain: str) -> str:
    return hmac.new(domain.encode(), secret.encode(), hashlib.sha256).hexdigest()


def same_secret(left: str, right: str) -> bool:
    return hmac.compare_digest(left.encode(), right.encode())


def hint(secret: str) -> str:
    return secret[-4:]


def load_server_secret(*, configured: str | None, data_dir: Path) -> bytes:
    """The server secret as 32 bytes: configured, or read from (or written to) a file."""
    if configured:
        return hashlib.sha256(configured.encode()).digest()
    path = data_dir / "secret.key"
    if not path.exists():
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    return hashlib.sha256(path.read_text().strip().encode()).digest()


class Sealer:
    """Encrypts and decrypts small secrets under the server secret."""

    def __init__(self, server_secret: bytes) -> None:
        self._fernet = Fernet(base64.urlsafe_b64encode(server_secret))
        self._fingerprint_key = hashlib.sha256(b"fingerprint" + server_secret).digest()

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str | None:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            return None

    def fingerprint(self, secret: str) -> str:
        return hmac.new(self._fingerprint_key, secret.encode(), hashlib.sha256).hexdigest()
