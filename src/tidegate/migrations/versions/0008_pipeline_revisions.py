"""pipeline drafts and published revisions, generation ids (issue 9)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 18:40:00.000000

- ``pipelines``: ``generation_id``, ``published_revision``, ``published_at``,
  ``origin``, ``deploy_type``, ``deployment_groups``.
- ``pipeline_nodes`` (the draft): ``description``, ``generation_id``.
- ``published_pipeline_nodes``: the nodes the data plane runs, copied from the draft
  by ``POST /v3/pipeline/{id}/publish``.
- ``gateway_routes``: ``description``, ``type``, ``consumer_id``.
- ``pipeline_usage``: ingress/egress events and bytes per component per minute.

Pipelines that exist when this runs were running (before this revision every save
took effect at once): they are published as they stand, so they keep running
unchanged (docs/api-pipelines.md, "Draft and published revision").
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("pipelines", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("generation_id", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.add_column(sa.Column("published_revision", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("published_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("origin", sa.String(length=50), nullable=True))
        batch_op.add_column(sa.Column("deploy_type", sa.String(length=50), nullable=True))
        batch_op.add_column(sa.Column("deployment_groups", sa.JSON(), nullable=True))
    with op.batch_alter_table("pipeline_nodes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("description", sa.String(length=1000), nullable=True))
        batch_op.add_column(
            sa.Column("generation_id", sa.Integer(), nullable=False, server_default="0")
        )
    with op.batch_alter_table("gateway_routes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("description", sa.String(length=1000), nullable=True))
        batch_op.add_column(
            sa.Column("type", sa.String(length=50), nullable=False, server_default="http")
        )
        batch_op.add_column(sa.Column("consumer_id", sa.String(length=250), nullable=True))

    op.create_table(
        "published_pipeline_nodes",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("pipeline_id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("type", sa.String(length=50), nullable=False),
        sa.Column("title", sa.String(length=250), nullable=True),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("user_config", sa.JSON(), nullable=False),
        sa.Column("gateway_route_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_published_pipeline_nodes_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["gateway_route_id"],
            ["gateway_routes.id"],
            name=op.f("fk_published_pipeline_nodes_gateway_route_id_gateway_routes"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["pipeline_id"],
            ["pipelines.id"],
            name=op.f("fk_published_pipeline_nodes_pipeline_id_pipelines"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_published_pipeline_nodes")),
    )
    with op.batch_alter_table("published_pipeline_nodes", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_published_pipeline_nodes_account_id"), ["account_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_published_pipeline_nodes_gateway_route_id"),
            ["gateway_route_id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_published_pipeline_nodes_pipeline_id"), ["pipeline_id"], unique=False
        )

    op.create_table(
        "pipeline_usage",
        sa.Column("pipeline_id", sa.String(length=36), nullable=False),
        sa.Column("component_id", sa.String(length=36), nullable=False),
        sa.Column("bucket_ms", sa.BigInteger(), nullable=False),
        sa.Column("account_id", sa.String(length=24), nullable=False),
        sa.Column("ingress_events", sa.BigInteger(), nullable=False),
        sa.Column("ingress_bytes", sa.BigInteger(), nullable=False),
        sa.Column("egress_events", sa.BigInteger(), nullable=False),
        sa.Column("egress_bytes", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_pipeline_usage_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "pipeline_id", "component_id", "bucket_ms", name=op.f("pk_pipeline_usage")
        ),
    )
    with op.batch_alter_table("pipeline_usage", schema=None) as batch_op:
        batch_op.create_index(
            "ix_pipeline_usage_account_bucket", ["account_id", "bucket_ms"], unique=False
        )

    # Publish every existing pipeline as it stands: it was running, it keeps running.
    op.execute(
        "INSERT INTO published_pipeline_nodes (id, pipeline_id, account_id, kind, type, title,"
        " inputs, user_config, gateway_route_id, created_at)"
        " SELECT id, pipeline_id, account_id, kind, type, title, inputs, user_config,"
        " gateway_route_id, created_at FROM pipeline_nodes"
    )
    op.execute("UPDATE pipelines SET published_revision = revision, published_at = updated_at")


def downgrade() -> None:
    with op.batch_alter_table("pipeline_usage", schema=None) as batch_op:
        batch_op.drop_index("ix_pipeline_usage_account_bucket")
    op.drop_table("pipeline_usage")
    with op.batch_alter_table("published_pipeline_nodes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_published_pipeline_nodes_pipeline_id"))
        batch_op.drop_index(batch_op.f("ix_published_pipeline_nodes_gateway_route_id"))
        batch_op.drop_index(batch_op.f("ix_published_pipeline_nodes_account_id"))
    op.drop_table("published_pipeline_nodes")
    with op.batch_alter_table("gateway_routes", schema=None) as batch_op:
        batch_op.drop_column("consumer_id")
        batch_op.drop_column("type")
        batch_op.drop_column("description")
    with op.batch_alter_table("pipeline_nodes", schema=None) as batch_op:
        batch_op.drop_column("generation_id")
        batch_op.drop_column("description")
    with op.batch_alter_table("pipelines", schema=None) as batch_op:
        batch_op.drop_column("deployment_groups")
        batch_op.drop_column("deploy_type")
        batch_op.drop_column("origin")
        batch_op.drop_column("published_at")
        batch_op.drop_column("published_revision")
        batch_op.drop_column("generation_id")
