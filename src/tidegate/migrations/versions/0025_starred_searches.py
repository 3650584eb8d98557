"""user_preferences.starred: the searches a person starred in the web app's history
(docs/web.md, "Preferences"), kept until unstarred, apart from the latest 50 queries.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-06 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("user_preferences") as batch:
        batch.add_column(
            sa.Column("starred", sa.JSON(), nullable=False, server_default=sa.text("'[]'"))
        )


def downgrade() -> None:
    with op.batch_alter_table("user_preferences") as batch:
        batch.drop_column("starred")
