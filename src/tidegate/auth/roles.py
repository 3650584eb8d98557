"""Roles, permissions, and the least role each permission needs.

A person's role is per account (their membership). Keys act with a fixed role:
service keys and enterprise keys act as the account's owner (docs/people.md, "Roles":
the platform's keys have the account's full access, and its Terraform provider manages
every resource with them).

Routes declare the permission they need with ``tidegate.auth.permissions``.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Role(IntEnum):
    """Ordered: each role may do everything the ones below it may."""

    READONLY = 1
    MEMBER = 2
    ADMIN = 3
    OWNER = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Role:
        return cls[text.upper()]


ROLE_NAMES = tuple(role.label for role in Role)


class Permission(StrEnum):
    # Reads of logs (export, aggregate, tail) and of configuration.
    READ = "read"
    # Changes to views, boards, alerts and categories.
    CONTENT = "content"
    # Changes to keys, exclusion rules, pipelines, members and groups.
    MANAGE = "manage"
    # Account settings: suspending ingestion, deleting the account.
    OWN = "own"
    # The enterprise itself (an enterprise key not acting as an account).
    ENTERPRISE = "enterprise"
    # Any valid credential (who am I, the CLI's account list).
    SIGNED_IN = "signed-in"


MINIMUM_ROLE: dict[Permission, Role] = {
    Permission.READ: Role.READONLY,
    Permission.CONTENT: Role.MEMBER,
    Permission.MANAGE: Role.ADMIN,
    Permission.OWN: Role.OWNER,
}
