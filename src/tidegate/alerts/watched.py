"""The views the evaluator watches: their line filters compiled once per change and
their effective channels (the view's own, then its preset alert's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.alerts.channels import Channel
from tidegate.alerts.sealed import open_channels
from tidegate.auth.secrets import Sealer
from tidegate.logs.filtering import LineFilter, parse_line_filter
from tidegate.models import PresetAlert, View


@dataclass(slots=True)
class WatchedView:
    view_id: str
    account_id: str
    name: str
    query: str
    line_filter: LineFilter
    # Lines received before the view's alerts were last changed are not its business.
    since_ms: int
    channels: list[tuple[str, Channel]]

    def matches(self, row: Mapping[str, Any]) -> bool:
        if row["received_ms"] < self.since_ms:
            return False
        return self.line_filter.matches(
            line=row["line"],
            host=row["host"],
            app=row["app"],
            level=row["level"],
            file=row["file"],
            meta=row["meta"] if isinstance(row["meta"], dict) else None,
            tags=row["tags"] if isinstance(row["tags"], list) else None,
        )


def _millis(view: View, preset: PresetAlert | None) -> int:
    changed = view.updated_at
    if preset is not None and preset.updated_at > changed:
        changed = preset.updated_at
    return int(changed.timestamp() * 1000)


class WatchList:
    """The alerting views by account, rebuilt only for views that changed."""

    def __init__(self, sealer: Sealer) -> None:
        self._sealer = sealer
        self._cache: dict[str, tuple[int, WatchedView]] = {}

    async def load(self, session: AsyncSession) -> dict[str, list[WatchedView]]:
        rows = (
            await session.execute(
                select(View, PresetAlert)
                .outerjoin(PresetAlert, PresetAlert.id == View.preset_id)
                .where(View.alerting.is_(True))
                .order_by(View.id)
            )
        ).all()
        by_account: dict[str, list[WatchedView]] = {}
        cache: dict[str, tuple[int, WatchedView]] = {}
        for view, preset in rows:
            stamp = _millis(view, preset)
            known = self._cache.get(view.id)
            watched = known[1] if known is not None and known[0] == stamp else None
            if watched is None:
                watched = self._build(view, preset, stamp)
            if watched is None:
                continue
            cache[view.id] = (stamp, watched)
            by_account.setdefault(view.account_id, []).append(watched)
        self._cache = cache
        return by_account

    def _build(self, view: View, preset: PresetAlert | None, stamp: int) -> WatchedView | None:
        channels = [
            (channel.key_text(position, "v"), channel)
            for position, channel in enumerate(open_channels(self._sealer, view.channels_sealed))
        ]
        if preset is not None:
            channels += [
                (channel.key_text(position, "p"), channel)
                for position, channel in enumerate(
                    open_channels(self._sealer, preset.channels_sealed)
                )
            ]
        if not channels:
            return None
        try:
            line_filter = parse_line_filter(
                hosts=",".join(view.hosts),
                apps=",".join(view.apps),
                levels=",".join(view.levels),
                query=view.query or None,
                tags=",".join(view.tags),
            )
        except Exception:  # saved before a syntax change: such a view cannot match
            return None
        return WatchedView(
            view_id=view.id,
            account_id=view.account_id,
            name=view.name,
            query=view.query,
            line_filter=line_filter,
            since_ms=stamp,
            channels=channels,
        )
