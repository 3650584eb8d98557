"""usage counts lines stored after a fallback

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 14:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A server default so existing rows read 0 and the ALTER needs no table rewrite of
    # values by hand; SQLite adds a NOT NULL column only with a default.
    with op.batch_alter_table("account_usage", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("lines_fallback", sa.BigInteger(), server_default="0", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("account_usage", schema=None) as batch_op:
        batch_op.drop_column("lines_fallback")
