"""Gateway route rules: routes, their access keys and signing keys. No HTTP here.

Access keys are stored as a keyed hash (shown once, when made). Signing keys must stay
usable for HMAC verification, so they are sealed under the server secret (which lives
outside the database) and identified by a keyed fingerprint; no answer ever carries one.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.secrets import Sealer, hash_secret, hint, new_access_key, same_secret
from tidegate.db.engine import Database
from tidegate.errors import Conflict, ErrorItem, NotFound, ServiceUnavailable
from tidegate.models import AccessKey, GatewayRoute, PipelineNode, SigningKey
from tidegate.models.base import new_uuid, utcnow
from tidegate.pipelines import gateway_schemas as schemas
from tidegate.pipelines import repository
from tidegate.pipelines.service import same_id

log = logging.getLogger("tidegate.pipelines")

ACCESS_KEY_DOMAIN: Final = "tidegate:access-key"
MAX_ROUTES_PER_ACCOUNT: Final = 1_000
MAX_ACCESS_KEYS_PER_ROUTE: Final = 50
MAX_SIGNING_KEYS_PER_ROUTE: Final = 20
FINGERPRINT_SHOWN: Final = 12


# Shapes


def route_data(route: GatewayRoute | Any, sources: list[tuple[str, str]]) -> dict[str, Any]:
    """The gateway route's document as plain data (api/raw_json.py), from the ORM object
    or a raw record (``repository.gateway_route_records``); ``sources``: (pipeline id,
    node id) of each HTTP source bound to it, in order."""
    return {
        "id": route.id,
        "account_id": route.account_id,
        "consumer_id": route.consumer_id or "",
        "title": route.title,
        "description": route.description,
        "type": route.type,
        "sources": [
            {"pipeline_id": pipeline_id, "source_id": source_id}
            for pipeline_id, source_id in sources
        ],
        "created_at": route.created_at,
        "updated_at": route.updated_at,
    }


def route_schema(route: GatewayRoute, sources: list[PipelineNode]) -> schemas.GatewayRoute:
    return schemas.GatewayRoute(
        **route_data(route, [(node.pipeline_id, node.id) for node in sources])
    )


def access_key_data(key: AccessKey | Any) -> dict[str, Any]:
    """The access key's document (no secret) as plain data, from the ORM object or a raw
    record (``repository.route_key_records``)."""
    return {
        "id": key.id,
        "account_id": key.account_id,
        "title": key.title,
        "gateway_route_id": key.gateway_route_id,
        "hint": key.hint,
        "created_at": key.created_at,
    }


def access_key_schema(key: AccessKey) -> schemas.AccessKey:
    return schemas.AccessKey(**access_key_data(key))


def signing_key_data(key: SigningKey | Any) -> dict[str, Any]:
    """The signing key's document (a short fingerprint, no key) as plain data, from the
    ORM object or a raw record (``repository.route_key_records``)."""
    return {
        "id": key.id,
        "account_id": key.account_id,
        "gateway_route_id": key.gateway_route_id,
        "fingerprint": key.fingerprint[:FINGERPRINT_SHOWN],
        "created_at": key.created_at,
    }


def signing_key_schema(key: SigningKey) -> schemas.SigningKey:
    return schemas.SigningKey(**signing_key_data(key))


# Routes


async def _own_route(
    *, session: AsyncSession, account_id: str, gateway_route_id: str, for_update: bool = False
) -> GatewayRoute:
    route = await repository.gateway_route(
        session=session,
        account_id=account_id,
        gateway_route_id=gateway_route_id,
        for_update=for_update,
    )
    if route is None:
        raise NotFound(f"No gateway route {gateway_route_id}")
    return route


async def _with_sources(*, session: AsyncSession, route: GatewayRoute) -> schemas.GatewayRoute:
    sources = await repository.sources_bound_to(session=session, gateway_route_id=route.id)
    return route_schema(route, sources)


async def list_routes(*, db: Database, account_id: str) -> list[dict[str, Any]]:
    """The account's gateway routes as plain data, from one raw read."""
    return [
        route_data(route, sources)
        for route, sources in await repository.gateway_route_records(db=db, account_id=account_id)
    ]


async def read_route(*, db: Database, account_id: str, gateway_route_id: str) -> dict[str, Any]:
    """The gateway route's document as plain data, from one raw read; another
    account's route, or none, is the same 404."""
    found = await repository.gateway_route_record(
        db=db, account_id=account_id, gateway_route_id=gateway_route_id
    )
    if found is None:
        raise NotFound(f"No gateway route {gateway_route_id}")
    return route_data(*found)


async def create_route(
    *, session: AsyncSession, account_id: str, body: schemas.GatewayRouteCreate
) -> schemas.GatewayRoute:
    if await repository.count_gateway_routes(session=session, account_id=account_id) >= (
        MAX_ROUTES_PER_ACCOUNT
    ):
        raise Conflict(f"An account holds at most {MAX_ROUTES_PER_ACCOUNT} gateway routes")
    now = utcnow()
    route = GatewayRoute(
        id=new_uuid(),
        account_id=account_id,
        consumer_id=body.consumer_id or None,
        title=body.title,
        description=body.description,
        type=body.type,
        created_at=now,
        updated_at=now,
    )
    session.add(route)
    await session.flush()
    return route_schema(route, [])


async def replace_route(
    *,
    session: AsyncSession,
    account_id: str,
    gateway_route_id: str,
    body: schemas.GatewayRouteReplace,
) -> schemas.GatewayRoute:
    same_id(body.id, gateway_route_id)
    route = await _own_route(
        session=session, account_id=account_id, gateway_route_id=gateway_route_id
    )
    route.consumer_id = body.consumer_id or None
    route.title = body.title
    route.description = body.description
    route.type = body.type
    route.updated_at = utcnow()
    await session.flush()
    return await _with_sources(session=session, route=route)


async def delete_route(
    *, session: AsyncSession, account_id: str, gateway_route_id: str
) -> schemas.GatewayRoute:
    """Deletes the route with its access and signing keys; refuses (409, naming them)
    while HTTP sources are bound to it."""
    route = await _own_route(
        session=session, account_id=account_id, gateway_route_id=gateway_route_id, for_update=True
    )
    gone = await _with_sources(session=session, route=route)
    running = await repository.published_pipelines_for_route(
        session=session, gateway_route_id=route.id
    )
    if gone.sources or running:
        names = ", ".join(f"{s.source_id} (pipeline {s.pipeline_id})" for s in gone.sources)
        message = (
            f"gateway route {route.id} is the route of source(s) {names}"
            if gone.sources
            else f"gateway route {route.id} feeds the published revision of pipeline(s) "
            f"{', '.join(running)}: publish them without its source first"
        )
        raise Conflict(
            message,
            errors=[
                ErrorItem(
                    keyword="dependents",
                    message=message,
                    params={
                        "sources": [s.model_dump() for s in gone.sources],
                        "published_pipelines": running,
                    },
                )
            ],
        )
    await repository.delete_gateway_route(session=session, gateway_route_id=route.id)
    session.expunge(route)
    return gone


# Access keys


async def _route_keys(
    *, db: Database, account_id: str, gateway_route_id: str, signing: bool
) -> list[Any]:
    """The route's keys as raw records (one read); another account's route, or none, is
    the same 404 as ``_own_route``'s."""
    keys = await repository.route_key_records(
        db=db, account_id=account_id, gateway_route_id=gateway_route_id, signing=signing
    )
    if keys is None:
        raise NotFound(f"No gateway route {gateway_route_id}")
    return keys


async def list_access_keys(
    *, db: Database, account_id: str, gateway_route_id: str
) -> list[dict[str, Any]]:
    """The route's access keys (no secrets) as plain data, from one raw read."""
    keys = await _route_keys(
        db=db, account_id=account_id, gateway_route_id=gateway_route_id, signing=False
    )
    return [access_key_data(key) for key in keys]


async def create_access_key(
    *,
    session: AsyncSession,
    account_id: str,
    gateway_route_id: str,
    body: schemas.AccessKeyCreate,
) -> schemas.AccessKeyCreated:
    """A new generated key; the answer is the only place the key is ever shown."""
    same_id(body.gateway_route_id, gateway_route_id, field="gateway_route_id")
    route = await _own_route(
        session=session, account_id=account_id, gateway_route_id=gateway_route_id, for_update=True
    )
    existing = await repository.access_keys_of(session=session, gateway_route_id=route.id)
    if len(existing) >= MAX_ACCESS_KEYS_PER_ROUTE:
        raise Conflict(f"A gateway route holds at most {MAX_ACCESS_KEYS_PER_ROUTE} access keys")
    secret = new_access_key()
    key = AccessKey(
        id=new_uuid(),
        gateway_route_id=route.id,
        account_id=account_id,
        title=body.title,
        key_hash=hash_secret(secret, domain=ACCESS_KEY_DOMAIN),
        hint=hint(secret),
        created_at=utcnow(),
    )
    session.add(key)
    await session.flush()
    return schemas.AccessKeyCreated(
        key=secret,
        id=key.id,
        account_id=key.account_id,
        title=key.title,
        gateway_route_id=key.gateway_route_id,
        created_at=key.created_at,
    )


async def delete_access_key(
    *, session: AsyncSession, account_id: str, gateway_route_id: str, key_id: str
) -> schemas.AccessKey:
    route = await _own_route(
        session=session, account_id=account_id, gateway_route_id=gateway_route_id
    )
    key = await repository.access_key(session=session, gateway_route_id=route.id, key_id=key_id)
    if key is None:
        raise NotFound(f"No access key {key_id} on this gateway route")
    gone = access_key_schema(key)
    await session.delete(key)
    await session.flush()
    return gone


async def access_key_for_route(
    *, session: AsyncSession, gateway_route_id: str, key: str
) -> AccessKey | None:
    """For the data plane: the access key row when ``key`` is one of the route's keys."""
    key_hash = hash_secret(key, domain=ACCESS_KEY_DOMAIN)
    found = await repository.access_key_by_hash(session=session, key_hash=key_hash)
    if found is None or found.gateway_route_id != gateway_route_id:
        return None
    return found if same_secret(found.key_hash, key_hash) else None


async def route_of_access_key(*, session: AsyncSession, key: str) -> str | None:
    """For a data plane that is given a key and no route (Fluent Forward): the route
    whose access key ``key`` is."""
    key_hash = hash_secret(key, domain=ACCESS_KEY_DOMAIN)
    found = await repository.access_key_by_hash(session=session, key_hash=key_hash)
    if found is None or not same_secret(found.key_hash, key_hash):
        return None
    return found.gateway_route_id


# Signing keys


async def list_signing_keys(
    *, db: Database, account_id: str, gateway_route_id: str
) -> list[dict[str, Any]]:
    """The route's signing keys (no keys) as plain data, from one raw read."""
    keys = await _route_keys(
        db=db, account_id=account_id, gateway_route_id=gateway_route_id, signing=True
    )
    return [signing_key_data(key) for key in keys]


async def add_signing_key(
    *,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    gateway_route_id: str,
    body: schemas.SigningKeyAdd,
) -> tuple[schemas.SigningKey, bool]:
    """Adds a signing key to the route, sealed; ``(key, created)``. Adding a key the
    route already holds changes nothing and answers the existing one."""
    route = await _own_route(
        session=session, account_id=account_id, gateway_route_id=gateway_route_id, for_update=True
    )
    fingerprints = sealer.fingerprints(body.key)
    existing = await repository.signing_key_by_fingerprint(
        session=session, gateway_route_id=route.id, fingerprints=fingerprints
    )
    if existing is not None:
        return signing_key_schema(existing), False
    held = await repository.signing_keys_of(session=session, gateway_route_id=route.id)
    if len(held) >= MAX_SIGNING_KEYS_PER_ROUTE:
        raise Conflict(
            f"A gateway route holds at most {MAX_SIGNING_KEYS_PER_ROUTE} signing keys; "
            "delete one first"
        )
    key = SigningKey(
        id=new_uuid(),
        gateway_route_id=route.id,
        account_id=account_id,
        encrypted_key=sealer.seal(body.key),
        fingerprint=fingerprints[0],
        created_at=utcnow(),
    )
    session.add(key)
    await session.flush()
    return signing_key_schema(key), True


async def delete_signing_key(
    *, session: AsyncSession, account_id: str, gateway_route_id: str, signing_key_id: str
) -> schemas.SigningKey:
    route = await _own_route(
        session=session, account_id=account_id, gateway_route_id=gateway_route_id
    )
    key = await repository.signing_key(
        session=session, gateway_route_id=route.id, signing_key_id=signing_key_id
    )
    if key is None:
        raise NotFound(f"No signing key {signing_key_id} on this gateway route")
    gone = signing_key_schema(key)
    await session.delete(key)
    await session.flush()
    return gone


async def signing_secrets(
    *, session: AsyncSession, sealer: Sealer, gateway_route_id: str
) -> list[bytes]:
    """For the data plane: the route's signing keys as HMAC keys (UTF-8 bytes), oldest
    first. Empty only when the route has none (then no signature is required).

    A key that no longer opens (the server secret changed) is skipped and logged; when
    the route has keys and none opens, this raises ``ServiceUnavailable`` rather than
    answer "no keys", so the route fails closed instead of accepting unsigned events.
    """
    secrets: list[bytes] = []
    rows = await repository.signing_keys_of(session=session, gateway_route_id=gateway_route_id)
    for key in rows:
        opened = sealer.open(key.encrypted_key)
        if opened is None:
            log.error(
                "signing key %s of gateway route %s cannot be opened with this server secret",
                key.id,
                gateway_route_id,
            )
            continue
        secrets.append(opened.encode())
    if rows and not secrets:
        raise ServiceUnavailable("The gateway route's signing keys cannot be read")
    return secrets
