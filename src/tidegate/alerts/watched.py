"""The views the evaluator watches, as plain ``ViewSpec``s (their channels opened from
their seal once per change): the view's own channels, then its preset alert's."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.alerts.channels import Channel
from tidegate.alerts.makers import MakerScopes, maker_scopes, scope_of
from tidegate.alerts.matching import ViewSpec
from tidegate.alerts.sealed import open_channels
from tidegate.auth.scope import limited_query
from tidegate.auth.secrets import Sealer
from tidegate.clock import epoch_ms_of
from tidegate.errors import BadRequest
from tidegate.models import PresetAlert, View


def _millis(view: View, preset: PresetAlert | None) -> int:
    changed = view.updated_at
    if preset is not None and preset.updated_at > changed:
        changed = preset.updated_at
    return epoch_ms_of(changed)


# A view's change time, and its maker's and its preset's maker's scopes.
_Stamp = tuple[int, str | None, str | None]


class WatchList:
    """The alerting views, rebuilt only for views that changed."""

    def __init__(self, sealer: Sealer, *, window_scale: float = 1.0) -> None:
        self._sealer = sealer
        self._window_scale = window_scale
        self._cache: dict[str, tuple[_Stamp, list[ViewSpec]]] = {}
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
        scopes = await maker_scopes(session)
        stamp += (tuple(sorted(scopes.items())),)
        if stamp == self._stamp:
            return self._specs
        self._specs = await self._read(session, scopes)
        self._stamp = stamp
        return self._specs

    async def _read(self, session: AsyncSession, scopes: MakerScopes) -> list[ViewSpec]:
        rows = (
            await session.execute(
                select(View, PresetAlert)
                .outerjoin(PresetAlert, PresetAlert.id == View.preset_id)
                .where(View.alerting.is_(True))
                .order_by(View.id)
            )
        ).all()
        specs: list[ViewSpec] = []
        cache: dict[str, tuple[_Stamp, list[ViewSpec]]] = {}
        for view, preset in rows:
            view_scope = scope_of(scopes, view.account_id, view.made_by)
            preset_scope = (
                scope_of(scopes, view.account_id, preset.made_by) if preset is not None else ""
            )
            stamp = (_millis(view, preset), view_scope, preset_scope)
            known = self._cache.get(view.id)
            built = (
                known[1]
                if known is not None and known[0] == stamp
                else self._build(view, preset, stamp[0], view_scope, preset_scope)
            )
            cache[view.id] = (stamp, built)
            specs.extend(built)
        self._cache = cache
        self.channels = {
            (spec.view_id, key): Channel.from_stored(stored)
            for spec in specs
            for key, stored in spec.channels
        }
        return specs

    def _build(
        self,
        view: View,
        preset: PresetAlert | None,
        stamp: int,
        view_scope: str | None,
        preset_scope: str | None,
    ) -> list[ViewSpec]:
        """The view's own channels with its maker's scope; its preset's channels with
        both the view's maker's and the preset's maker's (each may only send what both
        may see). Channels whose maker left the account are not watched."""
        specs = []
        if view_scope is None:
            return []
        own = [
            (channel.key_text(position, "v"), channel.stored())
            for position, channel in enumerate(open_channels(self._sealer, view.channels_sealed))
        ]
        specs.append(self._spec(view, stamp, own, [view_scope]))
        if preset is not None and preset_scope is not None:
            shared = [
                (channel.key_text(position, "p"), channel.stored())
                for position, channel in enumerate(
                    open_channels(self._sealer, preset.channels_sealed)
                )
            ]
            specs.append(self._spec(view, stamp, shared, [view_scope, preset_scope]))
        return [spec for spec in specs if spec is not None]

    def _spec(
        self,
        view: View,
        stamp: int,
        channels: list[tuple[str, dict[str, Any]]],
        limits: list[str],
    ) -> ViewSpec | None:
        if not channels:
            return None
        matched: str | None = view.query
        try:
            for limit in limits:
                matched = limited_query(matched, limit)
        except BadRequest:  # the view's query does not parse, or is too long with them
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
            matched_query=matched or "",
        )
