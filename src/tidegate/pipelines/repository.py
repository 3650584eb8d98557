"""Pipeline, node, gateway route, access key and signing key queries. Every lookup of a
client-named resource is scoped to the account, so another account's resource is
simply not found."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database, RawQuery, account_row, account_rows
from tidegate.models import (
    AccessKey,
    GatewayRoute,
    Pipeline,
    PipelineNode,
    PublishedPipelineNode,
    SigningKey,
)

# Pipelines


async def pipeline(
    *, session: AsyncSession, account_id: str, pipeline_id: str, for_update: bool = False
) -> Pipeline | None:
    """``for_update`` locks the row (PostgreSQL), so that two concurrent node saves of
    one pipeline are checked against each other's graph; SQLite writers are serialised
    by BEGIN IMMEDIATE already."""
    query = select(Pipeline).where(Pipeline.id == pipeline_id, Pipeline.account_id == account_id)
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


_PIPELINES_OF = account_rows(Pipeline)
_PIPELINE_OF = account_row(Pipeline)
# What service.node_data builds a node's document from, the draft's nodes in order.
_NODE_COLUMNS = tuple(
    PipelineNode.__table__.c[name]
    for name in ("id", "pipeline_id", "kind", "type", "title", "description", "generation_id",
                 "inputs", "user_config_sealed", "gateway_route_id", "created_at", "updated_at")
)  # fmt: skip
_NODES_OF = RawQuery(
    select(*_NODE_COLUMNS)
    .where(PipelineNode.pipeline_id == bindparam("pipeline_id"))
    .order_by(PipelineNode.created_at, PipelineNode.id)
)
# The account's pipeline joined (outer) to its nodes of a kind, in that order: no row
# when the pipeline is not the account's, one row of nulls when it has no such node.
_KIND_NODES_OF = RawQuery(
    select(*_NODE_COLUMNS)
    .select_from(Pipeline)
    .outerjoin(
        PipelineNode,
        (PipelineNode.pipeline_id == Pipeline.id) & (PipelineNode.kind == bindparam("kind")),
    )
    .where(Pipeline.id == bindparam("pipeline_id"), Pipeline.account_id == bindparam("account_id"))
    .order_by(PipelineNode.created_at, PipelineNode.id)
)


async def pipelines_of(*, db: Database, account_id: str) -> list[Any]:
    """The account's pipelines, oldest first, as raw records (Database.fetch_records)."""
    return await db.fetch_records(_PIPELINES_OF, {"account_id": account_id})


async def pipeline_record(*, db: Database, account_id: str, item_id: str) -> Any:
    """The account's pipeline ``item_id`` as a raw record (every column), or None."""
    rows = await db.fetch_records(_PIPELINE_OF, {"account_id": account_id, "id": item_id})
    return rows[0] if rows else None


async def node_records(*, db: Database, pipeline_id: str) -> list[Any]:
    """The pipeline's draft nodes as raw records, in ``nodes_of``'s order."""
    return await db.fetch_records(_NODES_OF, {"pipeline_id": pipeline_id})


async def kind_node_records(
    *, db: Database, account_id: str, pipeline_id: str, kind: str
) -> list[Any] | None:
    """The account's pipeline's draft nodes of ``kind`` as raw records in ``nodes_of``'s
    order, or None when the pipeline is not the account's: one read."""
    params = {"account_id": account_id, "pipeline_id": pipeline_id, "kind": kind}
    rows = await db.fetch_records(_KIND_NODES_OF, params)
    return [row for row in rows if row.id is not None] if rows else None


async def count_pipelines(*, session: AsyncSession, account_id: str) -> int:
    result = await session.execute(
        select(func.count()).select_from(Pipeline).where(Pipeline.account_id == account_id)
    )
    return int(result.scalar_one())


async def pipeline_by_id(*, session: AsyncSession, pipeline_id: str) -> Pipeline | None:
    """Unscoped: for the data plane, which starts from a gateway route, not an account."""
    return await session.get(Pipeline, pipeline_id)


async def delete_pipeline(*, session: AsyncSession, pipeline_id: str) -> None:
    """The pipeline and its nodes, children first (no ORM relationship orders them)."""
    await session.execute(delete(PipelineNode).where(PipelineNode.pipeline_id == pipeline_id))
    await session.execute(
        delete(PublishedPipelineNode).where(PublishedPipelineNode.pipeline_id == pipeline_id)
    )
    await session.execute(delete(Pipeline).where(Pipeline.id == pipeline_id))


# Nodes


async def nodes_of(*, session: AsyncSession, pipeline_id: str) -> list[PipelineNode]:
    result = await session.execute(
        select(PipelineNode)
        .where(PipelineNode.pipeline_id == pipeline_id)
        .order_by(PipelineNode.created_at, PipelineNode.id)
    )
    return list(result.scalars())


async def sources_bound_to(*, session: AsyncSession, gateway_route_id: str) -> list[PipelineNode]:
    result = await session.execute(
        select(PipelineNode)
        .where(
            PipelineNode.gateway_route_id == gateway_route_id,
            PipelineNode.kind == "source",
        )
        .order_by(PipelineNode.created_at, PipelineNode.id)
    )
    return list(result.scalars())


# The published revision (what runs)


async def published_nodes_of(
    *, session: AsyncSession, pipeline_id: str
) -> list[PublishedPipelineNode]:
    result = await session.execute(
        select(PublishedPipelineNode)
        .where(PublishedPipelineNode.pipeline_id == pipeline_id)
        .order_by(PublishedPipelineNode.created_at, PublishedPipelineNode.id)
    )
    return list(result.scalars())


async def replace_published_nodes(
    *, session: AsyncSession, pipeline_id: str, nodes: list[PublishedPipelineNode]
) -> None:
    await session.execute(
        delete(PublishedPipelineNode).where(PublishedPipelineNode.pipeline_id == pipeline_id)
    )
    session.add_all(nodes)
    await session.flush()


async def published_pipelines_for_route(
    *, session: AsyncSession, gateway_route_id: str
) -> list[str]:
    """Ids of the pipelines whose published revision has a source bound to the route,
    oldest source first."""
    result = await session.execute(
        select(PublishedPipelineNode.pipeline_id)
        .where(
            PublishedPipelineNode.gateway_route_id == gateway_route_id,
            PublishedPipelineNode.kind == "source",
        )
        .order_by(PublishedPipelineNode.created_at, PublishedPipelineNode.id)
    )
    return list(dict.fromkeys(result.scalars()))


async def pipeline_revisions_for_route(
    *, session: AsyncSession, gateway_route_id: str
) -> dict[str, int]:
    """``{pipeline_id: published revision}`` of the pipelines the route feeds."""
    result = await session.execute(
        select(Pipeline.id, Pipeline.published_revision)
        .join(PublishedPipelineNode, PublishedPipelineNode.pipeline_id == Pipeline.id)
        .where(
            PublishedPipelineNode.gateway_route_id == gateway_route_id,
            PublishedPipelineNode.kind == "source",
            Pipeline.published_revision.is_not(None),
        )
        .distinct()
    )
    return {row[0]: int(row[1] or 0) for row in result}


async def pipeline_revisions_with_source(
    *, session: AsyncSession, account_id: str, source_type: str | tuple[str, ...]
) -> dict[str, int]:
    """``source_type``: a type, or its names (a type and its aliases)."""
    types = (source_type,) if isinstance(source_type, str) else source_type
    result = await session.execute(
        select(Pipeline.id, Pipeline.revision)
        .join(PipelineNode, PipelineNode.pipeline_id == Pipeline.id)
        .where(
            Pipeline.account_id == account_id,
            PipelineNode.kind == "source",
            PipelineNode.type.in_(types),
        )
        .distinct()
    )
    return {row[0]: int(row[1]) for row in result}


# Gateway routes


async def gateway_route(
    *,
    session: AsyncSession,
    account_id: str,
    gateway_route_id: str,
    for_update: bool = False,
) -> GatewayRoute | None:
    query = select(GatewayRoute).where(
        GatewayRoute.id == gateway_route_id, GatewayRoute.account_id == account_id
    )
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def delete_gateway_route(*, session: AsyncSession, gateway_route_id: str) -> None:
    """The route with its access and signing keys, children first."""
    await session.execute(delete(AccessKey).where(AccessKey.gateway_route_id == gateway_route_id))
    await session.execute(delete(SigningKey).where(SigningKey.gateway_route_id == gateway_route_id))
    await session.execute(delete(GatewayRoute).where(GatewayRoute.id == gateway_route_id))


async def gateway_route_by_id(
    *, session: AsyncSession, gateway_route_id: str
) -> GatewayRoute | None:
    """Unscoped: for the data plane, where the route id comes from the URL."""
    return await session.get(GatewayRoute, gateway_route_id)


async def gateway_routes_of(*, session: AsyncSession, account_id: str) -> list[GatewayRoute]:
    result = await session.execute(
        select(GatewayRoute)
        .where(GatewayRoute.account_id == account_id)
        .order_by(GatewayRoute.created_at, GatewayRoute.id)
    )
    return list(result.scalars())


# The account's gateway routes, oldest first, each joined (outer) to the HTTP sources
# bound to it in their order: a row per route and source, so one read answers the list
# (as ``gateway_routes_of`` and ``sources_by_route`` do in two) or the get.
_ROUTES_WITH_SOURCES = (
    select(
        GatewayRoute.id,
        GatewayRoute.account_id,
        GatewayRoute.consumer_id,
        GatewayRoute.title,
        GatewayRoute.description,
        GatewayRoute.type,
        GatewayRoute.created_at,
        GatewayRoute.updated_at,
        PipelineNode.pipeline_id.label("source_pipeline_id"),
        PipelineNode.id.label("source_id"),
    )
    .select_from(GatewayRoute)
    .outerjoin(
        PipelineNode,
        (PipelineNode.gateway_route_id == GatewayRoute.id) & (PipelineNode.kind == "source"),
    )
    .where(GatewayRoute.account_id == bindparam("account_id"))
    .order_by(GatewayRoute.created_at, GatewayRoute.id, PipelineNode.created_at, PipelineNode.id)
)
_ROUTES = RawQuery(_ROUTES_WITH_SOURCES)
_ROUTE = RawQuery(_ROUTES_WITH_SOURCES.where(GatewayRoute.id == bindparam("id")))


def _routes(rows: list[Any]) -> list[tuple[Any, list[tuple[str, str]]]]:
    """Rows of ``_ROUTES_WITH_SOURCES`` folded: each route (a record whose source
    columns are not to be read) with its sources' (pipeline id, node id) in order."""
    found: list[tuple[Any, list[tuple[str, str]]]] = []
    for row in rows:
        if not found or found[-1][0].id != row.id:
            found.append((row, []))
        if row.source_id is not None:
            found[-1][1].append((row.source_pipeline_id, row.source_id))
    return found


async def gateway_route_records(
    *, db: Database, account_id: str
) -> list[tuple[Any, list[tuple[str, str]]]]:
    """The account's gateway routes, oldest first, each with its sources: one read."""
    return _routes(await db.fetch_records(_ROUTES, {"account_id": account_id}))


async def gateway_route_record(
    *, db: Database, account_id: str, gateway_route_id: str
) -> tuple[Any, list[tuple[str, str]]] | None:
    """The account's gateway route with its sources, or None: one read."""
    params = {"account_id": account_id, "id": gateway_route_id}
    found = _routes(await db.fetch_records(_ROUTE, params))
    return found[0] if found else None


# A route's keys of one table: the account's route joined (outer) to its keys, oldest
# first, as ``access_keys_of``/``signing_keys_of`` order them: no row when the route is
# not the account's, one row of nulls when it holds no key.
def _route_keys(model: Any, *columns: str) -> RawQuery:
    return RawQuery(
        select(*(model.__table__.c[name] for name in columns))
        .select_from(GatewayRoute)
        .outerjoin(model, model.gateway_route_id == GatewayRoute.id)
        .where(
            GatewayRoute.id == bindparam("gateway_route_id"),
            GatewayRoute.account_id == bindparam("account_id"),
        )
        .order_by(model.created_at, model.id)
    )


_ROUTE_ACCESS_KEYS = _route_keys(
    AccessKey, "id", "account_id", "title", "gateway_route_id", "hint", "created_at"
)
_ROUTE_SIGNING_KEYS = _route_keys(
    SigningKey, "id", "account_id", "gateway_route_id", "fingerprint", "created_at"
)


async def route_key_records(
    *, db: Database, account_id: str, gateway_route_id: str, signing: bool
) -> list[Any] | None:
    """The account's gateway route's access keys (or signing keys, ``signing``) as raw
    records, oldest first, or None when the route is not the account's: one read."""
    query = _ROUTE_SIGNING_KEYS if signing else _ROUTE_ACCESS_KEYS
    params = {"account_id": account_id, "gateway_route_id": gateway_route_id}
    rows = await db.fetch_records(query, params)
    return [row for row in rows if row.id is not None] if rows else None


async def count_gateway_routes(*, session: AsyncSession, account_id: str) -> int:
    result = await session.execute(
        select(func.count()).select_from(GatewayRoute).where(GatewayRoute.account_id == account_id)
    )
    return int(result.scalar_one())


async def sources_by_route(
    *, session: AsyncSession, gateway_route_ids: list[str]
) -> dict[str, list[PipelineNode]]:
    found: dict[str, list[PipelineNode]] = {route_id: [] for route_id in gateway_route_ids}
    if not gateway_route_ids:
        return found
    result = await session.execute(
        select(PipelineNode)
        .where(
            PipelineNode.gateway_route_id.in_(gateway_route_ids),
            PipelineNode.kind == "source",
        )
        .order_by(PipelineNode.created_at, PipelineNode.id)
    )
    for node in result.scalars():
        if node.gateway_route_id is not None:
            found[node.gateway_route_id].append(node)
    return found


# Access keys


async def access_keys_of(*, session: AsyncSession, gateway_route_id: str) -> list[AccessKey]:
    result = await session.execute(
        select(AccessKey)
        .where(AccessKey.gateway_route_id == gateway_route_id)
        .order_by(AccessKey.created_at, AccessKey.id)
    )
    return list(result.scalars())


async def access_key(
    *, session: AsyncSession, gateway_route_id: str, key_id: str
) -> AccessKey | None:
    result = await session.execute(
        select(AccessKey).where(
            AccessKey.id == key_id, AccessKey.gateway_route_id == gateway_route_id
        )
    )
    return result.scalar_one_or_none()


async def access_key_by_hash(*, session: AsyncSession, key_hash: str) -> AccessKey | None:
    result = await session.execute(select(AccessKey).where(AccessKey.key_hash == key_hash))
    return result.scalar_one_or_none()


# Signing keys


async def signing_keys_of(*, session: AsyncSession, gateway_route_id: str) -> list[SigningKey]:
    result = await session.execute(
        select(SigningKey)
        .where(SigningKey.gateway_route_id == gateway_route_id)
        .order_by(SigningKey.created_at, SigningKey.id)
    )
    return list(result.scalars())


async def signing_key(
    *, session: AsyncSession, gateway_route_id: str, signing_key_id: str
) -> SigningKey | None:
    result = await session.execute(
        select(SigningKey).where(
            SigningKey.id == signing_key_id, SigningKey.gateway_route_id == gateway_route_id
        )
    )
    return result.scalar_one_or_none()


async def signing_key_by_fingerprint(
    *, session: AsyncSession, gateway_route_id: str, fingerprints: list[str]
) -> SigningKey | None:
    """The route's key with one of ``fingerprints`` (the same secret's fingerprint
    under the current server secret and the previous ones)."""
    result = await session.execute(
        select(SigningKey).where(
            SigningKey.gateway_route_id == gateway_route_id,
            SigningKey.fingerprint.in_(fingerprints),
        )
    )
    return result.scalars().first()
