"""views, preset alerts, channels, categories, alert state and deliveries (issue 10)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 18:40:00.000000

Views (saved searches) and preset alerts hold their alert channels sealed; categories
group views, boards and screens; the alert evaluator's cursor and per-channel window
state, the delivery outbox/log and the index-rate alert (docs/alerts.md). New tables
only, so it runs on a database with data.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = sa.DateTime(timezone=True)


def _account_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["account_id"], ["accounts.id"], name=f"fk_{table}_account_id_accounts", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "alert_cursors",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("last_line_id", sa.BigInteger(), nullable=False),
        sa.Column("gaps", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_until_ms", sa.BigInteger(), nullable=False),
        sa.Column("evaluated_ms", sa.BigInteger(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_alert_cursors"),
    )
    op.create_table(
        "categories",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=250), nullable=False),
        sa.Column("name_folded", sa.String(length=250), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        _account_fk("categories"),
        sa.PrimaryKeyConstraint("id", name="pk_categories"),
        sa.UniqueConstraint("account_id", "type", "name_folded", name="uq_categories_account_id"),
    )
    op.create_index("ix_categories_account_id", "categories", ["account_id"])
    op.create_table(
        "index_rate_alerts",
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("config_sealed", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        _account_fk("index_rate_alerts"),
        sa.PrimaryKeyConstraint("account_id", name="pk_index_rate_alerts"),
    )
    op.create_index("ix_index_rate_alerts_enabled", "index_rate_alerts", ["enabled"])
    op.create_table(
        "preset_alerts",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("name", sa.String(length=250), nullable=False),
        sa.Column("channels_sealed", sa.Text(), nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        _account_fk("preset_alerts"),
        sa.PrimaryKeyConstraint("id", name="pk_preset_alerts"),
    )
    op.create_index("ix_preset_alerts_account_id", "preset_alerts", ["account_id"])
    op.create_table(
        "views",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("name", sa.String(length=250), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("apps", sa.JSON(), nullable=False),
        sa.Column("hosts", sa.JSON(), nullable=False),
        sa.Column("levels", sa.JSON(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("category", sa.JSON(), nullable=False),
        sa.Column("preset_id", sa.String(length=24), nullable=True),
        sa.Column("channels_sealed", sa.Text(), nullable=True),
        sa.Column("alerting", sa.Boolean(), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        _account_fk("views"),
        sa.ForeignKeyConstraint(
            ["preset_id"],
            ["preset_alerts.id"],
            name="fk_views_preset_id_preset_alerts",
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_views"),
    )
    op.create_index("ix_views_account_id", "views", ["account_id"])
    op.create_index("ix_views_alerting", "views", ["alerting"])
    op.create_index("ix_views_preset_id", "views", ["preset_id"])
    op.create_table(
        "alert_deliveries",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("view_id", sa.String(length=24), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("channel_key", sa.String(length=64), nullable=False),
        sa.Column("integration", sa.String(length=16), nullable=False),
        sa.Column("channel_sealed", sa.Text(), nullable=False),
        sa.Column("event", sa.String(length=16), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("fired_ms", sa.BigInteger(), nullable=False),
        sa.Column("next_attempt_ms", sa.BigInteger(), nullable=False),
        sa.Column("claimed_by", sa.String(length=64), nullable=True),
        sa.Column("claimed_until_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("finished_ms", sa.BigInteger(), nullable=True),
        _account_fk("alert_deliveries"),
        sa.ForeignKeyConstraint(
            ["view_id"], ["views.id"], name="fk_alert_deliveries_view_id_views", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_alert_deliveries"),
    )
    op.create_index("ix_alert_deliveries_account_id", "alert_deliveries", ["account_id"])
    op.create_index("ix_alert_deliveries_due", "alert_deliveries", ["status", "next_attempt_ms"])
    op.create_index("ix_alert_deliveries_view", "alert_deliveries", ["view_id", "fired_ms"])
    op.create_table(
        "alert_states",
        sa.Column("view_id", sa.String(length=24), nullable=False),
        sa.Column("channel_key", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        _account_fk("alert_states"),
        sa.ForeignKeyConstraint(
            ["view_id"], ["views.id"], name="fk_alert_states_view_id_views", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("view_id", "channel_key", name="pk_alert_states"),
    )
    op.create_index("ix_alert_states_account_id", "alert_states", ["account_id"])


def downgrade() -> None:
    for table in (
        "alert_states",
        "alert_deliveries",
        "views",
        "preset_alerts",
        "index_rate_alerts",
        "categories",
        "alert_cursors",
    ):
        op.drop_table(table)
