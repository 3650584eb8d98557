"""The request's session: it owns the transaction. Services flush, never commit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.app_state import app_state

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    db = app_state(request).db
    if request.method in _READ_METHODS:
        # Reads change nothing, so there is nothing to commit; returning the connection
        # to the pool ends any transaction (PostgreSQL) or there is none (SQLite).
        async with db.read_sessions() as session:
            yield session
        return
    async with db.write_sessions() as session:
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise


async def get_read_session(request: Request) -> AsyncIterator[AsyncSession]:
    """A read session whatever the method: for a request that carries a body but
    changes nothing (a preview over stored lines). On SQLite a write session's first
    statement takes the write lock (BEGIN IMMEDIATE), so such a request would wait for
    every writer and hold everyone else's writes up for as long as it reads
    (docs/fair-reads.md, "Reads never take the write lock")."""
    async with app_state(request).db.read_sessions() as session:
        yield session


# scope="function": the commit happens before the response is sent, so a 200 is only
# ever sent for work that is durably committed.
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
ReadSessionDep = Annotated[AsyncSession, Depends(get_read_session, scope="function")]
