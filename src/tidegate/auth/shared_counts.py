"""Failed sign-in counts and signed-query signatures kept in the database, for a
server with several workers and no Redis (docs/isolation.md, "Sign-in limits"): every
worker reads and writes the same rows, so the limits are the server's, not each
worker's. Keys and signatures are stored as their SHA-256 (a key names an e-mail and an
address). Expired rows are ignored when read and swept now and then (every
``SWEEP_EVERY`` writes of a process), through the index on ``expires_ms``.
"""

from __future__ import annotations

import hashlib
from typing import Any, cast

from sqlalchemy import CursorResult, case, delete, select
from sqlalchemy.dialects import postgresql, sqlite

from tidegate.clock import now_ms
from tidegate.db.engine import Database
from tidegate.models import AuthCounter, SignedNonce

SWEEP_EVERY = 100


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class SharedCounts:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._writes = 0

    def _insert(self, table: Any) -> Any:
        dialect = sqlite if self.db.url.startswith("sqlite") else postgresql
        return dialect.insert(table)

    async def _sweep(self, session: Any, now: int) -> None:
        self._writes += 1
        if self._writes % SWEEP_EVERY == 0:
            await session.execute(delete(AuthCounter).where(AuthCounter.expires_ms <= now))
            await session.execute(delete(SignedNonce).where(SignedNonce.expires_ms <= now))

    async def tally(self, key: str) -> tuple[int, float]:
        """(failures in the window, the last one's epoch seconds)."""
        async with self.db.read_sessions() as session:
            row = (
                await session.execute(
                    select(AuthCounter.count, AuthCounter.last_ms).where(
                        AuthCounter.key_hash == _digest(key),
                        AuthCounter.expires_ms > now_ms(),
                    )
                )
            ).first()
        return (0, 0.0) if row is None else (int(row[0]), row[1] / 1000)

    async def failed(self, key: str, *, window_s: float, at_ms: int) -> None:
        """A failure at ``at_ms`` (the counter's clock); the window runs on the wall clock."""
        now = now_ms()
        expired = AuthCounter.expires_ms <= now
        statement = self._insert(AuthCounter).values(
            key_hash=_digest(key), count=1, last_ms=at_ms, expires_ms=now + int(window_s * 1000)
        )
        statement = statement.on_conflict_do_update(
            index_elements=[AuthCounter.key_hash],
            set_={
                "count": case((expired, 1), else_=AuthCounter.count + 1),
                "expires_ms": case(
                    (expired, statement.excluded.expires_ms), else_=AuthCounter.expires_ms
                ),
                "last_ms": at_ms,
            },
        )
        async with self.db.write_sessions() as session, session.begin():
            await session.execute(statement)
            await self._sweep(session, now)

    async def succeeded(self, key: str) -> None:
        async with self.db.write_sessions() as session, session.begin():
            await session.execute(delete(AuthCounter).where(AuthCounter.key_hash == _digest(key)))

    async def first_use(self, signature: str, *, remember_s: float) -> bool:
        """True once per signature within ``remember_s``."""
        now = now_ms()
        digest = _digest(signature)
        statement = (
            self._insert(SignedNonce)
            .values(signature=digest, expires_ms=now + int(remember_s * 1000))
            .on_conflict_do_nothing(index_elements=[SignedNonce.signature])
        )
        async with self.db.write_sessions() as session, session.begin():
            await session.execute(
                delete(SignedNonce).where(
                    SignedNonce.signature == digest, SignedNonce.expires_ms <= now
                )
            )
            stored = await session.execute(statement)
            await self._sweep(session, now)
        return bool(cast(CursorResult[Any], stored).rowcount)
