"""The rules of archiving's API: one configuration per account, stored sealed and
answered as sent; the days' status; a day written on demand."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

import httpcore
import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate import json_codec
from tidegate.archive import repository
from tidegate.archive.schemas import ArchiveDayStatus, parse_config
from tidegate.archive.targets import endpoint_url
from tidegate.archive.writer import day_name
from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.errors import BadRequest, Conflict, ErrorItem, NotFound, ValidationFailed
from tidegate.kit.destination_guard import DestinationPolicy, DestinationRefused
from tidegate.logs.store import DAY_MS
from tidegate.models import ArchiveConfig, ArchiveDay

__all__ = [
    "STATUS_DAYS",
    "create",
    "open_config",
    "read",
    "read_status",
    "remove",
    "request_run",
    "update",
]

STATUS_DAYS: Final = 31
NOT_CONFIGURED: Final = "archiving is not configured for this account"


def open_config(row: ArchiveConfig | Any, sealer: Sealer) -> dict[str, Any]:
    """The configuration as it was sent, from the ORM object or a raw record."""
    opened = sealer.open(row.sealed)
    if opened is None:  # the server secret changed: nothing can be written
        raise NotFound("archiving configuration cannot be read with this server's secret")
    value: dict[str, Any] = json_codec.loads(opened)
    return value


async def _vet(config: dict[str, Any], policy: DestinationPolicy) -> None:
    """An ``endpoint`` (or swift's ``authurl``) that is (or resolves now to) a
    non-public address nobody allowed is refused; a name that does not resolve yet is
    taken (checked again on upload)."""
    for field in ("endpoint", "authurl"):
        if field in config:
            await _vet_url(field, config[field], policy)


async def _vet_url(field: str, value: str, policy: DestinationPolicy) -> None:
    try:
        url = httpx.URL(endpoint_url(value))
        host = url.host if url.scheme in ("http", "https") else ""
    except httpx.InvalidURL:
        host = ""
    if not host:
        raise _endpoint_refused(field, "is not a host name or URL")
    try:
        await policy.resolve(host, 443)
    except DestinationRefused as error:
        raise _endpoint_refused(field, f"must not target a non-public address: {error}") from None
    except httpcore.ConnectError:
        pass


def _endpoint_refused(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(
        f"{field} {message}",
        context="body",
        errors=[
            ErrorItem(
                keyword="format",
                message=message,
                instance_path=f"/{field}",
                schema_path=f"#/properties/{field}",
                params={"format": "uri"},
            )
        ],
    )


async def read(*, db: Database, sealer: Sealer, account_id: str) -> dict[str, Any]:
    """The account's configuration as it was sent, from one raw read."""
    row = await repository.config_record(db=db, account_id=account_id)
    if row is None:
        raise NotFound(NOT_CONFIGURED)
    return open_config(row, sealer)


async def _store(
    *,
    session: AsyncSession,
    sealer: Sealer,
    policy: DestinationPolicy,
    account_id: str,
    body: Any,
    now_ms: int,
    creating: bool,
) -> dict[str, Any]:
    config = parse_config(body)
    await _vet(config, policy)
    row = await repository.get_config(session=session, account_id=account_id)
    if creating and row is not None:
        raise Conflict("archiving is already configured for this account; PUT changes it")
    if not creating and row is None:
        raise NotFound(NOT_CONFIGURED)
    sealed = sealer.seal(json_codec.dumps(config).decode())
    if row is None:
        session.add(
            ArchiveConfig(
                account_id=account_id,
                integration=config["integration"],
                sealed=sealed,
                created_ms=now_ms,
                updated_ms=now_ms,
            )
        )
    else:
        row.integration = config["integration"]
        row.sealed = sealed
        row.updated_ms = now_ms
    await session.flush()
    return config


async def create(**kwargs: Any) -> dict[str, Any]:
    return await _store(creating=True, **kwargs)


async def update(**kwargs: Any) -> dict[str, Any]:
    return await _store(creating=False, **kwargs)


async def remove(*, session: AsyncSession, account_id: str) -> None:
    if not await repository.remove_config(session=session, account_id=account_id):
        raise NotFound(NOT_CONFIGURED)


def day_status_data(row: ArchiveDay | Any) -> dict[str, Any]:
    """A day's status (``ArchiveDayStatus``) as plain data (api/raw_json.py), from the
    ORM object or a raw record."""
    waiting = row.status in ("pending", "retrying")
    return {
        "day": day_name(row.day),
        "status": row.status,
        "attempts": row.attempts,
        "error": row.error,
        "object": row.object_key,
        "lines": row.lines,
        "bytes": row.bytes,
        "completed": row.completed_ms,
        "next_attempt": row.next_attempt_ms if waiting else None,
    }


def _day_status(row: ArchiveDay) -> ArchiveDayStatus:
    return ArchiveDayStatus(**day_status_data(row))


def status_data(config: ArchiveConfig | Any | None, days: Sequence[Any]) -> dict[str, Any]:
    """The archiving status (``ArchiveStatus``) as plain data: the configuration (or
    None) and the latest days, newest first."""
    return {
        "integration": None if config is None else config.integration,
        "days": [day_status_data(day) for day in days],
    }


async def read_status(*, db: Database, account_id: str) -> dict[str, Any]:
    """The archiving status as plain data, from two raw reads (the configuration's
    integration, the days)."""
    config = await repository.integration_record(db=db, account_id=account_id)
    days = await repository.day_records(db=db, account_id=account_id, limit=STATUS_DAYS)
    return status_data(config, days)


def parse_day(text: str | None, *, now_ms: int) -> int:
    """Days since the epoch of ``YYYY-MM-DD`` (default: yesterday, UTC); only a day that
    has ended can be written."""
    today = now_ms // DAY_MS
    if text is None:
        return today - 1
    try:
        moment = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise BadRequest(f"day {text!r} is not a date (YYYY-MM-DD)") from None
    day = int(moment.timestamp() * 1000) // DAY_MS
    if day >= today:
        raise BadRequest(f"day {text} has not ended yet (UTC): only past days are archived")
    return day


async def request_run(
    *, session: AsyncSession, account_id: str, day_text: str | None, now_ms: int
) -> ArchiveDayStatus:
    if await repository.get_config(session=session, account_id=account_id) is None:
        raise NotFound(NOT_CONFIGURED)
    day = parse_day(day_text, now_ms=now_ms)
    await repository.request_day(session=session, account_id=account_id, day=day, now_ms=now_ms)
    await session.flush()
    row = await session.get(ArchiveDay, (account_id, day), populate_existing=True)
    assert row is not None
    return _day_status(row)
