"""Exclusion rule rules: what a rule must contain and what its query may say. No HTTP.

Empty parts count as absent: Terraform's provider sends ``"hosts": []`` and
``"query": ""`` for every part a rule does not use, so rejecting them would break it.
A rule still needs at least one non-empty part.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.db.engine import Database
from tidegate.errors import NotFound, ValidationFailed
from tidegate.exclusions import repository, schemas
from tidegate.models import ExclusionRule
from tidegate.models.base import utcnow
from tidegate.search import QuerySyntaxError, compile_query

RESERVED_FIELDS = ("_retention", "_mezmo_line_size")


def _invalid(message: str) -> ValidationFailed:
    return ValidationFailed(message, context="body")


def _part(names: list[str] | None) -> list[str] | None:
    return list(names) if names else None


def _query(text: str | None) -> str | None:
    stripped = (text or "").strip()
    return stripped or None


def check_query(query: str) -> None:
    """Raises ValidationFailed when ``query`` cannot be an exclusion rule's query: it does
    not parse in the search syntax, or it uses a reserved field (``_retention:30``,
    ``_retention.x:1``; as a plain term or inside a phrase the name is only text)."""
    try:
        compiled = compile_query(query)
    except QuerySyntaxError as error:
        raise _invalid(f"query: {error}") from error
    for field in sorted(compiled.fields):
        if field.split(".", 1)[0].lower() in RESERVED_FIELDS:
            raise _invalid(f"query: the reserved field {field} cannot be used in an exclusion rule")


def _require_a_part(hosts: list[str] | None, apps: list[str] | None, query: str | None) -> None:
    if not (hosts or apps or query):
        raise _invalid(
            "At least one of hosts, apps or query must be given "
            "(an empty list or an empty query does not count)"
        )


def rule_data(rule: ExclusionRule) -> dict[str, Any]:
    """The rule's document as plain data (api/raw_json.py), from the ORM object or a raw
    record of the rule (``repository.rules_of``)."""
    return {
        "id": rule.id,
        "title": rule.title,
        "hosts": rule.hosts or [],
        "apps": rule.apps or [],
        "query": rule.query or "",
        "active": rule.active,
        "indexonly": rule.indexonly,
    }


def rule_schema(rule: ExclusionRule) -> schemas.ExclusionRule:
    return schemas.ExclusionRule(**rule_data(rule))


async def create_rule(
    *, session: AsyncSession, account_id: str, body: schemas.ExclusionRuleCreate
) -> schemas.ExclusionRule:
    hosts, apps, query = _part(body.hosts), _part(body.apps), _query(body.query)
    _require_a_part(hosts, apps, query)
    if query is not None:
        check_query(query)
    now = utcnow()
    rule = ExclusionRule(
        account_id=account_id,
        title=body.title,
        hosts=hosts,
        apps=apps,
        query=query,
        active=body.active,
        indexonly=body.indexonly,
        created_at=now,
        updated_at=now,
    )
    session.add(rule)
    await session.flush()
    return rule_schema(rule)


async def list_rules(*, db: Database, account_id: str) -> list[dict[str, Any]]:
    return [rule_data(rule) for rule in await repository.rules_of(db=db, account_id=account_id)]


async def read_rule(*, db: Database, account_id: str, rule_id: str) -> dict[str, Any]:
    rule = await repository.raw_rule_of(db=db, account_id=account_id, rule_id=rule_id)
    if rule is None:
        raise NotFound()
    return rule_data(rule)


async def _own_rule(
    *, session: AsyncSession, account_id: str, rule_id: str, for_update: bool = False
) -> ExclusionRule:
    rule = await repository.rule_of(
        session=session, account_id=account_id, rule_id=rule_id, for_update=for_update
    )
    if rule is None:
        raise NotFound()
    return rule


async def update_rule(
    *,
    session: AsyncSession,
    account_id: str,
    rule_id: str,
    body: schemas.ExclusionRuleUpdate,
) -> schemas.ExclusionRule:
    rule = await _own_rule(session=session, account_id=account_id, rule_id=rule_id, for_update=True)
    given = body.model_fields_set
    hosts = _part(body.hosts) if "hosts" in given else rule.hosts
    apps = _part(body.apps) if "apps" in given else rule.apps
    query = _query(body.query) if "query" in given else rule.query
    _require_a_part(hosts, apps, query)
    if "query" in given and query is not None:
        check_query(query)
    rule.hosts, rule.apps, rule.query = hosts, apps, query
    if body.title is not None:
        rule.title = body.title
    if body.active is not None:
        rule.active = body.active
    if body.indexonly is not None:
        rule.indexonly = body.indexonly
    rule.updated_at = utcnow()
    await session.flush()
    return rule_schema(rule)


async def delete_rule(
    *, session: AsyncSession, account_id: str, rule_id: str
) -> schemas.ExclusionRule:
    rule = await _own_rule(session=session, account_id=account_id, rule_id=rule_id, for_update=True)
    deleted = rule_schema(rule)
    await session.delete(rule)
    await session.flush()
    return deleted
