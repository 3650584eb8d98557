"""parsing templates count the lines they parse (how many, and when last)

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 11:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("parsing_templates", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("match_count", sa.BigInteger(), server_default="0", nullable=False)
        )
        batch_op.add_column(sa.Column("last_matched_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("parsing_templates", schema=None) as batch_op:
        batch_op.drop_column("last_matched_ms")
        batch_op.drop_column("match_count")
