"""an account's custom parsing templates

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 02:00:00.000000

Ordered, active / inactive / draft; applied at ingestion before the built-in parsers
(docs/line-parsing.md, "Custom templates").
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "parsing_templates",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("name", sa.String(length=250), nullable=False),
        sa.Column("pattern", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("activated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_parsing_templates_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_parsing_templates")),
    )
    with op.batch_alter_table("parsing_templates", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_parsing_templates_account_id"), ["account_id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("parsing_templates")
