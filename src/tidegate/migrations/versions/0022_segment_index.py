"""log segments: the segment index, Bloom filters of the trigrams of each row group's
folded line and meta, which reads use to skip what cannot hold a search literal
(docs/log-store.md, "The segment index")

Segments registered before this revision have none (null): reads scan them whole, as
before.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("log_segments") as batch:
        batch.add_column(sa.Column("trigram_filters", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("log_segments") as batch:
        batch.drop_column("trigram_filters")
