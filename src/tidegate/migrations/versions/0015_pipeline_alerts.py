"""pipeline alerts (threshold, absence, change on a pipeline component)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 02:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pipeline_alerts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("pipeline_id", sa.String(length=36), nullable=False),
        sa.Column("component_kind", sa.String(length=20), nullable=False),
        sa.Column("component_id", sa.String(length=36), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("general", sa.JSON(), nullable=False),
        sa.Column("evaluation", sa.JSON(), nullable=False),
        sa.Column("payload_sealed", sa.Text(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_pipeline_alerts_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["pipeline_id"],
            ["pipelines.id"],
            name=op.f("fk_pipeline_alerts_pipeline_id_pipelines"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pipeline_alerts")),
    )
    op.create_index(op.f("ix_pipeline_alerts_account_id"), "pipeline_alerts", ["account_id"])
    op.create_index(op.f("ix_pipeline_alerts_pipeline_id"), "pipeline_alerts", ["pipeline_id"])


def downgrade() -> None:
    op.drop_table("pipeline_alerts")
