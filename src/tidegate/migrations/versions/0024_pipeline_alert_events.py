"""pipeline_alert_events: the events each worker hands to the one that judges the
pipeline alerts judged on events; that worker's lease (an ``alert_cursors`` row named
``pipeline-events``); pipeline_alert_windows: the windows it saves, which the next
judge starts from (docs/api-pipelines.md, "Alerts on the events themselves").

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-05 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LEASE = "pipeline-events"


def upgrade() -> None:
    op.create_table(
        "pipeline_alert_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("alert_id", sa.String(length=36), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("events", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["alert_id"],
            ["pipeline_alerts.id"],
            name=op.f("fk_pipeline_alert_events_alert_id_pipeline_alerts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pipeline_alert_events")),
    )
    op.create_index(
        op.f("ix_pipeline_alert_events_alert_id"), "pipeline_alert_events", ["alert_id"]
    )
    op.create_table(
        "pipeline_alert_windows",
        sa.Column("alert_id", sa.String(length=36), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("saved_ms", sa.BigInteger(), nullable=False),
        sa.Column("windows", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["alert_id"],
            ["pipeline_alerts.id"],
            name=op.f("fk_pipeline_alert_windows_alert_id_pipeline_alerts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("alert_id", name=op.f("pk_pipeline_alert_windows")),
    )
    cursors = sa.table(
        "alert_cursors",
        sa.column("name", sa.String),
        sa.column("last_line_id", sa.BigInteger),
        sa.column("gaps", sa.JSON),
        sa.column("version", sa.Integer),
        sa.column("lease_owner", sa.String),
        sa.column("lease_until_ms", sa.BigInteger),
        sa.column("evaluated_ms", sa.BigInteger),
        sa.column("extra", sa.JSON),
    )
    op.bulk_insert(
        cursors,
        [
            {
                "name": LEASE,
                "last_line_id": 0,
                "gaps": [],
                "version": 0,
                "lease_owner": None,
                "lease_until_ms": 0,
                "evaluated_ms": 0,
                "extra": {},
            }
        ],
    )


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM alert_cursors WHERE name = :name").bindparams(name=LEASE))
    op.drop_table("pipeline_alert_windows")
    op.drop_index(op.f("ix_pipeline_alert_events_alert_id"), table_name="pipeline_alert_events")
    op.drop_table("pipeline_alert_events")
