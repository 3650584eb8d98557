"""log store: the rule the search index's texts were made by (docs/log-store.md,
"The search text"), beside the Unicode version they were folded under

Rule 1 is the line and its meta JSON text; rule 2 leaves the meta out when the line's
text holds it. A store that holds lines was indexed by rule 1 and is recorded so: the
server's upkeep after the migrations (``logs.search_index.refresh_if_stale``) rebuilds
a SQLite index made by another rule than its own (a delete recomputes each entry by the
rule). A store without lines has nothing indexed: it is recorded as rule 2, this
revision's, so that a new database is not rebuilt.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("log_store_state") as batch:
        batch.add_column(
            sa.Column("search_text_version", sa.Integer(), nullable=False, server_default="1")
        )
    empty = op.get_bind().execute(sa.text("SELECT id FROM log_lines LIMIT 1")).first() is None
    if empty:
        op.execute("UPDATE log_store_state SET search_text_version = 2")
    with op.batch_alter_table("log_store_state") as batch:
        batch.alter_column("search_text_version", server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("log_store_state") as batch:
        batch.drop_column("search_text_version")
