"""View and preset-alert queries. Lookups for a change lock the row."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery, account_row, account_rows
from tidegate.models import AlertDelivery, PresetAlert, View

MAX_LOG_ENTRIES = 500


# What service.view_schema and preset_schema build the representations from.
_VIEW_COLUMNS = (
    "id", "name", "query", "apps", "hosts", "levels", "tags", "category", "preset_id",
    "channels_sealed",
)  # fmt: skip
_PRESET_COLUMNS = ("id", "name", "channels_sealed")
_VIEWS_OF = account_rows(View, *_VIEW_COLUMNS)
VIEW_OF = account_row(View, *_VIEW_COLUMNS)
_PRESETS_OF = account_rows(PresetAlert, *_PRESET_COLUMNS)
PRESET_OF = account_row(PresetAlert, *_PRESET_COLUMNS)


VIEW_ID = account_row(View, "id")
# A view's delivery log, newest first (service.read_delivery_log).
_DELIVERIES_OF = RawQuery(
    select(
        AlertDelivery.id, AlertDelivery.fired_ms, AlertDelivery.event, AlertDelivery.integration,
        AlertDelivery.channel_key, AlertDelivery.status, AlertDelivery.attempts,
        AlertDelivery.last_error, AlertDelivery.finished_ms, AlertDelivery.payload,
    )
    .where(
        AlertDelivery.account_id == bindparam("account_id"),
        AlertDelivery.view_id == bindparam("view_id"),
    )
    .order_by(AlertDelivery.fired_ms.desc(), AlertDelivery.id)
    .limit(MAX_LOG_ENTRIES),
    shared_json=True,  # read_delivery_log builds new documents, never changes a payload
)  # fmt: skip


async def view_records(*, db: Database, account_id: str) -> list[Any]:
    """The account's views, oldest first, as raw records (Database.fetch_records)."""
    return await db.fetch_records(_VIEWS_OF, {"account_id": account_id})


async def preset_records(*, db: Database, account_id: str) -> list[Any]:
    """The account's preset alerts, oldest first, as raw records."""
    return await db.fetch_records(_PRESETS_OF, {"account_id": account_id})


async def record(query: RawQuery, *, db: Database, account_id: str, item_id: str) -> Any:
    """The account's view or preset alert ``item_id`` (``VIEW_OF``, ``PRESET_OF``) as a
    raw record, or None."""
    rows = await db.fetch_records(query, {"account_id": account_id, "id": item_id})
    return rows[0] if rows else None


async def delivery_records(*, db: Database, account_id: str, view_id: str) -> list[Any]:
    """The view's delivery log (the latest MAX_LOG_ENTRIES, newest first) as raw
    records."""
    return await db.fetch_records(_DELIVERIES_OF, {"account_id": account_id, "view_id": view_id})


async def view_of(
    *, session: AsyncSession, account_id: str, view_id: str, for_update: bool = False
) -> View | None:
    query = select(View).where(View.id == view_id, View.account_id == account_id)
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def preset_of(
    *, session: AsyncSession, account_id: str, preset_id: str, for_update: bool = False
) -> PresetAlert | None:
    query = select(PresetAlert).where(
        PresetAlert.id == preset_id, PresetAlert.account_id == account_id
    )
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def detach_preset(*, session: AsyncSession, account_id: str, preset_id: str) -> None:
    """Views of a deleted preset keep alerting only through channels of their own."""
    await session.execute(
        update(View)
        .where(View.account_id == account_id, View.preset_id == preset_id)
        .values(preset_id=None, alerting=View.channels_sealed.is_not(None))
    )
