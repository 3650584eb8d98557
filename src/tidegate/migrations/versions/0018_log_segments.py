"""log segments: the registry of the log store's columnar tier and the compactor's lease
(docs/log-store.md, "Segments")

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 12:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "log_segments",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("path", sa.String(length=256), nullable=False),
        sa.Column("window_ms", sa.BigInteger(), nullable=False),
        sa.Column("lines", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("min_ts", sa.BigInteger(), nullable=False),
        sa.Column("max_ts", sa.BigInteger(), nullable=False),
        sa.Column("min_id", sa.BigInteger(), nullable=False),
        sa.Column("max_id", sa.BigInteger(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_log_segments_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_log_segments")),
        sa.UniqueConstraint("path", name=op.f("uq_log_segments_path")),
    )
    op.create_index("ix_log_segments_account_ts", "log_segments", ["account_id", "min_ts"])
    op.create_table(
        "log_segment_lease",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_until_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_log_segment_lease")),
    )
    op.bulk_insert(
        sa.table(
            "log_segment_lease",
            sa.column("name", sa.String),
            sa.column("lease_owner", sa.String),
            sa.column("lease_until_ms", sa.BigInteger),
        ),
        [{"name": "compactor", "lease_owner": None, "lease_until_ms": 0}],
    )


def downgrade() -> None:
    op.drop_table("log_segment_lease")
    op.drop_index("ix_log_segments_account_ts", table_name="log_segments")
    op.drop_table("log_segments")
