from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, new_hex_id, utcnow


class User(Base):
    """A person, one per e-mail across the server. What they may do lives in their
    memberships (one per account, with a role); an account's owner is one of them.

    ``password_hash`` is argon2 (None until an invitation is accepted);
    ``cli_token_sealed`` is the token logdna-cli signs its queries with, sealed under
    the server secret because verifying an HMAC needs it in clear (docs/people.md)."""

    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    firstname: Mapped[str | None] = mapped_column(String(50), default=None)
    lastname: Mapped[str | None] = mapped_column(String(50), default=None)
    verified: Mapped[bool] = mapped_column(Boolean, default=False)
    password_hash: Mapped[str | None] = mapped_column(String(200), default=None)
    cli_token_sealed: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
