"""Account keys: service keys (management API) and ingestion keys. No HTTP here.

Secrets are generated here. Each is stored as a keyed hash (what lookups use; each
kind under its own domain, so an ingestion key can never pass as a management
credential, and the reverse) and sealed under the server secret, because the platform's
v1 keys API shows a key again on GET and its Terraform provider reads it from there.
The database alone reveals neither.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.roles import Role
from tidegate.auth.secrets import (
    INGESTION_DOMAIN,
    MANAGEMENT_DOMAIN,
    Sealer,
    hash_secret,
    hint,
    new_ingestion_key,
    new_service_key,
)
from tidegate.clock import epoch_ms_of
from tidegate.db.engine import Database
from tidegate.errors import NotFound
from tidegate.keys import repository, schemas
from tidegate.models import ApiKey
from tidegate.models.base import utcnow


def _name(raw: str | None) -> str | None:
    return raw or None


def created_ms(key: ApiKey) -> int:
    return epoch_ms_of(key.created_at)


def key_data(key: ApiKey, *, sealer: Sealer, shown: bool = True) -> dict[str, Any]:
    """The key's document as plain data (api/raw_json.py), from the ORM object or a raw
    record. The secret is opened through the sealer's cache of stored values
    (``Sealer.open_stored``)."""
    secret = sealer.open_stored(key.sealed_key) if shown and key.sealed_key is not None else None
    return {
        "id": key.id,
        "name": key.name,
        "type": key.kind,
        "key": secret,
        "created": created_ms(key),
        "hint": key.hint,
    }


def key_schema(key: ApiKey, *, sealer: Sealer, shown: bool = True) -> schemas.Key:
    return schemas.Key(**key_data(key, sealer=sealer, shown=shown))


async def create_key(
    *,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    key_type: schemas.AccountKeyType,
    name: str | None = None,
    made_by: str | None = None,
) -> schemas.CreatedKey:
    """``made_by``: the person the key answers to; it acts with at most their role and
    scope (docs/isolation.md)."""
    if key_type == "service":
        secret, domain = new_service_key(), MANAGEMENT_DOMAIN
    else:
        secret, domain = new_ingestion_key(), INGESTION_DOMAIN
    key = ApiKey(
        kind=key_type,
        account_id=account_id,
        name=_name(name),
        key_hash=hash_secret(secret, domain=domain),
        hint=hint(secret),
        sealed_key=sealer.seal(secret),
        created_at=utcnow(),
        made_by=made_by,
    )
    session.add(key)
    await session.flush()
    return schemas.CreatedKey(
        id=key.id,
        key=secret,
        name=key.name,
        type=key_type,
        created=created_ms(key),
    )


async def _shown(
    *, session: AsyncSession, account_id: str, keys: list[ApiKey], reader_role: Role
) -> list[bool]:
    """Whether each key's secret may be shown to a reader acting with ``reader_role``:
    only when the key acts with at most that role now (docs/isolation.md). A service
    key acts as owner without a maker, with its maker's current role with one, and as
    nobody once its maker left (hidden: it would act again if they came back)."""
    makers = {key.made_by for key in keys if key.kind == "service" and key.made_by}
    roles = await repository.roles_of(session=session, account_id=account_id, user_ids=makers)
    return _within(keys, roles, reader_role)


def _within(keys: list[ApiKey], roles: dict[str, str], reader_role: Role) -> list[bool]:
    """``_shown`` given the current ``roles`` of (at least) the keys' makers."""

    def acts_within(key: ApiKey) -> bool:
        if key.kind != "service":
            return True  # ingestion keys only send lines
        if key.made_by is None:
            return reader_role >= Role.OWNER
        role = roles.get(key.made_by)
        return role is not None and Role.parse(role) <= reader_role

    return [acts_within(key) for key in keys]


async def list_keys(
    *,
    db: Database,
    sealer: Sealer,
    account_id: str,
    reader_role: Role,
    key_type: schemas.AccountKeyType | None = None,
) -> list[dict[str, Any]]:
    keys = await repository.key_records(db=db, account_id=account_id, kind=key_type)
    return await _documents(
        db=db, sealer=sealer, account_id=account_id, keys=keys, reader_role=reader_role
    )


async def read_key(
    *, db: Database, sealer: Sealer, account_id: str, key_id: str, reader_role: Role
) -> dict[str, Any]:
    """GET of one key, as plain data from raw records."""
    key = await repository.key_record(db=db, account_id=account_id, key_id=key_id)
    if key is None:
        raise NotFound()
    [data] = await _documents(
        db=db, sealer=sealer, account_id=account_id, keys=[key], reader_role=reader_role
    )
    return data


async def _documents(
    *, db: Database, sealer: Sealer, account_id: str, keys: list[Any], reader_role: Role
) -> list[dict[str, Any]]:
    """The raw records ``keys`` as the reader may see them (``_shown``'s rule)."""
    makers = any(key.kind == "service" and key.made_by for key in keys)
    roles = await repository.member_roles(db=db, account_id=account_id) if makers else {}
    shown = _within(keys, roles, reader_role)
    return [key_data(key, sealer=sealer, shown=ok) for key, ok in zip(keys, shown, strict=True)]


async def _schema_for(
    *, session: AsyncSession, sealer: Sealer, account_id: str, key: ApiKey, reader_role: Role
) -> schemas.Key:
    [shown] = await _shown(
        session=session, account_id=account_id, keys=[key], reader_role=reader_role
    )
    return key_schema(key, sealer=sealer, shown=shown)


async def _own_key(
    *, session: AsyncSession, account_id: str, key_id: str, for_update: bool = False
) -> ApiKey:
    key = await repository.key_of(
        session=session, account_id=account_id, key_id=key_id, for_update=for_update
    )
    if key is None:
        raise NotFound()
    return key


async def rename_key(
    *,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    key_id: str,
    body: schemas.KeyUpdate,
    reader_role: Role,
) -> schemas.Key:
    key = await _own_key(session=session, account_id=account_id, key_id=key_id, for_update=True)
    if "name" in body.model_fields_set:
        key.name = _name(body.name)
        await session.flush()
    return await _schema_for(
        session=session, sealer=sealer, account_id=account_id, key=key, reader_role=reader_role
    )


async def delete_key(
    *, session: AsyncSession, sealer: Sealer, account_id: str, key_id: str, reader_role: Role
) -> schemas.Key:
    """Deletes the key; it stops authenticating with the next request (credentials are
    looked up on every request), even when it is the key making this call."""
    key = await _own_key(session=session, account_id=account_id, key_id=key_id, for_update=True)
    deleted = await _schema_for(
        session=session, sealer=sealer, account_id=account_id, key=key, reader_role=reader_role
    )
    await session.delete(key)
    await session.flush()
    return deleted
