"""users, passwords, sessions, members, groups (issue 11)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 18:40:00.000000

Users become one per e-mail across the server: the per-enterprise owner records of
0001 are merged by e-mail (the oldest row stays, accounts owned by the others point to
it), and every account's owner becomes a member of it with the owner role. Then the
tables of sessions, one-use tokens (invitations, password resets), memberships and
groups. See docs/people.md.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _merge_users_by_email(connection: sa.Connection) -> None:
    rows = connection.execute(
        sa.text("SELECT id, lower(email) FROM users ORDER BY created_at, id")
    ).all()
    kept: dict[str, str] = {}
    for user_id, email in rows:
        survivor = kept.setdefault(email, user_id)
        if survivor != user_id:
            connection.execute(
                sa.text("UPDATE accounts SET owner_id = :survivor WHERE owner_id = :old"),
                {"survivor": survivor, "old": user_id},
            )
            connection.execute(sa.text("DELETE FROM users WHERE id = :old"), {"old": user_id})
    connection.execute(sa.text("UPDATE users SET email = lower(email)"))


def upgrade() -> None:
    connection = op.get_bind()
    _merge_users_by_email(connection)
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_enterprise_id"))
        batch_op.drop_constraint(batch_op.f("uq_users_enterprise_id"), type_="unique")
        batch_op.drop_constraint(
            batch_op.f("fk_users_enterprise_id_enterprises"), type_="foreignkey"
        )
        batch_op.drop_column("enterprise_id")
        batch_op.add_column(sa.Column("password_hash", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("cli_token_sealed", sa.Text(), nullable=True))
        batch_op.create_unique_constraint(batch_op.f("uq_users_email"), ["email"])

    op.create_table(
        "memberships",
        sa.Column("user_id", sa.String(length=24), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_memberships_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_memberships_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("user_id", "account_id", name=op.f("pk_memberships")),
    )
    op.create_index(op.f("ix_memberships_account_id"), "memberships", ["account_id"])
    connection.execute(
        sa.text(
            "INSERT INTO memberships (user_id, account_id, role, created_at) "
            "SELECT owner_id, id, 'owner', created_at FROM accounts"
        )
    )

    op.create_table(
        "groups",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("name", sa.String(length=250), nullable=False),
        sa.Column("description", sa.String(length=1000), nullable=False),
        sa.Column("apps", sa.JSON(), nullable=False),
        sa.Column("hosts", sa.JSON(), nullable=False),
        sa.Column("query", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_groups_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_groups")),
    )
    op.create_index(op.f("ix_groups_account_id"), "groups", ["account_id"])
    op.create_table(
        "group_members",
        sa.Column("group_id", sa.String(length=24), nullable=False),
        sa.Column("user_id", sa.String(length=24), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["groups.id"],
            name=op.f("fk_group_members_group_id_groups"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_group_members_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("group_id", "user_id", name=op.f("pk_group_members")),
    )
    op.create_index(op.f("ix_group_members_user_id"), "group_members", ["user_id"])

    op.create_table(
        "user_sessions",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("csrf_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=24), nullable=True),
        sa.Column("key_id", sa.String(length=24), nullable=True),
        sa.Column("account_id", sa.String(length=24), nullable=True),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_seen_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_sessions_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["key_id"],
            ["api_keys.id"],
            name=op.f("fk_user_sessions_key_id_api_keys"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_user_sessions_account_id_accounts"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_sessions")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_user_sessions_token_hash")),
    )
    op.create_index(op.f("ix_user_sessions_user_id"), "user_sessions", ["user_id"])
    op.create_index(op.f("ix_user_sessions_key_id"), "user_sessions", ["key_id"])
    op.create_index(op.f("ix_user_sessions_expires_ms"), "user_sessions", ["expires_ms"])

    op.create_table(
        "user_tokens",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("user_id", sa.String(length=24), nullable=False),
        sa.Column("purpose", sa.String(length=20), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_tokens_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_user_tokens_token_hash")),
    )
    op.create_index(op.f("ix_user_tokens_user_id"), "user_tokens", ["user_id"])


def downgrade() -> None:
    for table in ("user_tokens", "user_sessions", "group_members", "groups", "memberships"):
        op.drop_table(table)
    # Users go back to one row per enterprise of each account they own (users who own
    # nothing are dropped: the old schema knew only owners).
    connection = op.get_bind()
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_users_email"), type_="unique")
        batch_op.drop_column("cli_token_sealed")
        batch_op.drop_column("password_hash")
        batch_op.add_column(sa.Column("enterprise_id", sa.String(length=24), nullable=True))
    pairs = connection.execute(
        sa.text("SELECT DISTINCT owner_id, enterprise_id FROM accounts ORDER BY owner_id")
    ).all()
    seen: set[str] = set()
    for user_id, enterprise_id in pairs:
        if user_id not in seen:
            seen.add(user_id)
            connection.execute(
                sa.text("UPDATE users SET enterprise_id = :e WHERE id = :u"),
                {"e": enterprise_id, "u": user_id},
            )
            continue
        copy_id = sa.text("SELECT substr(md5(random()::text), 1, 24)")
        new_id = (
            connection.execute(copy_id).scalar()
            if connection.dialect.name == "postgresql"
            else connection.execute(sa.text("SELECT lower(hex(randomblob(12)))")).scalar()
        )
        connection.execute(
            sa.text(
                "INSERT INTO users (id, enterprise_id, email, firstname, lastname, verified, "
                "created_at) SELECT :new, :e, email, firstname, lastname, verified, created_at "
                "FROM users WHERE id = :u"
            ),
            {"new": new_id, "e": enterprise_id, "u": user_id},
        )
        connection.execute(
            sa.text(
                "UPDATE accounts SET owner_id = :new WHERE owner_id = :u AND enterprise_id = :e"
            ),
            {"new": new_id, "e": enterprise_id, "u": user_id},
        )
    connection.execute(sa.text("DELETE FROM users WHERE enterprise_id IS NULL"))
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.alter_column("enterprise_id", nullable=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_users_enterprise_id_enterprises"),
            "enterprises",
            ["enterprise_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch_op.create_unique_constraint(
            batch_op.f("uq_users_enterprise_id"), ["enterprise_id", "email"]
        )
        batch_op.create_index(batch_op.f("ix_users_enterprise_id"), ["enterprise_id"])
