"""Who is calling: resolved once per request from the credentials."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tidegate.auth.roles import MINIMUM_ROLE, Permission, Role
from tidegate.auth.scope import AccessScope
from tidegate.errors import Forbidden

PrincipalKind = Literal["enterprise", "service", "user"]


@dataclass(frozen=True, slots=True)
class Principal:
    # The key presented (or the key a browser session was opened with); None for people.
    key_id: str | None
    kind: PrincipalKind
    enterprise_id: str
    # A service key's own account, the account an enterprise key delegates to, or the
    # account a person acts in (their session's, or the one their CLI signature names).
    account_id: str | None
    # Keys act as owner (docs/people.md), or with their maker's role (docs/isolation.md);
    # people have their membership's role.
    role: Role = Role.OWNER
    user_id: str | None = None
    email: str | None = None
    # The browser session the request came with, if any.
    session_id: str | None = None
    # The lines a person in groups may see (None: all of the account's).
    scope: AccessScope | None = None
    # The person a service key was made by (it acts with at most their role and scope).
    maker_id: str | None = None

    @property
    def person_id(self) -> str | None:
        """Who answers for what these credentials make (docs/isolation.md): the person
        signed in, or the maker of the key; None for a key acting as owner."""
        return self.user_id if self.user_id is not None else self.maker_id

    @property
    def acts_as_account(self) -> bool:
        return self.account_id is not None

    @property
    def limit_key(self) -> str:
        """Who the per-credential rate limit counts."""
        return f"user:{self.user_id}" if self.user_id is not None else (self.key_id or "")

    def enterprise(self) -> str:
        """The enterprise, for endpoints that only an enterprise key (not acting as an
        account) may call."""
        if self.kind != "enterprise" or self.account_id is not None:
            raise Forbidden("This operation needs an enterprise key")
        return self.enterprise_id

    def account(self) -> str:
        """The account, for endpoints that act on one account's configuration."""
        if self.account_id is None:
            raise Forbidden(
                "This operation needs an account key, or an enterprise key with "
                "x-delegate-account-id"
            )
        return self.account_id

    def allows(self, permission: Permission) -> bool:
        if permission is Permission.SIGNED_IN:
            return True
        if permission is Permission.ENTERPRISE:
            return self.kind == "enterprise" and self.account_id is None
        return self.role >= MINIMUM_ROLE[permission]

    def require(self, permission: Permission) -> None:
        if permission is Permission.ENTERPRISE:
            self.enterprise()
            return
        if not self.allows(permission):
            needed = MINIMUM_ROLE[permission].label
            raise Forbidden(
                f"This operation needs the {needed} role or higher; "
                f"these credentials act as {self.role.label}"
            )
