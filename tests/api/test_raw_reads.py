"""The management reads on raw records (Database.fetch_records) answer byte for byte what
the ORM path answered: each route's body is compared with the document built the way it
was before, from ORM objects loaded through a session, through the schema builders and
serialised as FastAPI serialises a response model. On SQLite and on PostgreSQL, with
values that exercise every conversion (JSON lists and objects, nulls, both booleans,
datetimes, sealed channels and secrets, roles of key makers, group memberships)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from pydantic import TypeAdapter
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.users.factories import add_person, sign_in_person
from tests.views.test_endpoints import provider_channel

from tidegate.api.envelope import Envelope, envelope
from tidegate.auth.roles import Role
from tidegate.auth.secrets import Sealer, load_server_secret
from tidegate.boards import schemas as board_schemas
from tidegate.boards.service import board_schema
from tidegate.db.engine import Database
from tidegate.enterprise import endpoints as enterprise_endpoints
from tidegate.enterprise import schemas as enterprise_schemas
from tidegate.enterprise import service as enterprise_service
from tidegate.exclusions import schemas as exclusion_schemas
from tidegate.exclusions.service import rule_schema
from tidegate.groups import repository as groups_repository
from tidegate.keys import schemas as key_schemas
from tidegate.keys import service as key_service
from tidegate.members import schemas as member_schemas
from tidegate.members.service import member_schema
from tidegate.models import (
    Account,
    ApiKey,
    Board,
    ExclusionRule,
    Membership,
    Pipeline,
    PresetAlert,
    User,
    View,
)
from tidegate.pipelines import endpoints as pipeline_endpoints
from tidegate.pipelines import repository as pipeline_repository
from tidegate.pipelines import schemas as pipeline_schemas
from tidegate.pipelines import service as pipeline_service
from tidegate.pipelines.sealed_config import SEALER_INFO_KEY
from tidegate.pipelines.service import pipeline_schema
from tidegate.views import schemas as view_schemas
from tidegate.views.service import preset_schema, view_schema

Before = Callable[[AsyncSession, "Seeded"], Awaitable[tuple[Any, Any]]]


class Seeded:
    def __init__(
        self,
        account: AccountCtx,
        rule_id: str,
        key_id: str,
        sealer: Sealer,
        ids: dict[str, str],
    ) -> None:
        self.account = account
        self.rule_id = rule_id
        self.key_id = key_id  # a service key made by a person (its maker's role decides)
        self.sealer = sealer
        self.ids = ids  # a path's {placeholder} -> the id read there

    @property
    def account_id(self) -> str:
        return self.account.account_id


async def _ok(response: Any) -> Any:
    assert response.status_code in (200, 201), response.text
    return response.json()


async def seed(client: AppClient) -> Seeded:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant, company="Ünïcode “Co”")
    await make_account(client, tenant, company="second")
    h = account.headers
    rule = await _ok(
        await client.post(
            "/v1/config/ingestion/exclusions",
            json={"title": "é rule", "hosts": ["h1", "h2"], "active": True},
            headers=h,
        )
    )
    await _ok(
        await client.post(
            "/v1/config/ingestion/exclusions",
            json={"title": "query only", "query": "level:debug", "indexonly": False},
            headers=h,
        )
    )
    email = provider_channel(emails=["ops@example.com"], triggerlimit=3)
    preset = await _ok(
        await client.post(
            "/v1/config/presetalert", json={"name": "p", "channels": [email]}, headers=h
        )
    )
    await _ok(await client.post("/v1/config/presetalert", json={"name": "empty"}, headers=h))
    view = {"name": "v", "query": "error", "apps": ["web"], "levels": ["error", "warn"]}
    sealed_view = await _ok(
        await client.post("/v1/config/view", json={**view, "channels": [email]}, headers=h)
    )
    preset_view = await _ok(
        await client.post(
            "/v1/config/view", json={"name": "w", "presetid": preset["presetid"]}, headers=h
        )
    )
    await _ok(await client.post("/v1/config/board", json={"title": "b1"}, headers=h))
    board = await _ok(
        await client.post(
            "/v1/config/board", json={"title": "b2", "graphs": [{"a": [1, 2.5, None]}]}, headers=h
        )
    )
    pipeline = await _ok(
        await client.post("/v3/pipeline", json={"title": "p1", "description": "d"}, headers=h)
    )
    await _ok(
        await client.post(
            f"/v3/pipeline/{pipeline['data']['id']}/publish",
            params={"allow_unconnected_edges": "true"},
            json={},
            headers=h,
        )
    )
    await _ok(await client.post("/v3/pipeline", json={"title": "p2"}, headers=h))
    await _ok(await client.post("/v1/config/keys", params={"type": "ingestion"}, headers=h))
    await _ok(await client.post("/v1/config/keys", params={"type": "service"}, headers=h))
    group = await _ok(await client.post("/v1/config/groups", json={"name": "g"}, headers=h))
    admin = await add_person(client.database_url, account_id=account.account_id, role="admin")
    await _ok(
        await client.put(
            f"/v1/config/members/{admin.email}", json={"groups": [group["id"]]}, headers=h
        )
    )
    browser = await sign_in_person(client, admin)
    made = await _ok(
        await client.post("/v1/config/keys", params={"type": "service"}, headers=browser.headers)
    )
    await _ok(
        await client.post(
            "/v1/config/members", json={"email": "invited@example.com", "role": "member"}, headers=h
        )
    )
    settings = client.settings
    secret = load_server_secret(configured=settings.secret_key, data_dir=settings.data_dir)
    ids = {
        "rule": rule["id"],
        "key": made["id"],
        "view": sealed_view["viewID"],
        "preset_view": preset_view["viewID"],
        "preset": preset["presetid"],
        "board": board["boardid"],
        "pipeline": pipeline["data"]["id"],
        "member": admin.email,
    }
    return Seeded(account, rule["id"], made["id"], Sealer(secret), ids)


def _of(model: Any, seeded: Seeded) -> Any:
    return (
        select(model)
        .where(model.account_id == seeded.account_id)
        .order_by(model.created_at, model.id)
    )


async def _rules(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    rules = (await session.execute(_of(ExclusionRule, seeded))).scalars()
    return list[exclusion_schemas.ExclusionRule], [rule_schema(rule) for rule in rules]


async def _rule(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    rule = await session.get(ExclusionRule, seeded.rule_id)
    return list[exclusion_schemas.ExclusionRule], [rule_schema(rule)]  # type: ignore[arg-type]


async def _keys(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    keys = list((await session.execute(_of(ApiKey, seeded))).scalars())
    shown = await key_service._shown(
        session=session, account_id=seeded.account_id, keys=keys, reader_role=Role.OWNER
    )
    data = [
        key_service.key_schema(key, sealer=seeded.sealer, shown=ok)
        for key, ok in zip(keys, shown, strict=True)
    ]
    return list[key_schemas.Key], data


async def _key(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    key = await session.get(ApiKey, seeded.key_id)
    assert key is not None
    assert key.made_by is not None
    [shown] = await key_service._shown(
        session=session, account_id=seeded.account_id, keys=[key], reader_role=Role.OWNER
    )
    assert shown
    return key_schemas.Key, key_service.key_schema(key, sealer=seeded.sealer, shown=shown)


async def _views(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    views = (await session.execute(_of(View, seeded))).scalars()
    return list[view_schemas.View], [view_schema(view, seeded.sealer) for view in views]


async def _view(session: AsyncSession, seeded: Seeded, view_id: str) -> tuple[Any, Any]:
    view = await session.get(View, view_id)
    assert view is not None
    return view_schemas.View, view_schema(view, seeded.sealer)


async def _sealed_view(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    view = await _view(session, seeded, seeded.ids["view"])
    assert view[1].channels
    return view


async def _preset_view(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    view = await _view(session, seeded, seeded.ids["preset_view"])
    assert view[1].presetid
    return view


async def _preset(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    preset = await session.get(PresetAlert, seeded.ids["preset"])
    assert preset is not None
    document = preset_schema(preset, seeded.sealer)
    assert document.channels
    return view_schemas.Preset, document


async def _presets(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    presets = (await session.execute(_of(PresetAlert, seeded))).scalars()
    return list[view_schemas.Preset], [preset_schema(p, seeded.sealer) for p in presets]


async def _boards(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    account = await session.get(Account, seeded.account_id)
    assert account is not None
    boards = (await session.execute(_of(Board, seeded))).scalars()
    data = [
        board_schemas.BoardSummary(boardid=b.id, account=account.short_id, title=b.title)
        for b in boards
    ]
    return list[board_schemas.BoardSummary], data


async def _board(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    account = await session.get(Account, seeded.account_id)
    board = await session.get(Board, seeded.ids["board"])
    assert account is not None
    assert board is not None
    assert board.graphs
    return board_schemas.Board, board_schema(board, account.short_id)


async def _member(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    user = (await session.execute(select(User).where(User.email == seeded.ids["member"]))).scalar()
    assert user is not None
    membership = await session.get(Membership, (user.id, seeded.account_id))
    assert membership is not None
    groups = await groups_repository.groups_of_member(
        session=session, account_id=seeded.account_id, user_id=user.id
    )
    assert groups
    return member_schemas.Member, member_schema(user, membership, groups, None)


async def _pipeline(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    session.info[SEALER_INFO_KEY] = seeded.sealer
    pipeline = await session.get(Pipeline, seeded.ids["pipeline"])
    assert pipeline is not None
    assert pipeline.published_at is not None
    nodes = await pipeline_repository.nodes_of(session=session, pipeline_id=pipeline.id)
    data = envelope(
        pipeline_service._detail(session, pipeline, nodes),
        type="pipeline",
        pk="id",
        links=pipeline_endpoints.PIPELINE_LINKS,
        related=pipeline_endpoints.PIPELINE_RELATED,
    )
    return Envelope[pipeline_schemas.PipelineDetail], data


async def _members(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    rows = await session.execute(
        select(User, Membership)
        .join(Membership, Membership.user_id == User.id)
        .where(Membership.account_id == seeded.account_id)
        .order_by(User.email)
    )
    data = []
    for user, membership in rows:
        groups = await groups_repository.groups_of_member(
            session=session, account_id=seeded.account_id, user_id=user.id
        )
        data.append(member_schema(user, membership, groups, None))
    assert any(member.groups for member in data)
    return list[member_schemas.Member], data


async def _pipelines(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    pipelines = [
        pipeline_schema(p) for p in (await session.execute(_of(Pipeline, seeded))).scalars()
    ]
    assert any(p.published_at for p in pipelines)
    links = pipeline_endpoints.PIPELINE_LINKS
    data = envelope(pipelines, type="pipeline", pk="id", links=links)
    return Envelope[list[pipeline_schemas.Pipeline]], data


async def _accounts(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    accounts = await enterprise_service.list_accounts(
        session=session, enterprise_id=seeded.account.tenant.enterprise_id
    )
    links = enterprise_endpoints.ACCOUNT_LINKS
    data = envelope(accounts, type="account", pk="account_id", links=links)
    return Envelope[list[enterprise_schemas.Account]], data


async def _enterprise(session: AsyncSession, seeded: Seeded) -> tuple[Any, Any]:
    found = await enterprise_service.get_enterprise(
        session=session, enterprise_id=seeded.account.tenant.enterprise_id
    )
    related = {"accounts": "/v3/enterprise/account", "account": enterprise_endpoints.ACCOUNT}
    links = enterprise_endpoints.ENTERPRISE_LINKS
    data = envelope(found, type="enterprise", pk="enterprise_id", links=links, related=related)
    return Envelope[enterprise_schemas.Enterprise], data


# path -> how the document was built before (its response type, the value), and whether
# the enterprise's own key reads it.
ROUTES: dict[str, tuple[Before, bool]] = {
    "/v1/config/ingestion/exclusions": (_rules, False),
    "/v1/config/ingestion/exclusions/{rule}": (_rule, False),
    "/v1/config/keys": (_keys, False),
    "/v1/config/keys/{key}": (_key, False),
    "/v1/config/view": (_views, False),
    "/v1/config/view/{view}": (_sealed_view, False),
    "/v1/config/view/{preset_view}": (_preset_view, False),
    "/v1/config/presetalert": (_presets, False),
    "/v1/config/presetalert/{preset}": (_preset, False),
    "/v1/config/board": (_boards, False),
    "/v1/config/board/{board}": (_board, False),
    "/v1/config/members": (_members, False),
    "/v1/config/members/{member}": (_member, False),
    "/v3/pipeline": (_pipelines, False),
    "/v3/pipeline/{pipeline}": (_pipeline, False),
    "/v3/enterprise/account": (_accounts, True),
    "/v3/enterprise": (_enterprise, True),
}


@pytest.fixture(scope="module")
async def seeded(client: AppClient) -> Seeded:
    return await seed(client)


@pytest.fixture
async def session(client: AppClient) -> AsyncIterator[AsyncSession]:
    db = Database.connect(client.database_url)
    try:
        async with db.read_sessions() as session:
            yield session
    finally:
        await db.dispose()


@pytest.mark.parametrize("path", list(ROUTES))
async def test_raw_read_answers_the_orm_document_byte_for_byte(
    client: AppClient, seeded: Seeded, session: AsyncSession, path: str
) -> None:
    before, enterprise_key = ROUTES[path]
    headers = seeded.account.tenant.headers if enterprise_key else seeded.account.headers
    filled = path
    for name, found in seeded.ids.items():
        filled = filled.replace(f"{{{name}}}", found)
    response = await client.get(filled, headers=headers)
    assert response.status_code == 200, response.text
    response_type, value = await before(session, seeded)
    expected = TypeAdapter(response_type).dump_json(value, by_alias=True)
    assert response.content == expected
    assert response.headers["content-type"] == "application/json"
    assert response.headers["content-length"] == str(len(expected))
