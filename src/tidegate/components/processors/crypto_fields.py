"""The ``encrypt-fields`` and ``decrypt-fields`` processors: AES-GCM over one field.

``algorithm`` is ``AES-128-GCM``, ``AES-192-GCM`` or ``AES-256-GCM``; ``key`` is text
whose UTF-8 bytes are the key, 16, 24 or 32 of them to match (checked on save; the key
is never shown in errors or logs). Encrypting puts base64(ciphertext + tag) at
``field`` and base64 of the random 12-byte nonce at ``iv_field``; a value that is not a
string is encrypted as its JSON text. Decrypting reverses it, leaving the text at
``field`` and removing ``iv_field``. An event whose field is missing, or that does not
decrypt (wrong key, altered data), passes unchanged.

Not done: the key is stored in the node's configuration as the client sent it (not
sealed), as the platform's API reads it back.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Final, Literal

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from tidegate.components.base import BuildContext, Component, Event, NodeRef
from tidegate.components.processors.kit import FieldText, PerEventProcessor
from tidegate.processing.fields import MISSING, FieldPath, with_value, without

__all__ = ["DECRYPT", "ENCRYPT", "CryptoFieldsConfig"]

_KEY_BYTES: Final = {"AES-128-GCM": 16, "AES-192-GCM": 24, "AES-256-GCM": 32}
MAX_TEXT: Final = 1024 * 1024


class CryptoFieldsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    field: FieldText
    algorithm: Literal["AES-128-GCM", "AES-192-GCM", "AES-256-GCM"] = "AES-256-GCM"
    key: SecretStr = Field(description="16, 24 or 32 bytes of UTF-8 text, per algorithm")
    iv_field: FieldText

    @model_validator(mode="after")
    def _key_fits(self) -> CryptoFieldsConfig:
        size = len(self.key.get_secret_value().encode("utf-8", "surrogatepass"))
        wanted = _KEY_BYTES[self.algorithm]
        if size != wanted:
            raise ValueError(f"key: {self.algorithm} needs a key of {wanted} bytes, not {size}")
        return self


def _cipher(config: CryptoFieldsConfig) -> AESGCM:
    return AESGCM(config.key.get_secret_value().encode("utf-8", "surrogatepass"))


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
        nonce = os.urandom(12)
        sealed = cipher.encrypt(nonce, text.encode("utf-8", "surrogatepass"), None)
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
            plain = cipher.decrypt(
                base64.b64decode(nonce, validate=True),
                base64.b64decode(sealed, validate=True),
                None,
            )
            text = plain.decode("utf-8")
        except (InvalidTag, binascii.Error, ValueError):
            return event
        return without(with_value(event, path, text), iv_path)

    return PerEventProcessor(decrypt, name="decrypt-fields")


ENCRYPT: Component[CryptoFieldsConfig] = Component(
    kind="processor",
    type="encrypt-fields",
    config_model=CryptoFieldsConfig,
    build=_build_encrypt,
    describe="Encrypts `field` with AES-GCM (`algorithm`, `key`); the nonce goes to `iv_field`",
)
DECRYPT: Component[CryptoFieldsConfig] = Component(
    kind="processor",
    type="decrypt-fields",
    config_model=CryptoFieldsConfig,
    build=_build_decrypt,
    describe="Decrypts what encrypt-fields wrote at `field` with the nonce at `iv_field`",
)
