"""The group scopes of the people who made the watched views and preset alerts
(docs/isolation.md): a view's alerts send only lines its maker may see now.

Read at every evaluation round, so that removing a maker from a group, narrowing a
group or removing the maker from the account takes effect at the next round. A maker
who is no longer a member of the account has no scope at all: their alerts are not
evaluated (``None`` below), never widened.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select, union
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.scope import AccessScope, GroupScope
from tidegate.models import Group, GroupMember, Membership, PresetAlert, View

# (account id, user id) -> the scope as search syntax ("" for every line).
MakerScopes = dict[tuple[str, str], str]

_CHUNK = 500


def _chunks(items: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


async def maker_scopes(session: AsyncSession) -> MakerScopes:
    """The scope of every maker of an alerting view or a preset alert who is still a
    member of the view's account."""
    makers = union(
        select(View.account_id, View.made_by).where(
            View.alerting.is_(True), View.made_by.is_not(None)
        ),
        select(PresetAlert.account_id, PresetAlert.made_by).where(PresetAlert.made_by.is_not(None)),
    )
    pairs = {(str(account), str(user)) for account, user in (await session.execute(makers)).all()}
    users = sorted({user for _, user in pairs})
    members: set[tuple[str, str]] = set()
    groups: dict[tuple[str, str], list[GroupScope]] = {}
    for chunk in _chunks(users):
        rows = await session.execute(
            select(Membership.account_id, Membership.user_id).where(Membership.user_id.in_(chunk))
        )
        members.update((str(account), str(user)) for account, user in rows.all())
        scoped = await session.execute(
            select(Group.account_id, GroupMember.user_id, Group.apps, Group.hosts, Group.query)
            .join(Group, Group.id == GroupMember.group_id)
            .where(GroupMember.user_id.in_(chunk))
        )
        for account, user, apps, hosts, query in scoped.all():
            groups.setdefault((str(account), str(user)), []).append(
                GroupScope(tuple(apps or ()), tuple(hosts or ()), query)
            )
    scopes: MakerScopes = {}
    for pair in sorted(pairs & members):
        scope = AccessScope.of(groups.get(pair, []))
        scopes[pair] = "" if scope is None else scope.as_query()
    return scopes


def scope_of(scopes: MakerScopes, account_id: str, made_by: str | None) -> str | None:
    """The limit on what a thing made by ``made_by`` may send: "" for none (made by a
    key acting as owner, or a maker in no group), None when the maker left."""
    if made_by is None:
        return ""
    return scopes.get((account_id, made_by))
