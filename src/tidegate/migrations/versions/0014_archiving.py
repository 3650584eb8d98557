"""archiving: each account's configuration and the days to write (docs/archiving.md)

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 01:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "archive_configs",
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("integration", sa.String(length=16), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_archive_configs_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("account_id", name=op.f("pk_archive_configs")),
    )
    op.create_table(
        "archive_days",
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("day", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_ms", sa.BigInteger(), nullable=False),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_until_ms", sa.BigInteger(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("object_key", sa.String(length=1024), nullable=True),
        sa.Column("lines", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("completed_ms", sa.BigInteger(), nullable=True),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_archive_days_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("account_id", "day", name=op.f("pk_archive_days")),
    )
    op.create_index(op.f("ix_archive_days_next_attempt_ms"), "archive_days", ["next_attempt_ms"])


def downgrade() -> None:
    op.drop_table("archive_days")
    op.drop_table("archive_configs")
