"""pipeline drafts and published revisions, generation ids (issue 9)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 18:40:00.000000

Reserved in the chain so that the branches of this session can each fill their own
revision without renumbering; until filled it changes nothing.
"""

from collections.abc import Sequence

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
