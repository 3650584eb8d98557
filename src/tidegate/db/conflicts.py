"""``INSERT ... ON CONFLICT`` in the session's own dialect: SQLAlchemy spells it per
dialect (``postgresql.insert``, ``sqlite.insert``), and both backends take the same
``on_conflict_do_nothing`` / ``on_conflict_do_update``."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["insert_for"]


def insert_for(session: AsyncSession, table: Any) -> postgresql.Insert | sqlite.Insert:
    """An insert into ``table`` that can say what a conflict does, for ``session``'s
    backend (a session bound to nothing is SQLite's, as the default store)."""
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    return postgresql.insert(table) if dialect == "postgresql" else sqlite.insert(table)
