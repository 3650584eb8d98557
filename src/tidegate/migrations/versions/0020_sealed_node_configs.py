"""pipeline nodes: user_config sealed at rest (docs/api-pipelines.md, "Node
configurations are sealed"): ``user_config`` (JSON) becomes ``user_config_sealed``
(Fernet under the server secret) in pipeline_nodes and published_pipeline_nodes

The server secret lives outside the database and migrations import nothing from the
app, so ``db.migrate`` hands the sealing function over in
``config.attributes["seal"]`` (``str -> str``; ``"open"`` for the downgrade). Without it
a database that holds nodes is not migrated: the migration stops with a clear error
(run ``tidegate db upgrade`` or ``tidegate serve``, which pass it) rather than leave a
configuration in clear text or lose one. An empty database needs no secret.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02 10:00:00.000000
"""

import json
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import context, op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("pipeline_nodes", "published_pipeline_nodes")


def _given(name: str, column: str) -> Callable[[str], Any] | None:
    """The function handed over as ``name``; checked before any change to the schema
    (SQLite's DDL is not undone by a rollback)."""
    function = context.config.attributes.get(name)
    rows = sum(
        op.get_bind().execute(sa.text(f"SELECT count({column}) FROM {table}")).scalar_one()
        for table in _TABLES
    )
    if function is None and rows:
        raise RuntimeError(
            "migration 0020 seals pipeline node configurations under the server secret: "
            "run it with `tidegate db upgrade` (or `tidegate serve`), which pass the secret"
        )
    return function


def _node_table(name: str) -> sa.TableClause:
    return sa.table(
        name,
        sa.column("id", sa.String()),
        sa.column("user_config", sa.JSON()),
        sa.column("user_config_sealed", sa.Text()),
    )


def upgrade() -> None:
    connection = op.get_bind()
    seal = _given("seal", "user_config")
    for name in _TABLES:
        with op.batch_alter_table(name) as batch:
            batch.add_column(sa.Column("user_config_sealed", sa.Text(), nullable=True))
        table = _node_table(name)
        rows = connection.execute(sa.select(table.c.id, table.c.user_config)).all()
        for row_id, config in rows:
            assert seal is not None
            plain = json.dumps(config if isinstance(config, dict) else {}, separators=(",", ":"))
            connection.execute(
                table.update().where(table.c.id == row_id).values(user_config_sealed=seal(plain))
            )
        with op.batch_alter_table(name) as batch:
            batch.alter_column("user_config_sealed", existing_type=sa.Text(), nullable=False)
            batch.drop_column("user_config")


def downgrade() -> None:
    connection = op.get_bind()
    open_ = _given("open", "user_config_sealed")
    for name in _TABLES:
        with op.batch_alter_table(name) as batch:
            batch.add_column(sa.Column("user_config", sa.JSON(), nullable=True))
        table = _node_table(name)
        rows = connection.execute(sa.select(table.c.id, table.c.user_config_sealed)).all()
        for row_id, sealed in rows:
            assert open_ is not None
            plain = open_(sealed)
            if plain is None:
                raise RuntimeError(f"pipeline node {row_id}: cannot open its configuration")
            connection.execute(
                table.update().where(table.c.id == row_id).values(user_config=json.loads(plain))
            )
        with op.batch_alter_table(name) as batch:
            batch.alter_column("user_config", existing_type=sa.JSON(), nullable=False)
            batch.drop_column("user_config_sealed")
