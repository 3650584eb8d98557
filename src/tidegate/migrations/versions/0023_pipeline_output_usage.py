"""pipeline_output_usage: events and bytes per component, named output (a route
processor's arm) and minute, which pipeline alerts on a route's arm count
(docs/api-pipelines.md, "Pipeline alerts").

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pipeline_output_usage",
        sa.Column("pipeline_id", sa.String(length=36), nullable=False),
        sa.Column("component_id", sa.String(length=36), nullable=False),
        sa.Column("output", sa.String(length=64), nullable=False),
        sa.Column("bucket_ms", sa.BigInteger(), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("events", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_pipeline_output_usage_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "pipeline_id",
            "component_id",
            "output",
            "bucket_ms",
            name=op.f("pk_pipeline_output_usage"),
        ),
    )
    op.create_index(
        "ix_pipeline_output_usage_account_bucket",
        "pipeline_output_usage",
        ["account_id", "bucket_ms"],
    )


def downgrade() -> None:
    op.drop_index("ix_pipeline_output_usage_account_bucket", table_name="pipeline_output_usage")
    op.drop_table("pipeline_output_usage")
