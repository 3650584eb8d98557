from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from tidegate.models.base import Base, UTCDateTime, utcnow


class UserPreference(Base):
    """A person's own settings for the web app, one row per user (none until the
    person changes something: the defaults are the service's). A key has none: they
    belong to the person, not to a credential (docs/web.md, "Preferences")."""

    __tablename__ = "user_preferences"

    user_id: Mapped[str] = mapped_column(
        String(24), ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    # Times shown and typed in UTC instead of the browser's zone.
    utc: Mapped[bool] = mapped_column(Boolean, default=False)
    # The person's latest distinct queries, newest first (bounded by the service): each a
    # plain query (as kept at first) or an object of the query and the range and filters
    # it ran with (docs/web.md, "Preferences").
    query_history: Mapped[list[Any]] = mapped_column(JSON, default=list)
    # The searches the person starred (each as a history entry), newest starred first,
    # kept until unstarred (at most ``MAX_STARRED``, the service's bound).
    starred: Mapped[list[Any]] = mapped_column(JSON, default=list, server_default="[]")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
