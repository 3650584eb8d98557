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


# scope="function": the commit happens before the response is sent, so a 200 is only
# ever sent for work that is durably committed.
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
