"""Who is calling: resolved once per request from the credentials."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tidegate.errors import Forbidden


@dataclass(frozen=True, slots=True)
class Principal:
    key_id: str
    kind: Literal["enterprise", "service"]
    enterprise_id: str
    # A service key's own account, or the account an enterprise key delegates to.
    account_id: str | None

    @property
    def acts_as_account(self) -> bool:
        return self.account_id is not None

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
