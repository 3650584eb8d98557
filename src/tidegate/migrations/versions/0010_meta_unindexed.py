"""log lines keep meta sent unindexed (indexMeta: false) apart from their searchable meta

Revision ID: 0010
Revises: 0008
Create Date: 2026-11-26 16:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0010"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable with no default: existing rows read null, and neither backend rewrites
    # the table (SQLite's ADD COLUMN, PostgreSQL's catalog-only add on every partition).
    op.add_column(
        "log_lines",
        sa.Column("meta_unindexed", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=True),
    )


def downgrade() -> None:
    op.execute("ALTER TABLE log_lines DROP COLUMN meta_unindexed")
