"""views, preset alerts, channels, categories, alert state and deliveries (issue 10)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 18:40:00.000000

Reserved in the chain so that the branches of this session can each fill their own
revision without renumbering; until filled it changes nothing.
"""

from collections.abc import Sequence

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
