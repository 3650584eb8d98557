"""The ``encrypt-fields`` and ``decrypt-fields`` processors: AES over one field.

``algorithm`` is ``AES-<128|192|256>-GCM`` (tidegate's, authenticated) or one of the
platform's: ``AES-<bits>-CFB``, ``-OFB``, ``-CTR`` and ``-CBC-<PKCS7|ANSIX923|ISO7816|
ISO10126>`` (its Terraform provider's ``modelutils/encryption_algorithms.go``); ``key``
is text whose UTF-8 bytes are the key, 16, 24 or 32 of them to match (checked on save;
the key is never shown in errors or logs). Encrypting puts base64 of the ciphertext
(GCM: with its tag) at ``field`` and base64 of the random IV (GCM: 12-byte nonce;
others: 16 bytes) at ``iv_field``; a value that is not a string is encrypted as its
JSON text. Decrypting reverses it, leaving the text at ``field`` and removing
``iv_field``. An event whose field is missing, or that does not decrypt, passes
unchanged. Only GCM detects a wrong key or altered data; the platform's modes are not
authenticated (a wrong key gives bytes that are rarely UTF-8 text; CBC's padding check
catches most).

``encode_raw_bytes`` / ``decode_raw_bytes`` (the provider's, default true): base64
text. ``false`` (raw bytes in the event) is refused: events are JSON, and bytes are
written as base64.

Not done: the key is stored in the node's configuration as the client sent it (not
sealed), as the platform's API reads it back.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.aes_modes import Sealer, sealer
from tidegate.components.processors.kit import FieldText, PerEventProcessor
from tidegate.processing.fields import MISSING, FieldPath, with_value, without

__all__ = ["DECRYPT", "ENCRYPT", "CryptoFieldsConfig"]

MAX_TEXT: Final = 1024 * 1024
_MODES: Final = (
    "GCM",
    "CFB",
    "OFB",
    "CTR",
    "CBC-PKCS7",
    "CBC-ANSIX923",
    "CBC-ISO7816",
    "CBC-ISO10126",
)
ALGORITHMS: Final = tuple(f"AES-{bits}-{mode}" for mode in _MODES for bits in (128, 192, 256))
Algorithm = Literal[
    "AES-128-GCM", "AES-192-GCM", "AES-256-GCM",
    "AES-128-CFB", "AES-192-CFB", "AES-256-CFB",
    "AES-128-OFB", "AES-192-OFB", "AES-256-OFB",
    "AES-128-CTR", "AES-192-CTR", "AES-256-CTR",
    "AES-128-CBC-PKCS7", "AES-192-CBC-PKCS7", "AES-256-CBC-PKCS7",
    "AES-128-CBC-ANSIX923", "AES-192-CBC-ANSIX923", "AES-256-CBC-ANSIX923",
    "AES-128-CBC-ISO7816", "AES-192-CBC-ISO7816", "AES-256-CBC-ISO7816",
    "AES-128-CBC-ISO10126", "AES-192-CBC-ISO10126", "AES-256-CBC-ISO10126",
]  # fmt: skip


class CryptoFieldsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    field: FieldText
    algorithm: Algorithm = "AES-256-GCM"
    key: SecretStr = Field(description="16, 24 or 32 bytes of UTF-8 text, per algorithm")
    iv_field: FieldText
    encode_raw_bytes: Literal[True] = True
    decode_raw_bytes: Literal[True] = True

    @model_validator(mode="after")
    def _key_fits(self) -> CryptoFieldsConfig:
        size = len(self.key.get_secret_value().encode("utf-8", "surrogatepass"))
        wanted = int(self.algorithm.split("-")[1]) // 8
        if size != wanted:
            raise ValueError(f"key: {self.algorithm} needs a key of {wanted} bytes, not {size}")
        return self


def _cipher(config: CryptoFieldsConfig) -> Sealer:
    key = config.key.get_secret_value().encode("utf-8", "surrogatepass")
    return sealer(config.algorithm, key)


def _build_encrypt(
    config: CryptoFieldsConfig, _context: BuildContext, _node: NodeRef
) -> PerEventProcessor:
    cipher = _cipher(config)
    path, iv_path = FieldPath.parse(config.field), FieldPath.parse(config.iv_field)
    get = path.getter()

    def encrypt(event: Event) -> Event:
        value = get(event)
        if value is MISSING:
            return event
        text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
        if len(text) > MAX_TEXT:
            return event
        sealed, nonce = cipher.seal(text.encode("utf-8", "surrogatepass"))
        event = with_value(event, path, base64.b64encode(sealed).decode())
        return with_value(event, iv_path, base64.b64encode(nonce).decode())

    return PerEventProcessor(encrypt, name="encrypt-fields")


def _build_decrypt(
    config: CryptoFieldsConfig, _context: BuildContext, _node: NodeRef
) -> PerEventProcessor:
    cipher = _cipher(config)
    path, iv_path = FieldPath.parse(config.field), FieldPath.parse(config.iv_field)
    get, get_iv = path.getter(), iv_path.getter()

    def decrypt(event: Event) -> Event:
        sealed, nonce = get(event), get_iv(event)
        if not isinstance(sealed, str) or not isinstance(nonce, str) or len(sealed) > 2 * MAX_TEXT:
            return event
        try:
            plain = cipher.open(
                base64.b64decode(sealed, validate=True), base64.b64decode(nonce, validate=True)
            )
            text = plain.decode("utf-8")
        except (binascii.Error, ValueError):
            return event
        return without(with_value(event, path, text), iv_path)

    return PerEventProcessor(decrypt, name="decrypt-fields")


ENCRYPT: Component[CryptoFieldsConfig] = Component(
    kind="processor",
    type="encrypt-fields",
    config_model=CryptoFieldsConfig,
    build=_build_encrypt,
    describe="Encrypts `field` with AES (`algorithm`: GCM, CFB, OFB, CTR, CBC; `key`); "
    "the IV goes to `iv_field`",
)
DECRYPT: Component[CryptoFieldsConfig] = Component(
    kind="processor",
    type="decrypt-fields",
    config_model=CryptoFieldsConfig,
    build=_build_decrypt,
    describe="Decrypts what encrypt-fields wrote at `field` with the nonce at `iv_field`",
)
