"""``X-Hub-Signature: <method>=<hex>`` (WebSub): an HMAC of the raw request body under
one of the route's signing keys, method ``sha1``, ``sha256``, ``sha384`` or ``sha512``.
Every key is tried (no early exit) and digests are compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence
from typing import Any, Final

__all__ = ["METHODS", "sign", "verify_signature"]

METHODS: Final[dict[str, Callable[..., Any]]] = {
    "sha1": hashlib.sha1,
    "sha256": hashlib.sha256,
    "sha384": hashlib.sha384,
    "sha512": hashlib.sha512,
}


def sign(body: bytes, key: bytes, method: str = "sha256") -> str:
    """The header value a sender computes (tests and tools)."""
    return f"{method}={hmac.new(key, body, METHODS[method]).hexdigest()}"


def verify_signature(body: bytes, header: str | None, secrets: Sequence[bytes]) -> bool:
    if not header or not secrets:
        return False
    method, separator, hexdigest = header.strip().partition("=")
    digest = METHODS.get(method.strip().lower())
    if not separator or digest is None:
        return False
    try:
        presented = bytes.fromhex(hexdigest.strip())
    except ValueError:
        return False
    matched = False
    for secret in secrets:
        expected = hmac.new(secret, body, digest).digest()
        matched |= hmac.compare_digest(expected, presented)
    return matched
