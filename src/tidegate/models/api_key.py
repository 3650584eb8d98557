from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_hex_id, utcnow


class ApiKey(Base):
    """Enterprise keys (ste_), account service keys (sta_) and ingestion keys.

    Lookups go by a keyed hash of the secret; ``hint`` is its last four chars so a
    person can tell keys apart in a list. Account keys made through the v1 keys API are
    also kept sealed (``sealed_key``, Fernet under the server secret, which is not in
    the database), because that API shows a key again on GET; null for enterprise keys
    and for keys made before migration 0005.
    """

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    kind: Mapped[str] = mapped_column(String(20))
    enterprise_id: Mapped[str | None] = mapped_column(
        String(24), ForeignKey("enterprises.id", ondelete="CASCADE"), index=True, default=None
    )
    account_id: Mapped[str | None] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="CASCADE"), index=True, default=None
    )
    name: Mapped[str | None] = mapped_column(String(250), default=None)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hint: Mapped[str] = mapped_column(String(8))
    sealed_key: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The person who made it (docs/isolation.md); null: made by a key acting as owner.
    made_by: Mapped[str | None] = mapped_column(String(24), default=None)
