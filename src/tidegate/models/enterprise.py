from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, utcnow


def new_enterprise_id() -> str:
    # 20 chars: the owner's enterprise_ids items are capped at 20 by the spec.
    return secrets.token_hex(10)


class Enterprise(Base):
    __tablename__ = "enterprises"

    id: Mapped[str] = mapped_column(String(24), primary_key=True, default=new_enterprise_id)
    name: Mapped[str] = mapped_column(String(250))
    status: Mapped[str] = mapped_column(String(20), default="active")
    parent_enterprise_id: Mapped[str | None] = mapped_column(String(24), default=None)
    partner: Mapped[str | None] = mapped_column(String(250), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
