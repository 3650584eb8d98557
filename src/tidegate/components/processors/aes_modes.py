"""AES in the modes the platform's encrypt/decrypt processors name: one ``Sealer`` per
node, ``seal(plain) -> (ciphertext, iv)`` and ``open(ciphertext, iv) -> plain``
(``ValueError`` when it does not open). GCM authenticates; CFB, OFB and CTR are
stream modes; CBC pads with PKCS7, ANSI X9.23, ISO 7816-4 or ISO 10126."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.decrepit.ciphers import modes as decrepit
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["Sealer", "sealer"]

_BLOCK: Final = 16


class Sealer:
    def seal(self, plain: bytes) -> tuple[bytes, bytes]:
        raise NotImplementedError

    def open(self, sealed: bytes, iv: bytes) -> bytes:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class _Gcm(Sealer):
    aead: AESGCM

    def seal(self, plain: bytes) -> tuple[bytes, bytes]:
        nonce = os.urandom(12)
        return self.aead.encrypt(nonce, plain, None), nonce

    def open(self, sealed: bytes, iv: bytes) -> bytes:
        try:
            return self.aead.decrypt(iv, sealed, None)
        except InvalidTag:
            raise ValueError("does not open") from None


def _pad(scheme: str, data: bytes) -> bytes:
    if scheme == "PKCS7":
        padder = padding.PKCS7(128).padder()
        return padder.update(data) + padder.finalize()
    if scheme == "ANSIX923":
        padder = padding.ANSIX923(128).padder()
        return padder.update(data) + padder.finalize()
    count = _BLOCK - len(data) % _BLOCK
    if scheme == "ISO7816":
        return data + b"\x80" + b"\x00" * (count - 1)
    return data + os.urandom(count - 1) + bytes([count])  # ISO10126


def _unpad(scheme: str, data: bytes) -> bytes:
    if not data or len(data) % _BLOCK:
        raise ValueError("not whole blocks")
    if scheme in ("PKCS7", "ANSIX923"):
        unpadder = (padding.PKCS7 if scheme == "PKCS7" else padding.ANSIX923)(128).unpadder()
        return unpadder.update(data) + unpadder.finalize()
    if scheme == "ISO7816":
        stripped = data.rstrip(b"\x00")
        if not stripped.endswith(b"\x80") or len(data) - len(stripped) >= _BLOCK:
            raise ValueError("bad padding")
        return stripped[:-1]
    count = data[-1]
    if not 1 <= count <= _BLOCK:
        raise ValueError("bad padding")
    return data[:-count]


@dataclass(frozen=True, slots=True)
class _Classic(Sealer):
    key: bytes
    mode: str
    """``CFB``, ``OFB``, ``CTR`` or ``CBC-<padding>``."""

    def _cipher(
        self, iv: bytes
    ) -> Cipher[modes.ModeWithInitializationVector | modes.ModeWithNonce]:
        name = self.mode.split("-")[0]
        mode: modes.ModeWithInitializationVector | modes.ModeWithNonce
        if name == "CFB":
            mode = decrepit.CFB(iv)  # the platform's; cryptography keeps it here now
        elif name == "OFB":
            mode = decrepit.OFB(iv)
        elif name == "CTR":
            mode = modes.CTR(iv)
        else:
            mode = modes.CBC(iv)
        return Cipher(algorithms.AES(self.key), mode)

    def seal(self, plain: bytes) -> tuple[bytes, bytes]:
        iv = os.urandom(_BLOCK)
        if self.mode.startswith("CBC-"):
            plain = _pad(self.mode[4:], plain)
        encryptor = self._cipher(iv).encryptor()
        return encryptor.update(plain) + encryptor.finalize(), iv

    def open(self, sealed: bytes, iv: bytes) -> bytes:
        if len(iv) != _BLOCK:
            raise ValueError("the IV is not 16 bytes")
        decryptor = self._cipher(iv).decryptor()
        plain = decryptor.update(sealed) + decryptor.finalize()
        return _unpad(self.mode[4:], plain) if self.mode.startswith("CBC-") else plain


def sealer(algorithm: str, key: bytes) -> Sealer:
    """``AES-256-CBC-PKCS7`` and the key (its length checked by the caller)."""
    mode = algorithm.split("-", 2)[2]
    if mode == "GCM":
        return _Gcm(AESGCM(key))
    return _Classic(key, mode)
