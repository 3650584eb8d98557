"""Views and preset alerts of an account. No HTTP here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.alerts.integrations import checked_channels
from tidegate.alerts.sealed import open_channels, seal_channels
from tidegate.auth.scope import AccessScope
from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database, RawQuery
from tidegate.errors import BadRequest, NotFound
from tidegate.kit.destination_guard import DestinationPolicy
from tidegate.logs.filtering import parse_line_filter
from tidegate.models import PresetAlert, View
from tidegate.models.base import utcnow
from tidegate.views import repository, schemas


def _check_query(query: str | None) -> str:
    text = (query or "").strip()
    if text:
        parse_line_filter(hosts=None, apps=None, levels=None, query=text)  # 400 naming where
    return text


def _wire_channels(sealer: Sealer, sealed: str | None) -> list[dict[str, Any]]:
    channels = open_channels(sealer, sealed)
    return [channel.wire(position) for position, channel in enumerate(channels)]


def view_data(view: View, sealer: Sealer) -> dict[str, Any]:
    """The view's document as plain data (api/raw_json.py), from the ORM object or a raw
    record (``repository.view_records``)."""
    return {
        "viewID": view.id,
        "viewid": view.id,
        "name": view.name,
        "query": view.query,
        "apps": list(view.apps),
        "hosts": list(view.hosts),
        "levels": list(view.levels),
        "tags": list(view.tags),
        "category": list(view.category),
        "presetid": view.preset_id or "",
        "presetids": [view.preset_id] if view.preset_id else [],
        "channels": _wire_channels(sealer, view.channels_sealed),
    }


def view_schema(view: View, sealer: Sealer) -> schemas.View:
    return schemas.View(**view_data(view, sealer))


def preset_data(preset: PresetAlert, sealer: Sealer) -> dict[str, Any]:
    """The preset alert's document as plain data (api/raw_json.py), from the ORM object
    or a raw record (``repository.preset_records``)."""
    return {
        "presetid": preset.id,
        "name": preset.name,
        "channels": _wire_channels(sealer, preset.channels_sealed),
    }


def preset_schema(preset: PresetAlert, sealer: Sealer) -> schemas.Preset:
    return schemas.Preset(**preset_data(preset, sealer))


async def _apply(
    *,
    session: AsyncSession,
    account_id: str,
    view: View,
    body: schemas.ViewIn,
    sealer: Sealer,
    policy: DestinationPolicy,
) -> None:
    query = _check_query(body.query)
    preset_id = (body.presetid or "").strip() or None
    if preset_id is not None and (
        await repository.preset_of(session=session, account_id=account_id, preset_id=preset_id)
        is None
    ):
        raise BadRequest("presetid: no such preset alert")
    channels = await checked_channels(body.channels, policy=policy)
    view.name = body.name
    view.query = query
    view.apps = list(body.apps)
    view.hosts = list(body.hosts)
    view.levels = list(body.levels)
    view.tags = list(body.tags)
    view.category = list(body.category)
    view.preset_id = preset_id
    view.channels_sealed = seal_channels(sealer, channels)
    view.alerting = bool(channels) or preset_id is not None
    view.updated_at = utcnow()


async def list_views(*, db: Database, account_id: str, sealer: Sealer) -> list[dict[str, Any]]:
    return [
        view_data(view, sealer)
        for view in await repository.view_records(db=db, account_id=account_id)
    ]


async def create_view(
    *,
    session: AsyncSession,
    account_id: str,
    body: schemas.ViewIn,
    sealer: Sealer,
    policy: DestinationPolicy,
    made_by: str | None,
) -> schemas.View:
    view = View(account_id=account_id, created_at=utcnow(), made_by=made_by)
    await _apply(
        session=session, account_id=account_id, view=view, body=body, sealer=sealer, policy=policy
    )
    session.add(view)
    await session.flush()
    return view_schema(view, sealer)


async def own_view(
    *, session: AsyncSession, account_id: str, view_id: str, for_update: bool = False
) -> View:
    """The account's view; a foreign or missing id is the same 404, and so is an id no
    view can have (a NUL, which PostgreSQL refuses in text)."""
    if "\x00" in view_id:
        raise NotFound()
    view = await repository.view_of(
        session=session, account_id=account_id, view_id=view_id, for_update=for_update
    )
    if view is None:
        raise NotFound()
    return view


async def _record(query: RawQuery, db: Database, account_id: str, item_id: str) -> Any:
    """The account's item as a raw record; a foreign, missing or impossible id (a NUL,
    which PostgreSQL refuses in text) is the same 404, as ``own_view``'s."""
    found = (
        None
        if "\x00" in item_id
        else await repository.record(query, db=db, account_id=account_id, item_id=item_id)
    )
    if found is None:
        raise NotFound()
    return found


async def read_view(db: Database, sealer: Sealer, account_id: str, view_id: str) -> dict[str, Any]:
    """The view's document as plain data, from a raw record."""
    return view_data(await _record(repository.VIEW_OF, db, account_id, view_id), sealer)


async def update_view(
    *,
    session: AsyncSession,
    account_id: str,
    view_id: str,
    body: schemas.ViewIn,
    sealer: Sealer,
    policy: DestinationPolicy,
    made_by: str | None,
) -> schemas.View:
    view = await own_view(session=session, account_id=account_id, view_id=view_id, for_update=True)
    # Whoever changes a view answers for what its alerts send (docs/isolation.md).
    view.made_by = made_by
    await _apply(
        session=session, account_id=account_id, view=view, body=body, sealer=sealer, policy=policy
    )
    await session.flush()
    return view_schema(view, sealer)


async def delete_view(
    *, session: AsyncSession, account_id: str, view_id: str, sealer: Sealer
) -> schemas.View:
    view = await own_view(session=session, account_id=account_id, view_id=view_id, for_update=True)
    deleted = view_schema(view, sealer)
    await session.delete(view)
    await session.flush()
    return deleted


async def read_delivery_log(
    *, db: Database, account_id: str, view_id: str, scope: AccessScope | None
) -> list[dict[str, Any]]:
    """The view's notifications with the lines that fired them (``schemas.Delivery``'s
    documents, from raw records), each line checked against the reader's scope: a
    view's alert kept what its maker could see, and the reader of its log may see less
    (docs/isolation.md). A foreign, missing or impossible id is the same 404."""
    await _record(repository.VIEW_ID, db, account_id, view_id)
    rows = await repository.delivery_records(db=db, account_id=account_id, view_id=view_id)
    visible = _scope_test(scope, account_id)
    entries = []
    for row in rows:
        payload = row.payload if isinstance(row.payload, dict) else {}
        kept = payload.get("matches")
        lines = (
            [line for line in kept if isinstance(line, dict) and visible(line)]
            if isinstance(kept, list)
            else []
        )
        entries.append(
            {
                "id": row.id,
                "fired": row.fired_ms,
                "event": row.event,
                "integration": row.integration,
                "channel": row.channel_key.split(":", 1)[0],
                "status": row.status,
                "attempts": row.attempts,
                "last_error": row.last_error,
                "finished": row.finished_ms,
                "count": int(payload.get("count", 0)) if scope is None else len(lines),
                "lines": lines,
            }
        )
    return entries


def _scope_test(scope: AccessScope | None, account_id: str) -> Callable[[Any], bool]:
    """Whether a kept line (an export record) is within ``scope``."""
    if scope is None:
        return lambda _line: True
    limit = parse_line_filter(
        hosts=None, apps=None, levels=None, query=scope.as_query(), limit_work=False
    ).bound_to(account_id)

    def visible(line: Any) -> bool:
        if not isinstance(line, dict):
            return False
        meta = line.get("_meta")
        tags = line.get("_tag")
        return limit.matches(
            line=str(line.get("_line", "")),
            host=_text_or_none(line.get("_host")),
            app=_text_or_none(line.get("_app")),
            level=_text_or_none(line.get("level")),
            file=_text_or_none(line.get("_file")),
            meta=meta if isinstance(meta, dict) else None,
            tags=tags if isinstance(tags, list) else None,
        )

    return visible


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# Preset alerts


async def list_presets(*, db: Database, account_id: str, sealer: Sealer) -> list[dict[str, Any]]:
    return [
        preset_data(preset, sealer)
        for preset in await repository.preset_records(db=db, account_id=account_id)
    ]


async def create_preset(
    *,
    session: AsyncSession,
    account_id: str,
    body: schemas.PresetIn,
    sealer: Sealer,
    policy: DestinationPolicy,
    made_by: str | None,
) -> schemas.Preset:
    channels = await checked_channels(body.channels, policy=policy)
    now = utcnow()
    preset = PresetAlert(
        account_id=account_id,
        name=body.name,
        channels_sealed=seal_channels(sealer, channels),
        created_at=now,
        updated_at=now,
        made_by=made_by,
    )
    session.add(preset)
    await session.flush()
    return preset_schema(preset, sealer)


async def _own_preset(
    *, session: AsyncSession, account_id: str, preset_id: str, for_update: bool = False
) -> PresetAlert:
    preset = await repository.preset_of(
        session=session, account_id=account_id, preset_id=preset_id, for_update=for_update
    )
    if preset is None:
        raise NotFound()
    return preset


async def read_preset(
    db: Database, sealer: Sealer, account_id: str, preset_id: str
) -> dict[str, Any]:
    """The preset alert's document as plain data, from a raw record."""
    return preset_data(await _record(repository.PRESET_OF, db, account_id, preset_id), sealer)


async def update_preset(
    *,
    session: AsyncSession,
    account_id: str,
    preset_id: str,
    body: schemas.PresetIn,
    sealer: Sealer,
    policy: DestinationPolicy,
    made_by: str | None,
) -> schemas.Preset:
    preset = await _own_preset(
        session=session, account_id=account_id, preset_id=preset_id, for_update=True
    )
    channels = await checked_channels(body.channels, policy=policy)
    preset.name = body.name
    preset.made_by = made_by
    preset.channels_sealed = seal_channels(sealer, channels)
    preset.updated_at = utcnow()
    await session.flush()
    return preset_schema(preset, sealer)


async def delete_preset(
    *, session: AsyncSession, account_id: str, preset_id: str, sealer: Sealer
) -> schemas.Preset:
    preset = await _own_preset(
        session=session, account_id=account_id, preset_id=preset_id, for_update=True
    )
    deleted = preset_schema(preset, sealer)
    await repository.detach_preset(session=session, account_id=account_id, preset_id=preset_id)
    await session.delete(preset)
    await session.flush()
    return deleted


@dataclass(frozen=True, slots=True)
class SavedSearch:
    """What a reader (export, live tail) asked for once a view is applied: the view's
    query ANDed with the request's, and the request's host/app/level lists where it
    gave them, else the view's (tags too, where the reader supports them)."""

    query: str | None
    hosts: str | None
    apps: str | None
    levels: str | None
    tags: str | None = None


def _joined(given: str | None, saved: list[str]) -> str | None:
    if given is not None and given.strip():
        return given
    return ",".join(saved) if saved else None


async def apply_view(
    *,
    session: AsyncSession,
    account_id: str,
    view_id: str | None,
    query: str | None,
    hosts: str | None,
    apps: str | None,
    levels: str | None,
    tags: str | None = None,
) -> SavedSearch:
    """The search of a request naming a view (``viewID``); a view of another account,
    or none, is a 404 like a missing one. Without a view: the request as it is."""
    if view_id is None or not view_id.strip():
        return SavedSearch(query=query, hosts=hosts, apps=apps, levels=levels, tags=tags)
    view = await own_view(session=session, account_id=account_id, view_id=view_id.strip()[:64])
    given = query.strip() if query else ""
    combined = f"({view.query}) ({given})" if view.query and given else (view.query or given)
    return SavedSearch(
        query=combined or None,
        hosts=_joined(hosts, view.hosts),
        apps=_joined(apps, view.apps),
        levels=_joined(levels, view.levels),
        tags=_joined(tags, view.tags),
    )
