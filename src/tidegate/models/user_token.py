from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, new_hex_id


class UserToken(Base):
    """A one-use token sent to a person: an invitation to set a first password, or a
    password reset. Only a keyed hash is stored; times are epoch ms."""

    __tablename__ = "user_tokens"

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_hex_id)
    user_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    purpose: Mapped[str] = mapped_column(String(20))  # invitation | password-reset
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_ms: Mapped[int] = mapped_column(BigInteger)
