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
    factory = db.read_sessions if request.method in _READ_METHODS else db.write_sessions
    async with factory() as session:
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise


# scope="function": the commit happens before the response is sent, so a 200 is only
# ever sent for work that is durably committed.
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
