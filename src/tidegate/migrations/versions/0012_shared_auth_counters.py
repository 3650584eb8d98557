"""failed sign-in counts and signed-query signatures shared through the database

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 19:55:00.000000

Used only by a server with several workers and no Redis (docs/isolation.md, "Sign-in
limits"): each worker counting on its own multiplied the limit by the worker count and
let a signed query be replayed once per worker.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "auth_counters",
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("last_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key_hash", name=op.f("pk_auth_counters")),
    )
    op.create_index(op.f("ix_auth_counters_expires_ms"), "auth_counters", ["expires_ms"])
    op.create_table(
        "signed_nonces",
        sa.Column("signature", sa.String(length=128), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("signature", name=op.f("pk_signed_nonces")),
    )
    op.create_index(op.f("ix_signed_nonces_expires_ms"), "signed_nonces", ["expires_ms"])


def downgrade() -> None:
    op.drop_table("signed_nonces")
    op.drop_table("auth_counters")
