from __future__ import annotations

from sqlalchemy import BigInteger, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base


class AuthCounter(Base):
    """A failed sign-in count shared by the workers of a server without Redis
    (tidegate.auth.shared_counts). ``key_hash``: SHA-256 of the counter's key (which
    names an e-mail and an address: not stored as such)."""

    __tablename__ = "auth_counters"

    key_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    count: Mapped[int] = mapped_column(Integer)
    last_ms: Mapped[int] = mapped_column(BigInteger)
    expires_ms: Mapped[int] = mapped_column(BigInteger, index=True)


class SignedNonce(Base):
    """A signed query's signature, remembered until it can no longer be fresh, shared by
    the workers of a server without Redis (replay protection)."""

    __tablename__ = "signed_nonces"

    signature: Mapped[str] = mapped_column(String(128), primary_key=True)
    expires_ms: Mapped[int] = mapped_column(BigInteger, index=True)
