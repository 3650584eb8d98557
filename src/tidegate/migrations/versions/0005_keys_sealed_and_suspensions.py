"""keys stored sealed, ingestion suspensions (issue 10, config-rest)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 18:40:00.000000

- ``api_keys.sealed_key``: the v1 keys API returns a key on GET (as the platform and
  its Terraform provider expect), so account keys made from now on are also kept
  sealed under the server secret (Fernet; the secret lives outside the database).
  Keys made before this revision have only their keyed hash: null here, and GET
  answers ``key: null`` for them (docs/api-v1.md).
- ``accounts.ingestion_suspended_at``: set while the account's ingestion is suspended;
  read by the ingestion key lookup in the same query, so no extra round trip.
- ``accounts.suspend_token_hash`` / ``suspend_token_expires_at``: the pending
  suspension's confirmation token (keyed hash only), single use, short-lived.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable columns: a plain ALTER TABLE ADD COLUMN on both backends, no rewrite of
    # existing rows (SQLite adds nullable columns in place).
    op.add_column("api_keys", sa.Column("sealed_key", sa.Text(), nullable=True))
    op.add_column(
        "accounts", sa.Column("ingestion_suspended_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column("accounts", sa.Column("suspend_token_hash", sa.String(64), nullable=True))
    op.add_column(
        "accounts",
        sa.Column("suspend_token_expires_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    with op.batch_alter_table("accounts", schema=None) as batch_op:
        batch_op.drop_column("suspend_token_expires_at")
        batch_op.drop_column("suspend_token_hash")
        batch_op.drop_column("ingestion_suspended_at")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_column("sealed_key")
