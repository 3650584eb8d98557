"""users, passwords, sessions, members, groups (issue 11)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 18:40:00.000000

Reserved in the chain so that the branches of this session can each fill their own
revision without renumbering; until filled it changes nothing.
"""

from collections.abc import Sequence

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
