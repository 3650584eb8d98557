"""log segments: the received time of a segment's youngest line, which retention drops
whole segments by (docs/log-store.md, "Segments")

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 13:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The longest window a setting allows (``segment_window_s`` is at most 7 days): a
# segment written before this revision holds lines received before its window's start
# plus this, the bound retention uses for it (it may go later than exactly due; reads
# leave out its lines past retention meanwhile).
_LONGEST_WINDOW_MS = 7 * 86_400_000


def upgrade() -> None:
    with op.batch_alter_table("log_segments") as batch:
        batch.add_column(
            sa.Column("max_received_ms", sa.BigInteger(), nullable=False, server_default="0")
        )
    op.execute(
        "UPDATE log_segments SET max_received_ms = window_ms + " + str(_LONGEST_WINDOW_MS - 1)
    )
    with op.batch_alter_table("log_segments") as batch:
        batch.alter_column("max_received_ms", server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("log_segments") as batch:
        batch.drop_column("max_received_ms")
