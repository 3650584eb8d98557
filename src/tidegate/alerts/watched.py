"""The views the evaluator watches, as plain ``ViewSpec``s (their channels opened from
their seal once per change): the view's own channels, then its preset alert's."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.alerts.channels import Channel
from tidegate.alerts.matching import ViewSpec
from tidegate.alerts.sealed import open_channels
from tidegate.auth.secrets import Sealer
from tidegate.models import PresetAlert, View


def _millis(view: View, preset: PresetAlert | None) -> int:
    changed = view.updated_at
    if preset is not None and preset.updated_at > changed:
        changed = preset.updated_at
    return int(changed.timestamp() * 1000)


class WatchList:
    """The alerting views, rebuilt only for views that changed."""

    def __init__(self, sealer: Sealer, *, window_scale: float = 1.0) -> None:
        self._sealer = sealer
        self._window_scale = window_scale
        self._cache: dict[str, tuple[int, ViewSpec | None]] = {}
        self.channels: dict[tuple[str, str], Channel] = {}
        self._stamp: tuple[object, ...] | None = None
        self._specs: list[ViewSpec] = []

    async def load(self, session: AsyncSession) -> list[ViewSpec]:
        """The watched views; read again only when a view or preset changed (creating,
        changing or deleting one changes the count or the latest change time)."""
        stamp = tuple(
            (
                await session.execute(
                    select(func.count(View.id), func.max(View.updated_at)).where(
                        View.alerting.is_(True)
                    )
                )
            ).one()
        ) + tuple(
            (
                await session.execute(
                    select(func.count(PresetAlert.id), func.max(PresetAlert.updated_at))
                )
            ).one()
        )
        if stamp == self._stamp:
            return self._specs
        self._specs = await self._read(session)
        self._stamp = stamp
        return self._specs

    async def _read(self, session: AsyncSession) -> list[ViewSpec]:
        rows = (
            await session.execute(
                select(View, PresetAlert)
                .outerjoin(PresetAlert, PresetAlert.id == View.preset_id)
                .where(View.alerting.is_(True))
                .order_by(View.id)
            )
        ).all()
        specs: list[ViewSpec] = []
        cache: dict[str, tuple[int, ViewSpec | None]] = {}
        for view, preset in rows:
            stamp = _millis(view, preset)
            known = self._cache.get(view.id)
            spec = (
                known[1]
                if known is not None and known[0] == stamp
                else self._build(view, preset, stamp)
            )
            cache[view.id] = (stamp, spec)
            if spec is not None:
                specs.append(spec)
        self._cache = cache
        self.channels = {
            (spec.view_id, key): Channel.from_stored(stored)
            for spec in specs
            for key, stored in spec.channels
        }
        return specs

    def _build(self, view: View, preset: PresetAlert | None, stamp: int) -> ViewSpec | None:
        channels = [
            (channel.key_text(position, "v"), channel.stored())
            for position, channel in enumerate(open_channels(self._sealer, view.channels_sealed))
        ]
        if preset is not None:
            channels += [
                (channel.key_text(position, "p"), channel.stored())
                for position, channel in enumerate(
                    open_channels(self._sealer, preset.channels_sealed)
                )
            ]
        if not channels:
            return None
        return ViewSpec(
            view_id=view.id,
            account_id=view.account_id,
            name=view.name,
            query=view.query,
            hosts=tuple(view.hosts),
            apps=tuple(view.apps),
            levels=tuple(view.levels),
            tags=tuple(view.tags),
            since_ms=stamp,
            channels=tuple(channels),
            window_scale=self._window_scale,
        )
