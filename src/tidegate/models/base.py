"""Declarative base and column types shared by every table."""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, MetaData
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware datetimes in, aware UTC datetimes out, on SQLite as on PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime")
        return value.astimezone(UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @staticmethod
    def read_raw(value: Any) -> datetime | None:
        """``process_result_value`` of the raw driver's value (SQLite's text, asyncpg's
        aware datetime) in one step, for ``Database.fetch_records``: the same datetime.
        SQLite's naive text is parsed once, with a UTC offset appended, rather than
        parsed and given UTC by ``datetime.replace``, which costs about ten parses on
        CPython 3.11 (the pipelines list reads three datetimes a row). Text with an
        offset of its own does not parse with a second one appended: it is parsed as it
        is (the rare case, then converted below)."""
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value + "+00:00")
            except ValueError:
                value = datetime.fromisoformat(value)
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value if value.tzinfo is UTC else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_hex_id() -> str:
    """24 lowercase hex chars, the platform's identifier shape for v1/enterprise objects."""
    return secrets.token_hex(12)


def new_uuid() -> str:
    """The platform's identifier shape for pipeline objects."""
    return str(uuid.uuid4())
