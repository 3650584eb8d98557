from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, new_hex_id


class UserSession(Base):
    """A signed-in browser: a user's (e-mail and password) or a key's. Only keyed
    hashes of the cookie and of the CSRF token are stored, and a key session refers to
    its key (deleting the key or the user deletes the session). Times are epoch ms."""

    __tablename__ = "user_sessions"

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    csrf_hash: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[str | None] = mapped_column(
        String(24), ForeignKey("users.id", ondelete="CASCADE"), index=True, default=None
    )
    key_id: Mapped[str | None] = mapped_column(
        String(24), ForeignKey("api_keys.id", ondelete="CASCADE"), index=True, default=None
    )
    # The account the session acts as (switchable among the user's accounts).
    account_id: Mapped[str | None] = mapped_column(
        String(24), ForeignKey("accounts.id", ondelete="SET NULL"), default=None
    )
    created_ms: Mapped[int] = mapped_column(BigInteger)
    last_seen_ms: Mapped[int] = mapped_column(BigInteger)
    expires_ms: Mapped[int] = mapped_column(BigInteger, index=True)
