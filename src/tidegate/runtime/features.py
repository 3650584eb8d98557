"""Which of the features a compiled pipeline's components need an account has."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.enterprise.service import has_feature

__all__ = ["enabled_features"]


async def enabled_features(
    *, session: AsyncSession, account_id: str, needed: frozenset[str]
) -> frozenset[str]:
    """The features among ``needed`` the account has (no query when none is needed)."""
    enabled: set[str] = set()
    for name in sorted(needed):
        if await has_feature(session=session, account_id=account_id, name=name):
            enabled.add(name)
    return frozenset(enabled)
