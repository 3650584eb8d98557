"""Pipeline nodes' ``user_config`` sealed at rest (docs/api-pipelines.md, "Node
configurations are sealed").

A node's configuration holds credentials (destination API keys, cloud secret keys,
service-account private keys), and the provider reads it back as sent, so it is sealed
(Fernet under the server secret), not hashed. The tables have no plain ``user_config``
column: the only way to a configuration is ``open_config`` and the only way to store
one is ``seal_config``. Both take the server's ``Sealer`` from the session
(``session.info[SEALER_INFO_KEY]``, set on the app's session factories), so no caller
can forget it; a session without one is a programming error (RuntimeError).

A configuration that no longer opens (the server secret changed) raises
``ServiceUnavailable`` naming the node, never the stored text; it is logged by node id.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.secrets import Sealer
from tidegate.db.engine import Database
from tidegate.errors import ServiceUnavailable

__all__ = [
    "SEALER_INFO_KEY",
    "bind_sealer",
    "open_config",
    "open_config_with",
    "seal_config",
    "session_sealer",
]

SEALER_INFO_KEY: Final = "tidegate.sealer"

log = logging.getLogger(__name__)


def session_sealer(session: AsyncSession) -> Sealer:
    sealer = session.info.get(SEALER_INFO_KEY)
    if not isinstance(sealer, Sealer):
        raise RuntimeError(
            "this database session carries no Sealer (session.info[SEALER_INFO_KEY]): "
            "pipeline node configurations cannot be sealed or opened without it"
        )
    return sealer


def seal_config(session: AsyncSession, user_config: dict[str, Any]) -> str:
    return session_sealer(session).seal(json.dumps(user_config, separators=(",", ":")))


def open_config(session: AsyncSession, sealed: str, *, node_id: str) -> dict[str, Any]:
    return open_config_with(session_sealer(session), sealed, node_id=node_id)


def open_config_with(sealer: Sealer, sealed: str, *, node_id: str) -> dict[str, Any]:
    """``open_config`` with the server's sealer given (the raw reads have no session);
    stored text, so opened through the sealer's cache (``Sealer.open_stored``)."""
    opened = sealer.open_stored(sealed)
    if opened is None:
        log.error(
            "the configuration of pipeline node %s cannot be opened with this server secret",
            node_id,
        )
        raise ServiceUnavailable(
            f"The configuration of pipeline node {node_id} cannot be read "
            "(was the server secret changed?)"
        )
    config = json.loads(opened)
    if not isinstance(config, dict):  # only seal_config writes it
        raise ServiceUnavailable(f"The configuration of pipeline node {node_id} is damaged")
    return config


def bind_sealer(db: Database, sealer: Sealer) -> None:
    """Every session of ``db`` carries ``sealer`` (the app does this once at start)."""
    for factory in (db.read_sessions, db.write_sessions):
        factory.configure(info={SEALER_INFO_KEY: sealer})
