"""Moving every sealed value to the current server secret: ``tidegate secrets rotate``
(README, "Rotating the server secret").

Each table that keeps a value sealed under the server secret is walked in batches by
primary key. A value the current secret opens is left as it is; one a previous secret
opens is sealed anew under the current one (a signing key's fingerprint recomputed
with it); one no secret opens is counted and named in the log by table and key, never
changed. Idempotent: a second run finds everything current. Servers keep working
meanwhile, as long as they hold the previous secrets too (they open both).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Column, Table, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.secrets import Sealer
from tidegate.models.alert_delivery import AlertDelivery
from tidegate.models.api_key import ApiKey
from tidegate.models.archive import ArchiveConfig
from tidegate.models.gateway_route import SigningKey
from tidegate.models.index_rate_alert import IndexRateAlert
from tidegate.models.pipeline import PipelineNode, PublishedPipelineNode
from tidegate.models.pipeline_alert import PipelineAlert
from tidegate.models.preset_alert import PresetAlert
from tidegate.models.user import User
from tidegate.models.view import View

__all__ = ["SEALED_COLUMNS", "Rotation", "rotate_sealed"]

log = logging.getLogger(__name__)

# Every column holding a value sealed under the server secret. A new one belongs here
# (tests/auth/test_rotation.py checks the models against this list).
SEALED_COLUMNS: tuple[Column[Any], ...] = tuple(
    column.expression  # type: ignore[misc]
    for column in (
        AlertDelivery.channel_sealed,
        ApiKey.sealed_key,
        ArchiveConfig.sealed,
        IndexRateAlert.config_sealed,
        PipelineAlert.payload_sealed,
        PipelineNode.user_config_sealed,
        PublishedPipelineNode.user_config_sealed,
        PresetAlert.channels_sealed,
        SigningKey.encrypted_key,
        User.cli_token_sealed,
        View.channels_sealed,
    )
)

# A sealed secret with a fingerprint stored beside it (recomputed when resealed).
FINGERPRINTS: dict[Column[Any], Column[Any]] = {
    SigningKey.encrypted_key.expression: SigningKey.fingerprint.expression,  # type: ignore[dict-item]
}

BATCH = 500


@dataclass
class Rotation:
    """What a rotation did, by ``table.column``."""

    resealed: Counter[str] = field(default_factory=Counter)
    current: Counter[str] = field(default_factory=Counter)
    unopened: Counter[str] = field(default_factory=Counter)

    def summary(self) -> dict[str, int]:
        return {
            "resealed": sum(self.resealed.values()),
            "current": sum(self.current.values()),
            "unopened": sum(self.unopened.values()),
        }


async def rotate_sealed(session: AsyncSession, sealer: Sealer, *, batch: int = BATCH) -> Rotation:
    """Reseals every stored value under ``sealer``'s current secret, a transaction per
    batch of rows."""
    rotation = Rotation()
    for column in SEALED_COLUMNS:
        await _rotate_column(session, sealer, column, rotation, batch=batch)
    return rotation


async def _rotate_column(
    session: AsyncSession, sealer: Sealer, column: Column[Any], rotation: Rotation, *, batch: int
) -> None:
    table = column.table
    assert isinstance(table, Table)
    keys = list(table.primary_key.columns)
    name = f"{table.name}.{column.name}"
    fingerprint = FINGERPRINTS.get(column)
    last: tuple[Any, ...] | None = None
    while True:
        query = select(*keys, column).where(column.is_not(None)).order_by(*keys).limit(batch)
        if last is not None:
            query = query.where(tuple_(*keys) > tuple_(*last))
        rows = (await session.execute(query)).all()
        if not rows:
            break
        for row in rows:
            key, sealed = tuple(row[: len(keys)]), row[-1]
            resealed = sealer.reseal(sealed)
            if resealed is None:
                rotation.unopened[name] += 1
                log.error("%s of %s opens with none of the server secrets", name, key)
            elif resealed == sealed:
                rotation.current[name] += 1
            else:
                values: dict[str, Any] = {column.name: resealed}
                if fingerprint is not None:
                    opened = sealer.open(resealed)
                    assert opened is not None
                    values[fingerprint.name] = sealer.fingerprint(opened)
                # Kept as they are: a rotation is not an edit (no updated_at moves).
                values.update({c.name: c for c in table.columns if c.onupdate is not None})
                done = await session.execute(
                    update(table)
                    .where(*(k == v for k, v in zip(keys, key, strict=True)), column == sealed)
                    .values(values)
                )
                # A row changed since it was read was sealed by a server: current.
                counted = rotation.resealed if done.rowcount else rotation.current  # type: ignore[attr-defined]
                counted[name] += 1
        await session.commit()
        last = tuple(rows[-1][: len(keys)])
