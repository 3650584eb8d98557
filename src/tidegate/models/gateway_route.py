from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_uuid, utcnow


class GatewayRoute(Base):
    __tablename__ = "gateway_routes"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    title: Mapped[str] = mapped_column(String(250))
    description: Mapped[str | None] = mapped_column(String(1000), default=None)
    # The platform's push source type the route receives (``http``, ``splunk-hec``, ...).
    type: Mapped[str] = mapped_column(String(50), default="http")
    # The platform's consumer id: an opaque client-chosen label, stored and echoed.
    consumer_id: Mapped[str | None] = mapped_column(String(250), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class AccessKey(Base):
    """A credential for sending events to a gateway route; stored as a keyed hash."""

    __tablename__ = "access_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    gateway_route_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("gateway_routes.id", ondelete="CASCADE"), index=True
    )
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    title: Mapped[str | None] = mapped_column(String(250), default=None)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hint: Mapped[str] = mapped_column(String(8))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SigningKey(Base):
    """An HMAC signing key of a gateway route. The secret must be usable for HMAC
    verification, so it is stored encrypted (Fernet) under the server secret, which
    lives outside the database; ``fingerprint`` identifies it without revealing it."""

    __tablename__ = "signing_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    gateway_route_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("gateway_routes.id", ondelete="CASCADE"), index=True
    )
    account_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    encrypted_key: Mapped[str] = mapped_column(Text)
    fingerprint: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
