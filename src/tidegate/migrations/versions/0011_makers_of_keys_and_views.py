"""service keys, views and preset alerts record the person who made them (issue 21)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 19:40:00.000000

``made_by`` is the id of the person who made the key (or last changed the view or
preset alert): a key acts with at most that person's current role and group scope, and
a view's alerts send only the lines its maker may see (docs/isolation.md). Null for
rows made before this migration and for rows made by an enterprise key or a key without
a maker: they act as before (owner, every line of the account). No foreign key: a
maker who leaves the account (or is deleted) is found missing at use, which refuses the
key and silences the alerts rather than widening them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("api_keys", "views", "preset_alerts")


def upgrade() -> None:
    # Nullable with no default: neither backend rewrites the tables.
    for name in _TABLES:
        op.add_column(name, sa.Column("made_by", sa.String(length=24), nullable=True))


def downgrade() -> None:
    for name in _TABLES:
        op.execute(f"ALTER TABLE {name} DROP COLUMN made_by")
