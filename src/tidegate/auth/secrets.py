"""Generating, hashing and sealing secrets.

Keys carry 160 random bits, so a fast keyed hash (HMAC-SHA256 with a per-kind domain
key) is enough to store them: nothing can be brute-forced from the hash. Lookups go by
hash through a unique index and end in a constant-time comparison.

Signing keys must stay usable for HMAC verification, so they are sealed with Fernet
under the server secret, which lives outside the database (TIDEGATE_SECRET_KEY, or a
file under the data directory created with mode 0600 on first use).

Rotating the server secret (README, "Rotating the server secret"): a sealer
also holds the previous secrets (TIDEGATE_PREVIOUS_SECRET_KEYS); it seals under the
current one and opens what any of them sealed, and ``reseal`` moves a sealed value to
the current one (``tidegate secrets rotate`` does it for every stored value).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from tidegate.config import Settings

# Hash domains of the stored keys (hash_secret): management and ingestion keys.
MANAGEMENT_DOMAIN = "tidegate:management-key"
INGESTION_DOMAIN = "tidegate:ingestion-key"

# How many opened stored values a sealer remembers (Sealer.open_stored): secrets are
# short (keys 44 characters, a view's channels a few hundred), so a few MB at most.
STORED_CACHE_SIZE = 4096

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
        return secret_bytes(configured)
    path = data_dir / "secret.key"
    if not path.exists():
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    return secret_bytes(path.read_text().strip())


def secret_bytes(text: str) -> bytes:
    """A server secret as written (a setting, or the secret file's text) as 32 bytes."""
    return hashlib.sha256(text.encode()).digest()


def previous_secrets(setting: str) -> list[bytes]:
    """TIDEGATE_PREVIOUS_SECRET_KEYS (a comma list of secrets as written, the secret
    file's text included) as server secrets, in the order given."""
    return [secret_bytes(item.strip()) for item in setting.split(",") if item.strip()]


class Sealer:
    """Encrypts and decrypts small secrets under the server secret; opens, too, what
    the ``previous`` server secrets sealed."""

    def __init__(self, server_secret: bytes, previous: Sequence[bytes] = ()) -> None:
        keys = [server_secret, *(key for key in previous if key != server_secret)]
        fernets = [Fernet(base64.urlsafe_b64encode(key)) for key in keys]
        self._current = fernets[0]
        self._fernet = MultiFernet(fernets)
        self._fingerprint_keys = [hashlib.sha256(b"fingerprint" + key).digest() for key in keys]
        self.open_stored = functools.lru_cache(maxsize=STORED_CACHE_SIZE)(self.open)

    def seal(self, secret: str) -> str:
        return self._current.encrypt(secret.encode()).decode()

    # open_stored(sealed): ``open``, remembered per sealer for the last STORED_CACHE_SIZE
    # values (a bounded LRU keyed by the sealed text). Only for sealed values read from
    # the database (keys' secrets, alert channels), never for text a client sends: a
    # remembered value answers sooner, which would tell a client whether a token was
    # opened lately. The same sealed text always opens to the same secret under the same
    # server secrets, and a sealer's secrets never change (rotation makes a new sealer,
    # with an empty cache), so an answer from the cache is the answer ``open`` gives. It
    # keeps no secret in memory that the process could not already read: the server
    # secret it holds opens every sealed value in the database (docs/decisions.md, "The
    # request path").
    open_stored: Callable[[str], str | None]

    def open(self, sealed: str) -> str | None:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            return None

    def reseal(self, sealed: str) -> str | None:
        """``sealed`` under the current secret: itself when it is already, sealed anew
        when a previous secret opens it, None when none of them does."""
        try:
            self._current.decrypt(sealed.encode())
            return sealed
        except InvalidToken:
            pass
        try:
            return self._fernet.rotate(sealed.encode()).decode()
        except InvalidToken:
            return None

    def fingerprint(self, secret: str) -> str:
        """The fingerprint stored with a sealed secret (under the current secret)."""
        return self.fingerprints(secret)[0]

    def fingerprints(self, secret: str) -> list[str]:
        """``secret``'s fingerprint under the current secret, then under each previous
        one: a value stored before a rotation is found by any of them."""
        return [
            hmac.new(key, secret.encode(), hashlib.sha256).hexdigest()
            for key in self._fingerprint_keys
        ]


def server_sealer(settings: Settings) -> Sealer:
    """The server's sealer: its secret, and the previous ones it still opens."""
    return Sealer(
        load_server_secret(configured=settings.secret_key, data_dir=settings.data_dir),
        previous_secrets(settings.previous_secret_keys),
    )
