"""Account keys: service keys (management API) and ingestion keys. No HTTP here.

Secrets are generated here. Each is stored as a keyed hash (what lookups use; each
kind under its own domain, so an ingestion key can never pass as a management
credential, and the reverse) and sealed under the server secret, because the platform's
v1 keys API shows a key again on GET and its Terraform provider reads it from there.
The database alone reveals neither.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

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
from tidegate.errors import NotFound
from tidegate.keys import repository, schemas
from tidegate.models import ApiKey
from tidegate.models.base import utcnow


def _name(raw: str | None) -> str | None:
    return raw or None


def created_ms(key: ApiKey) -> int:
    return epoch_ms_of(key.created_at)


def key_schema(key: ApiKey, *, sealer: Sealer) -> schemas.Key:
    secret = sealer.open(key.sealed_key) if key.sealed_key is not None else None
    return schemas.Key(
        id=key.id,
        name=key.name,
        type=key.kind,
        key=secret,
        created=created_ms(key),
        hint=key.hint,
    )


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


async def list_keys(
    *,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    key_type: schemas.AccountKeyType | None = None,
) -> list[schemas.Key]:
    keys = await repository.keys_of(session=session, account_id=account_id, kind=key_type)
    return [key_schema(key, sealer=sealer) for key in keys]


async def _own_key(
    *, session: AsyncSession, account_id: str, key_id: str, for_update: bool = False
) -> ApiKey:
    key = await repository.key_of(
        session=session, account_id=account_id, key_id=key_id, for_update=for_update
    )
    if key is None:
        raise NotFound()
    return key


async def get_key(
    *, session: AsyncSession, sealer: Sealer, account_id: str, key_id: str
) -> schemas.Key:
    key = await _own_key(session=session, account_id=account_id, key_id=key_id)
    return key_schema(key, sealer=sealer)


async def rename_key(
    *,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    key_id: str,
    body: schemas.KeyUpdate,
) -> schemas.Key:
    key = await _own_key(session=session, account_id=account_id, key_id=key_id, for_update=True)
    if "name" in body.model_fields_set:
        key.name = _name(body.name)
        await session.flush()
    return key_schema(key, sealer=sealer)


async def delete_key(
    *, session: AsyncSession, sealer: Sealer, account_id: str, key_id: str
) -> schemas.Key:
    """Deletes the key; it stops authenticating with the next request (credentials are
    looked up on every request), even when it is the key making this call."""
    key = await _own_key(session=session, account_id=account_id, key_id=key_id, for_update=True)
    deleted = key_schema(key, sealer=sealer)
    await session.delete(key)
    await session.flush()
    return deleted
