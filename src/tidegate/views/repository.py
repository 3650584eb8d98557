"""View and preset-alert queries. Lookups for a change lock the row."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.models import AlertDelivery, PresetAlert, View

MAX_LOG_ENTRIES = 500


async def views_of(*, session: AsyncSession, account_id: str) -> list[View]:
    result = await session.execute(
        select(View).where(View.account_id == account_id).order_by(View.created_at, View.id)
    )
    return list(result.scalars())


async def view_of(
    *, session: AsyncSession, account_id: str, view_id: str, for_update: bool = False
) -> View | None:
    query = select(View).where(View.id == view_id, View.account_id == account_id)
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def presets_of(*, session: AsyncSession, account_id: str) -> list[PresetAlert]:
    result = await session.execute(
        select(PresetAlert)
        .where(PresetAlert.account_id == account_id)
        .order_by(PresetAlert.created_at, PresetAlert.id)
    )
    return list(result.scalars())


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


async def deliveries_of(
    *, session: AsyncSession, account_id: str, view_id: str
) -> list[AlertDelivery]:
    result = await session.execute(
        select(AlertDelivery)
        .where(AlertDelivery.account_id == account_id, AlertDelivery.view_id == view_id)
        .order_by(AlertDelivery.fired_ms.desc(), AlertDelivery.id)
        .limit(MAX_LOG_ENTRIES)
    )
    return list(result.scalars())
