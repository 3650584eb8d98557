"""The board, member and pipeline single-item GETs, the groups', categories' and parsing
templates' lists and gets, the archiving configuration, gateway routes and their keys,
pipeline nodes and an account's features, on raw records answer exactly what their ORM
endpoints answered before: the endpoints as they were (a session, the ORM objects, the
response model; copied here as the reference) are served in the route's place and
compared with the route as it is, status, headers and body byte for byte, for no
credential, a wrong key, the account's key, the enterprise key with and without the
account, browser sessions of every role, another account's key, and the account's own
ids, another account's, unknown and invalid ones (e-mails in other cases and padded,
pending members, members in groups, a board whose graphs hold integers beyond 64 bits,
floats and Unicode, a pipeline with nodes of each kind, groups with and without members
and scopes, categories of each type read under another type, templates in each state
and order, an account with archiving and one without, gateway routes with two sources
and with none, a route's access and signing keys (two of each, and none), an account's
features (enabled, none, another enterprise's account), the index-rate alert (set with
every channel and a float z-score, and never set), each kind's nodes under every
path segment, their own and another kind's, in another pipeline). On SQLite and on
PostgreSQL. The pipeline alerts too (the alert get, each segment's component alert list and
get; alerts of each service, active and not, under their own component, kind and
pipeline and under others, a wrong kind), the ingestion status (suspended, active)
a person's preferences (set, and never set; a key's 403),
the web app's who-am-I (/v1/auth/session), mzm's accounts (/v3/auth/account and one of them) and the CLI's /info and /orgs (a person, a service key, an enterprise key with and without
an account: its accounts), and archiving's status (an
account with three days to write, and one without archiving)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any

import pytest
from fastapi import FastAPI, Query, Response
from fastapi.routing import APIRoute
from sqlalchemy import func, select
from tests.api.test_plain_routes import same_answer
from tests.conftest import AppClient
from tests.factories import AccountCtx, make_account, make_tenant
from tests.pipelines.factories import add_node, make_pipeline, publish, source_with_route
from tests.users.factories import add_person, sign_in_person
from tests.views.test_endpoints import view_body

from tidegate.alerts.index_rate import evaluator as index_rate_evaluator
from tidegate.alerts.index_rate import schemas as index_rate_schemas
from tidegate.alerts.index_rate import service as index_rate_service
from tidegate.alerts.pipeline_alerts import open_payload
from tidegate.api.envelope import Envelope, envelope
from tidegate.api.path_params import id_path
from tidegate.api.plain_routes import PlainHandler, route_contexts
from tidegate.api.session import SessionDep
from tidegate.archive import repository as archive_repository
from tidegate.archive import schemas as archive_schemas
from tidegate.archive import service as archive_service
from tidegate.auth.dependencies import AccountId, CurrentPrincipal, EnterpriseId, SealerDep
from tidegate.boards import schemas as board_schemas
from tidegate.boards import service as board_service
from tidegate.boards.endpoints import BoardIdPath
from tidegate.categories import repository as category_repository
from tidegate.categories import schemas as category_schemas
from tidegate.categories import service as category_service
from tidegate.categories.endpoints import CategoryIdPath, TypePath
from tidegate.cli_auth import schemas as cli_schemas
from tidegate.clock import now_ms
from tidegate.components.catalogue import REGISTRY
from tidegate.db.engine import Database
from tidegate.enterprise import endpoints as enterprise_endpoints
from tidegate.enterprise import repository as enterprise_repository
from tidegate.enterprise import schemas as enterprise_schemas
from tidegate.enterprise import service as enterprise_service
from tidegate.errors import NotFound, ValidationFailed
from tidegate.export.schemas import epoch_ms
from tidegate.groups import repository as group_repository
from tidegate.groups import schemas as group_schemas
from tidegate.groups import service as group_service
from tidegate.groups.endpoints import GroupIdPath
from tidegate.ingest.service import utc_today
from tidegate.members import schemas as member_schemas
from tidegate.members import service as member_service
from tidegate.members.endpoints import EmailPath
from tidegate.models import (
    AccountUsage,
    AlertDelivery,
    IndexRateAlert,
    PipelineAlert,
    PipelineUsage,
)
from tidegate.parsing_templates import repository as template_repository
from tidegate.parsing_templates import schemas as template_schemas
from tidegate.parsing_templates import service as template_service
from tidegate.parsing_templates.endpoints import TemplateIdPath
from tidegate.pipelines import (
    alert_endpoints,
    alert_service,
    catalogue_endpoints,
    catalogue_service,
    gateway_endpoints,
    gateway_schemas,
    gateway_service,
    live_endpoints,
    live_schemas,
    live_service,
    node_service,
)
from tidegate.pipelines import endpoints as pipeline_endpoints
from tidegate.pipelines import repository as pipeline_repository
from tidegate.pipelines import schemas as pipeline_schemas
from tidegate.pipelines import service as pipeline_service
from tidegate.pipelines.catalogue_schemas import ComponentType
from tidegate.pipelines.paths import NodeIdPath, PipelineIdPath
from tidegate.preferences import repository as preference_repository
from tidegate.preferences import schemas as preference_schemas
from tidegate.preferences import service as preference_service
from tidegate.sessions import endpoints as session_endpoints
from tidegate.sessions import repository as session_repository
from tidegate.sessions import schemas as session_schemas
from tidegate.sessions import service as session_service
from tidegate.suspensions import schemas as suspension_schemas
from tidegate.suspensions import service as suspension_service
from tidegate.usage import endpoints as usage_endpoints
from tidegate.usage import schemas as usage_schemas
from tidegate.usage import service as usage_service
from tidegate.views import schemas as view_schemas
from tidegate.views import service as view_service
from tidegate.views.endpoints import ViewIdPath

# The endpoints as they were before the raw reads (main at 5b8a065), on the ORM.


async def board_before(
    board_id: BoardIdPath, session: SessionDep, account_id: AccountId
) -> board_schemas.Board:
    board = await board_service._own_board(
        session=session, account_id=account_id, board_id=board_id
    )
    short_id = await board_service._short_id(session=session, account_id=account_id)
    return board_service.board_schema(board, short_id)


async def member_before(
    email: EmailPath, session: SessionDep, account_id: AccountId
) -> member_schemas.Member:
    user, membership = await member_service._found(
        session=session, account_id=account_id, email=email
    )
    return await member_service._schema(session, account_id, user, membership)


async def pipeline_before(
    pipeline_id: PipelineIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[pipeline_schemas.PipelineDetail]:
    pipeline = await pipeline_service.own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id
    )
    nodes = await pipeline_repository.nodes_of(session=session, pipeline_id=pipeline.id)
    return pipeline_endpoints._pipeline(pipeline_service._detail(session, pipeline, nodes))


async def groups_before(session: SessionDep, account_id: AccountId) -> list[group_schemas.Group]:
    groups = await group_repository.groups_of_account(session=session, account_id=account_id)
    ids = [group.id for group in groups]
    members = await group_repository.member_emails(session=session, group_ids=ids)
    return [group_service._schema(group, members[group.id]) for group in groups]


async def group_before(
    group_id: GroupIdPath, session: SessionDep, account_id: AccountId
) -> group_schemas.Group:
    return await group_service.get_group(session=session, account_id=account_id, group_id=group_id)


async def categories_before(
    type_: TypePath, session: SessionDep, account_id: AccountId
) -> list[category_schemas.Category]:
    return [
        category_service.category_schema(category)
        for category in await category_repository.categories_of(
            session=session, account_id=account_id, type_=type_
        )
    ]


async def category_before(
    type_: TypePath, category_id: CategoryIdPath, session: SessionDep, account_id: AccountId
) -> category_schemas.Category:
    return category_service.category_schema(
        await category_service._own(
            session=session, account_id=account_id, type_=type_, category_id=category_id
        )
    )


async def templates_before(
    session: SessionDep, account_id: AccountId
) -> list[template_schemas.ParsingTemplate]:
    return [
        template_service.template_schema(template)
        for template in await template_repository.templates_of(
            session=session, account_id=account_id
        )
    ]


async def template_before(
    template_id: TemplateIdPath, session: SessionDep, account_id: AccountId
) -> template_schemas.ParsingTemplate:
    return template_service.template_schema(
        await template_service._own(session=session, account_id=account_id, template_id=template_id)
    )


async def archiving_before(
    session: SessionDep, sealer: SealerDep, account_id: AccountId
) -> dict[str, Any]:
    row = await archive_repository.get_config(session=session, account_id=account_id)
    if row is None:
        raise NotFound("archiving is not configured for this account")
    return archive_service.open_config(row, sealer)


async def gateway_routes_before(
    session: SessionDep, account_id: AccountId
) -> Envelope[list[gateway_schemas.GatewayRoute]]:
    routes = await pipeline_repository.gateway_routes_of(session=session, account_id=account_id)
    ids = [route.id for route in routes]
    sources = await pipeline_repository.sources_by_route(session=session, gateway_route_ids=ids)
    data = [gateway_service.route_schema(route, sources[route.id]) for route in routes]
    return envelope(data, type="gateway route", pk="id", links=gateway_endpoints.ROUTE_LINKS)


async def gateway_route_before(
    gateway_route_id: gateway_endpoints.RouteIdPath, session: SessionDep, account_id: AccountId
) -> Envelope[gateway_schemas.GatewayRoute]:
    route = await gateway_service._own_route(
        session=session, account_id=account_id, gateway_route_id=gateway_route_id
    )
    return gateway_endpoints._route(
        await gateway_service._with_sources(session=session, route=route)
    )


def _keys_before(signing: bool) -> Any:
    """A route's access keys' (or signing keys', ``signing``) list as it was, on the ORM."""
    of = pipeline_repository.signing_keys_of if signing else pipeline_repository.access_keys_of
    schema: Any = (
        gateway_service.signing_key_schema if signing else gateway_service.access_key_schema
    )
    kind = "signing key" if signing else "access key"
    links = gateway_endpoints.SIGNING_KEY_LINKS if signing else gateway_endpoints.ACCESS_KEY_LINKS
    model: Any = gateway_schemas.SigningKey if signing else gateway_schemas.AccessKey

    async def keys_before(
        gateway_route_id: gateway_endpoints.RouteIdPath, session: SessionDep, account_id: AccountId
    ) -> Any:
        route = await gateway_service._own_route(
            session=session, account_id=account_id, gateway_route_id=gateway_route_id
        )
        data = [schema(key) for key in await of(session=session, gateway_route_id=route.id)]
        related = gateway_endpoints.KEY_RELATED
        return envelope(data, type=kind, pk="id", links=links, related=related)

    keys_before.__annotations__["return"] = Envelope[list[model]]  # the response model
    return keys_before


async def features_before(
    account_id: enterprise_endpoints.AccountIdPath, session: SessionDep, enterprise_id: EnterpriseId
) -> Envelope[list[enterprise_schemas.Feature]]:
    await enterprise_service._own_account(
        session=session, enterprise_id=enterprise_id, account_id=account_id
    )
    rows = await enterprise_repository.features_of(session=session, account_id=account_id)
    enabled = {row.feature: row for row in rows}
    data = [
        enterprise_service._feature(account_id, enabled.get(name), name)
        for name in sorted(enterprise_service.KNOWN_FEATURES)
    ]
    return envelope(data, type="feature", pk="feature", links=enterprise_endpoints.FEATURE_LINKS)


async def index_rate_before(
    session: SessionDep, account_id: AccountId, sealer: SealerDep
) -> index_rate_schemas.IndexRate:
    row = await session.get(IndexRateAlert, account_id)
    return index_rate_service.config_schema(index_rate_evaluator.open_config(sealer, row))


async def ingestion_status_before(
    session: SessionDep, account_id: AccountId
) -> suspension_schemas.IngestionStatus:
    account = await suspension_service._account(session=session, account_id=account_id)
    return suspension_service._status(account)


async def preferences_before(
    principal: CurrentPrincipal, session: SessionDep
) -> preference_schemas.Preferences:
    user_id = preference_service.person_of(principal)
    return preference_service._shown(
        await preference_repository.of_user(session=session, user_id=user_id)
    )


async def info_before(principal: CurrentPrincipal, session: SessionDep) -> cli_schemas.Info:
    accounts = await session_service.accounts_of(session=session, principal=principal)
    current = next((a for a in accounts if a.id == principal.account_id), None)
    return cli_schemas.Info(
        email=principal.email,
        account_id=principal.account_id,
        account=current.name if current else None,
        role=principal.role.label if principal.account_id else None,
        accounts=[account.id for account in accounts],
    )


async def whoami_before(
    principal: CurrentPrincipal, session: SessionDep
) -> session_schemas.SessionInfo:
    accounts = await session_service.accounts_of(session=session, principal=principal)
    return session_schemas.SessionInfo(
        kind=principal.kind,
        email=principal.email,
        account_id=principal.account_id,
        role=principal.role.label if principal.account_id is not None else None,
        accounts=accounts,
    )


async def orgs_before(principal: CurrentPrincipal, session: SessionDep) -> list[cli_schemas.Org]:
    return [
        cli_schemas.Org(id=account.id, name=account.name, role=account.role, servicekeys=[])
        for account in await session_service.accounts_of(session=session, principal=principal)
    ]


async def _accounts_in_detail_before(
    session: Any, principal: Any
) -> list[enterprise_schemas.Account]:
    """mzm's accounts as they were read (sessions.service.accounts_in_detail)."""
    if principal.kind == "enterprise" and principal.account_id is None:
        return (
            await enterprise_service.list_accounts(
                session=session, enterprise_id=principal.enterprise_id
            )
        )[:200]
    found = []
    for account in (await session_service.accounts_of(session=session, principal=principal))[:200]:
        row = await session_repository.account(session=session, account_id=account.id)
        if row is not None:
            found.append(
                await enterprise_service.get_account(
                    session=session, enterprise_id=row.enterprise_id, account_id=row.id
                )
            )
    return found


def _mark_active_before(response: Response, principal: Any, accounts: list[Any]) -> None:
    active = next((a for a in accounts if a.account_id == principal.account_id), None)
    if active is not None:
        response.headers[session_endpoints.ACTIVE_ACCOUNT_HEADER] = active.account


async def auth_accounts_before(
    principal: CurrentPrincipal, response: Response, session: SessionDep
) -> Envelope[list[enterprise_schemas.Account]]:
    accounts = await _accounts_in_detail_before(session, principal)
    _mark_active_before(response, principal, accounts)
    return envelope(accounts, type="account", pk="account", links=session_endpoints.ACCOUNT_LINKS)


async def auth_account_before(
    account: Annotated[str, id_path(alias="account", description="Short or long account id")],
    principal: CurrentPrincipal,
    response: Response,
    session: SessionDep,
) -> Envelope[enterprise_schemas.Account]:
    accounts = await _accounts_in_detail_before(session, principal)
    found = next((a for a in accounts if account in (a.account, a.account_id)), None)
    if found is None:
        raise NotFound()
    _mark_active_before(response, principal, [found])
    return envelope(found, type="account", pk="account", links=session_endpoints.ACCOUNT_LINKS)


async def archiving_status_before(
    session: SessionDep, account_id: AccountId
) -> archive_schemas.ArchiveStatus:
    row = await archive_repository.get_config(session=session, account_id=account_id)
    days = await archive_repository.days_of(
        session=session, account_id=account_id, limit=archive_service.STATUS_DAYS
    )
    return archive_schemas.ArchiveStatus(
        integration=None if row is None else row.integration,
        days=[archive_service._day_status(day) for day in days],
    )


async def _alert_before(
    session: Any, sealer: Any, **where: Any
) -> Envelope[alert_service.AlertOut]:
    alert = await alert_service._own_alert(session, **where)
    return alert_endpoints._one(
        alert_service._out(alert, open_payload(sealer, alert.payload_sealed) or {})
    )


async def pipeline_alert_before(
    pipeline_id: PipelineIdPath,
    alert_id: alert_endpoints.AlertIdPath,
    session: SessionDep,
    account_id: AccountId,
    sealer: SealerDep,
) -> Envelope[alert_service.AlertOut]:
    return await _alert_before(
        session, sealer, account_id=account_id, pipeline_id=pipeline_id, alert_id=alert_id
    )


async def component_alert_before(
    pipeline_id: PipelineIdPath,
    component_id: NodeIdPath,
    alert_id: alert_endpoints.AlertIdPath,
    session: SessionDep,
    account_id: AccountId,
    sealer: SealerDep,
) -> Envelope[alert_service.AlertOut]:
    return await _alert_before(
        session,
        sealer,
        account_id=account_id,
        pipeline_id=pipeline_id,
        alert_id=alert_id,
        component_id=component_id,
    )


async def component_alerts_before(
    pipeline_id: PipelineIdPath,
    component_id: NodeIdPath,
    session: SessionDep,
    account_id: AccountId,
    sealer: SealerDep,
) -> Envelope[list[alert_service.AlertOut]]:
    pipeline = await pipeline_service.own_pipeline(
        session=session, account_id=account_id, pipeline_id=pipeline_id
    )
    rows = (
        await session.execute(
            select(PipelineAlert)
            .where(
                PipelineAlert.pipeline_id == pipeline.id,
                PipelineAlert.component_id == component_id,
            )
            .order_by(PipelineAlert.created_at, PipelineAlert.id)
        )
    ).scalars()
    data = [alert_service._out(row, open_payload(sealer, row.payload_sealed) or {}) for row in rows]
    return envelope(data, type="alert", pk="id", links=alert_endpoints.LINKS)


# Every path of the pipeline alert reads -> the endpoint as it was.
ALERT_READS = {
    "/v3/pipeline/{pipeline_id}/alert/{alert_id}": pipeline_alert_before,
    **{
        f"/v3/pipeline/{{pipeline_id}}/{segment}/{{component_id}}/alert{item}": before
        for segment in ("processor", "destination", "{kind}")
        for item, before in (("", component_alerts_before), ("/{alert_id}", component_alert_before))
    },
}


def _nodes_before(kind: Any) -> tuple[Any, Any]:
    """The list and get of ``kind``'s nodes as they were, on the ORM."""
    related = {"pipeline": pipeline_endpoints.PIPELINE}

    async def nodes_before(
        pipeline_id: PipelineIdPath, session: SessionDep, account_id: AccountId
    ) -> Envelope[list[pipeline_schemas.Node]]:
        pipeline = await pipeline_service.own_pipeline(
            session=session, account_id=account_id, pipeline_id=pipeline_id
        )
        nodes = await pipeline_repository.nodes_of(session=session, pipeline_id=pipeline.id)
        data = [pipeline_service.node_schema(session, node) for node in nodes if node.kind == kind]
        links = pipeline_endpoints.NODE_LINKS[kind]
        return envelope(data, type=kind, pk="id", links=links, related=related)

    async def node_before(
        pipeline_id: PipelineIdPath, node_id: NodeIdPath, session: SessionDep, account_id: AccountId
    ) -> Envelope[pipeline_schemas.Node]:
        pipeline = await pipeline_service.own_pipeline(
            session=session, account_id=account_id, pipeline_id=pipeline_id
        )
        nodes = await pipeline_repository.nodes_of(session=session, pipeline_id=pipeline.id)
        node = node_service._find(nodes, kind, node_id)
        links = pipeline_endpoints.NODE_LINKS[kind]
        data = pipeline_service.node_schema(session, node)
        return envelope(data, type=kind, pk="id", links=links, related=related)

    return nodes_before, node_before


# Every path of the node reads (the older segments too) -> its kind.
NODE_SEGMENTS = {"source": "source", "transform": "processor", "processor": "processor",
                 "sink": "destination", "destination": "destination"}  # fmt: skip
NODE_READS = {
    f"/v3/pipeline/{{pipeline_id}}/{segment}{item}": _nodes_before(kind)[bool(item)]
    for segment, kind in NODE_SEGMENTS.items()
    for item in ("", "/{node_id}")
}


async def component_types_before(
    session: SessionDep,
    account_id: AccountId,
    kind: Annotated[pipeline_schemas.NodeKind | None, Query()] = None,
) -> Envelope[list[ComponentType]]:
    features: dict[str, bool] = {}
    answer = []
    for component in REGISTRY:
        if kind is not None and component.kind != kind:
            continue
        feature = component.needs.feature
        if feature is not None and feature not in features:
            features[feature] = await enterprise_service.has_feature(
                session=session, account_id=account_id, name=feature
            )
        answer.append(
            ComponentType(
                kind=component.kind,
                type=component.type,
                aliases=list(component.aliases),
                description=component.describe,
                feature=feature,
                enabled=feature is None or features[feature],
                gateway_route=component.needs.gateway_route,
                user_config_schema=catalogue_service._schema(component),
            )
        )
    return envelope(answer, type="component type", pk="type", links=catalogue_endpoints.LINKS)


async def usage_before(
    session: SessionDep,
    account_id: AccountId,
    from_: Annotated[
        str | None,
        usage_endpoints._day_query("First day (UTC), default: to - 29 days", alias="from"),
    ] = None,
    to: Annotated[str | None, usage_endpoints._day_query("Last day (UTC), default: today")] = None,
) -> usage_schemas.Usage:
    first, last = usage_service.report_days(
        usage_endpoints._day(from_, "from"), usage_endpoints._day(to, "to"), utc_today()
    )
    result = await session.execute(
        select(AccountUsage)
        .where(
            AccountUsage.account_id == account_id,
            AccountUsage.day >= first,
            AccountUsage.day <= last,
        )
        .order_by(AccountUsage.day)
    )
    rows = {row.day: row for row in result.scalars()}
    days: list[usage_schemas.DayUsage] = []
    for offset in range((last - first).days + 1):
        day = first + timedelta(days=offset)
        row = rows.get(day)
        days.append(
            usage_schemas.DayUsage(
                day=day,
                lines_stored=row.lines_stored if row else 0,
                bytes_stored=row.bytes_stored if row else 0,
                lines_excluded=row.lines_excluded if row else 0,
                bytes_excluded=row.bytes_excluded if row else 0,
                lines_fallback=row.lines_fallback if row else 0,
            )
        )
    totals = usage_schemas.UsageTotals(
        lines_stored=sum(item.lines_stored for item in days),
        bytes_stored=sum(item.bytes_stored for item in days),
        lines_excluded=sum(item.lines_excluded for item in days),
        bytes_excluded=sum(item.bytes_excluded for item in days),
        lines_fallback=sum(item.lines_fallback for item in days),
    )
    return usage_schemas.Usage(from_=first, to=last, days=days, totals=totals)


async def pipeline_usage_before(
    session: SessionDep,
    account_id: AccountId,
    from_: Annotated[str | None, Query(alias="from")] = None,
    to: Annotated[str | None, Query()] = None,
    bucket: Annotated[str | None, Query()] = None,
    pipeline_id: Annotated[str | None, Query(max_length=36)] = None,
    traffic: Annotated[live_schemas.Traffic, Query()] = "both",
) -> Envelope[list[live_schemas.UsagePoint]]:
    to_ms = epoch_ms(to, name="to", end=True) if to else now_ms()
    from_ms = epoch_ms(from_, name="from", end=False) if from_ else to_ms - 3_600_000
    from_ms = min(from_ms, to_ms)
    size = live_service.bucket_ms(bucket)
    if (to_ms - from_ms) // size > live_service.MAX_BUCKETS:
        raise ValidationFailed("from..to holds more than 10000 buckets: use a larger bucket",
                               context="querystring")  # fmt: skip
    start = PipelineUsage.bucket_ms - PipelineUsage.bucket_ms % size
    query = (
        select(
            PipelineUsage.pipeline_id,
            PipelineUsage.component_id,
            start.label("start"),
            func.sum(PipelineUsage.ingress_events),
            func.sum(PipelineUsage.ingress_bytes),
            func.sum(PipelineUsage.egress_events),
            func.sum(PipelineUsage.egress_bytes),
        )
        .where(
            PipelineUsage.account_id == account_id,
            PipelineUsage.bucket_ms >= from_ms - from_ms % 60_000,
            PipelineUsage.bucket_ms <= to_ms,
        )
        .group_by(PipelineUsage.pipeline_id, PipelineUsage.component_id, start)
        .order_by(start, PipelineUsage.pipeline_id, PipelineUsage.component_id)
    )
    if pipeline_id:
        query = query.where(PipelineUsage.pipeline_id == pipeline_id)
    inward, outward = traffic in ("ingress", "both"), traffic in ("egress", "both")
    points = []
    for pid, component, begin, in_events, in_bytes, out_events, out_bytes in await session.execute(
        query
    ):
        points.append(
            live_schemas.UsagePoint(
                pipeline_id=pid,
                component_id=component,
                bucket=datetime.fromtimestamp(int(begin) / 1000, tz=UTC),
                bucket_ms=int(begin),
                ingress_events=int(in_events or 0) if inward else None,
                ingress_bytes=int(in_bytes or 0) if inward else None,
                egress_events=int(out_events or 0) if outward else None,
                egress_bytes=int(out_bytes or 0) if outward else None,
            )
        )
    links = live_endpoints.USAGE_LINKS
    return envelope(points, type="pipeline usage", pk=None, links=links)


async def view_deliveries_before(
    view_id: ViewIdPath, session: SessionDep, account_id: AccountId, principal: CurrentPrincipal
) -> list[view_schemas.Delivery]:
    await view_service.own_view(session=session, account_id=account_id, view_id=view_id)
    visible = view_service._scope_test(principal.scope, account_id)
    result = await session.execute(
        select(AlertDelivery)
        .where(AlertDelivery.account_id == account_id, AlertDelivery.view_id == view_id)
        .order_by(AlertDelivery.fired_ms.desc(), AlertDelivery.id)
        .limit(500)
    )
    entries = []
    for row in result.scalars():
        kept = row.payload.get("matches")
        lines = [line for line in kept if visible(line)] if isinstance(kept, list) else []
        entries.append(
            view_schemas.Delivery(
                id=row.id,
                fired=row.fired_ms,
                event=row.event,
                integration=row.integration,
                channel=row.channel_key.split(":", 1)[0],
                status=row.status,
                attempts=row.attempts,
                last_error=row.last_error,
                finished=row.finished_ms,
                count=int(row.payload.get("count", 0)) if principal.scope is None else len(lines),
                lines=lines,
            )
        )
    return entries


FEATURES = "/v3/enterprise/account/{account_id}/features"
BEFORE = {
    "/v1/config/board/{boardid}": board_before,
    "/v1/config/members/{email}": member_before,
    "/v3/pipeline/{pipeline_id}": pipeline_before,
    "/v1/config/groups": groups_before,
    "/v1/config/groups/{groupId}": group_before,
    "/v1/config/categories/{type}": categories_before,
    "/v1/config/categories/{type}/{id}": category_before,
    "/v1/config/parsing/templates": templates_before,
    "/v1/config/parsing/templates/{id}": template_before,
    "/v1/config/archiving": archiving_before,
    "/v3/pipeline/gateway-route": gateway_routes_before,
    "/v3/pipeline/gateway-route/{gateway_route_id}": gateway_route_before,
    "/v3/pipeline/gateway-route/{gateway_route_id}/access-key": _keys_before(signing=False),
    "/v3/pipeline/gateway-route/{gateway_route_id}/signing-key": _keys_before(signing=True),
    **NODE_READS,
    FEATURES: features_before,
    "/v1/config/index-rate": index_rate_before,
    **ALERT_READS,
    "/v1/config/ingestion/status": ingestion_status_before,
    "/v1/auth/preferences": preferences_before,
    "/info": info_before,
    "/orgs": orgs_before,
    "/v1/auth/session": whoami_before,
    "/v3/auth/account": auth_accounts_before,
    "/v3/auth/account/{account}": auth_account_before,
    "/v1/config/archiving/status": archiving_status_before,
    "/v1/config/view/{viewID}/alerts": view_deliveries_before,
    "/v3/pipeline/component-type": component_types_before,
    "/v1/usage": usage_before,
    "/v3/pipeline/metric/usage": pipeline_usage_before,
}
# The account's index-rate alert (the other account has none: the defaults): a float
# z-score, every channel, a webhook with headers and a body template, Unicode.
INDEX_RATE = {
    "max_lines": 10**12 + 1,
    "max_z_score": 2.675,
    "threshold_alert": "both",
    "frequency": "hourly",
    "channels": {
        "email": ["ops@example.com", "Ünï@example.com"],
        "pagerduty": ["pd-key"],
        "slack": ["https://hooks.slack.com/services/T/B/X"],
        "webhook": [
            {
                "url": "https://8.8.8.8/rate?q=“x”",
                "method": "PUT",
                "headers": {"X-A": "b \u2028 ✓", "Content-Type": "application/json"},
                "bodyTemplate": {"lines": "{{count}}", "n": [1, 2.5, None, "é"]},
            },
            {"url": "https://8.8.4.4/plain"},
        ],
    },
    "enabled": True,
}
# The account's archiving (the other account has none: a 404).
ARCHIVING = {"integration": "gcs", "bucket": "example", "projectid": "Ü “id” \u2028 ✓"}
# A parsing template's pattern with fields of each kind.
PATTERN = r"%{WORD:method} %{URIPATH:path} took (?P<ms>\d+)ms status=%{INT:status:int}"
UNKNOWN_ID = "0123456789abcdef01234567"
# Integers beyond 64 bits (orjson neither reads nor writes them exactly), floats, text.
GRAPHS = [
    {"big": 123456789012345678901234567890, "low": -9223372036854775809, "max": 2**64 - 1},
    {"f": [1e20, 0.1, -0.0, 1.0000000000000002, 5e-324], "t": "é\u2028</script>\u0001"},
    {"nested": {"a": [None, True, False, {"b": []}]}},
]


async def _ok(response: Any) -> Any:
    assert response.status_code in (200, 201), response.text
    return response.json()


async def _account_with_items(client: AppClient, account: AccountCtx) -> dict[str, list[str]]:
    """Boards, members and pipelines of the account: their ids (e-mails for members)."""
    h = account.headers
    boards = [
        (await _ok(await client.post("/v1/config/board", json=body, headers=h)))["boardid"]
        for body in ({"title": "plain"}, {"title": "graphs", "graphs": GRAPHS})
    ]
    empty = await make_pipeline(client, account, "empty")
    full = await make_pipeline(client, account, "full")
    route, source = await source_with_route(client, account, full)
    condition = {"field": ".level", "str_operator": "exists"}
    processor = await add_node(
        client, account, full, "processor",
        {"type": "filter", "inputs": [source], "user_config": {"condition": condition}},
    )  # fmt: skip
    destination = await add_node(
        client, account, full, "destination",
        {"type": "http", "inputs": [processor], "user_config": {"uri": "https://x.example"}},
    )  # fmt: skip
    await publish(client, account, full)
    # a second source on the same route, and a route with every field and no source
    await add_node(
        client, account, empty, "source", {"type": "http", "gateway_route_id": route}
    )  # fmt: skip
    bare = {"title": "Ü “bare”", "description": "d\u2028", "consumer_id": "c-1"}
    lone = await _ok(await client.post("/v3/pipeline/gateway-route", json=bare, headers=h))
    # the route's keys: two access keys (one titled, one not), two signing keys; the
    # route with every field holds none
    keys = f"/v3/pipeline/gateway-route/{route}"
    for body in ({"title": "Ü “key” \u2028"}, {"id": "", "gateway_route_id": route}):
        await _ok(await client.post(f"{keys}/access-key", json=body, headers=h))
    for secret in ("s" * 32, "Ünïcode “secret” ✓ " * 3):
        await _ok(await client.put(f"{keys}/signing-key", json={"key": secret}, headers=h))
    group = await _ok(await client.post("/v1/config/groups", json={"name": "g"}, headers=h))
    scoped = {"name": "Ünï “scoped”", "description": "d\u2028", "apps": ["web", "Api"],
              "hosts": ["h1"], "query": "level:error app:web"}  # fmt: skip
    scope = await _ok(await client.post("/v1/config/groups", json=scoped, headers=h))
    lonely = await _ok(await client.post("/v1/config/groups", json={"name": "none"}, headers=h))
    grouped = await add_person(client.database_url, account_id=account.account_id, role="admin")
    also = await add_person(client.database_url, account_id=account.account_id, role="member")
    for person, groups in ((grouped, [group["id"], scope["id"]]), (also, [group["id"]])):
        await _ok(
            await client.put(
                f"/v1/config/members/{person.email}", json={"groups": groups}, headers=h
            )
        )
    categories: dict[str, list[str]] = {}
    for type_ in ("views", "boards", "screens"):
        for name in (f"{type_} one", "Ünï “two”"):
            made = await client.post(
                f"/v1/config/categories/{type_}", json={"name": name}, headers=h
            )
            categories.setdefault(type_, []).append((await _ok(made))["id"])
    templates = [
        (await _ok(await client.post("/v1/config/parsing/templates", json=body, headers=h)))["id"]
        for body in (
            {"name": "draft", "pattern": PATTERN},
            {"name": "on", "pattern": PATTERN, "state": "active"},
            {"name": "off “Ü”", "pattern": "(?P<all>.+)", "state": "inactive"},
            {"name": "one", "pattern": "took %{INT:n:int}"},
        )
    ]
    order = {"ids": templates[::-1]}
    await _ok(await client.put("/v1/config/parsing/templates/order", json=order, headers=h))
    alerts = await _alerts(client, account, full, source, processor)
    invited = f"invited-{account.account_id[:6]}@example.com"
    await _ok(
        await client.post(
            "/v1/config/members", json={"email": invited, "role": "member"}, headers=h
        )
    )
    owner = account.data["owner"]["email"]
    views = [await _view_with_deliveries(client, account)]
    await _usage_days(client, account)
    await _pipeline_usage(client, account, full, [source, processor, destination])
    return {
        "/v1/config/board/{boardid}": boards,
        "/v1/config/members/{email}": [owner, grouped.email, invited],
        "/v3/pipeline/{pipeline_id}": [empty, full],
        "/v1/config/groups": [""],
        "/v1/config/groups/{groupId}": [group["id"], scope["id"], lonely["id"]],
        "/v1/config/categories/{type}": list(categories),
        # Each type's categories under their own type and under another one (a 404).
        "/v1/config/categories/{type}/{id}": [
            f"{type_}/{category}" for type_, ids in categories.items() for category in ids
        ]
        + [f"views/{categories['boards'][0]}", f"screens/{categories['views'][1]}"],
        "/v1/config/parsing/templates": [""],
        "/v1/config/parsing/templates/{id}": templates,
        "/v1/config/archiving": [""],
        "/v1/config/index-rate": [""],
        "/v1/config/ingestion/status": [""],
        "/v1/auth/preferences": [""],
        "/info": [""],
        "/orgs": [""],
        "/v1/auth/session": [""],
        "/v3/auth/account": [""],
        "/v3/auth/account/{account}": [account.account_id, account.data["account"]],
        "/v1/config/archiving/status": [""],
        "/v1/config/view/{viewID}/alerts": views,
        # the default 30 days, a range with counted days, the first days a counter can
        # have, one day, too many days, the wrong way round, not a day
        "/v1/usage": [
            "",
            "?from=2026-01-01&to=2026-01-31",
            "?to=0001-01-05",
            "?from=2026-01-03&to=2026-01-03",
            "?from=2025-01-01&to=2026-12-31",
            "?from=2026-02-01&to=2026-01-01",
            "?from=2026-1-1",
        ],
        # the last hour; minute, hour, day and two-minute buckets over the counted hours;
        # one pipeline (and one of none); each direction; bad values (400s)
        "/v3/pipeline/metric/usage": [
            "",
            *(f"{HOURS}&bucket={size}" for size in ("minute", "hour", "day", "120", "59", "bogus")),
            f"?from={USAGE_FROM // 1000}&to={(USAGE_FROM + 7_200_000) // 1000}&pipeline_id={full}",
            f"{HOURS}&pipeline_id={empty}",
            f"{HOURS}&traffic=ingress",
            f"{HOURS}&traffic=egress",
            "?traffic=bogus",
            "?from=0&bucket=60",
            "?from=soon",
            f"?pipeline_id={'x' * 37}",
        ],
        # each kind, all, and a kind that is none (a 400)
        "/v3/pipeline/component-type": [
            "",
            *(f"?kind={kind}" for kind in ("source", "processor", "destination", "bogus")),
        ],
        "/v3/pipeline/gateway-route": [""],
        "/v3/pipeline/gateway-route/{gateway_route_id}": [route, lone["data"]["id"]],
        "/v3/pipeline/gateway-route/{gateway_route_id}/access-key": [route, lone["data"]["id"]],
        "/v3/pipeline/gateway-route/{gateway_route_id}/signing-key": [route, lone["data"]["id"]],
        **_node_ids(
            [empty, full], {"source": source, "processor": processor, "destination": destination}
        ),
        **_alert_ids([empty, full], source, processor, destination, alerts),
    }


# Lines an alert kept, as export gives them: in and out of an `app:web` scope, with
# floats, integers beyond 64 bits and Unicode in their meta.
KEPT_LINES = [
    {"_ts": 1_700_000_000_000, "_line": "card ok “Ü” \u2028", "_app": "web", "_host": "h1",
     "level": "error", "_meta": {"f": [1e20, 0.1, -0.0, 5e-324], "big": 2**70}, "_tag": ["t"]},
    {"_ts": 1_700_000_000_001, "_line": "card 4111 secret", "_app": "secretapp",
     "_host": "h2", "level": "info", "_file": "/var/log/x.log"},
]  # fmt: skip


# The first minute of the pipelines' counted hours (2026-01-02 10:00 UTC), and the two.
USAGE_FROM = 1_767_348_000_000
HOURS = f"?from={USAGE_FROM}&to={USAGE_FROM + 7_200_000}"


async def _pipeline_usage(
    client: AppClient, account: AccountCtx, pipeline: str, components: list[str]
) -> None:
    """The pipeline's components' counters in minutes of two hours from USAGE_FROM and in
    the last minutes (so the default hour has some), as the workers add them."""
    now = now_ms() // 60_000 * 60_000
    minutes = [USAGE_FROM + n * 60_000 for n in (0, 1, 59, 61, 119)] + [now - 120_000, now]
    database = Database.connect(client.database_url)
    try:
        async with database.write_sessions() as session:
            for n, component in enumerate(components):
                for m, bucket in enumerate(minutes):
                    session.add(
                        PipelineUsage(
                            account_id=account.account_id, pipeline_id=pipeline,
                            component_id=component, bucket_ms=bucket,
                            ingress_events=n + m + 1, ingress_bytes=2**33 * (m + 1),
                            egress_events=n * m, egress_bytes=(n + 1) * 100,
                        )
                    )  # fmt: skip
            await session.commit()
    finally:
        await database.dispose()


async def _usage_days(client: AppClient, account: AccountCtx) -> None:
    """The account's counters on three days of January 2026 (one with each counter) and
    today, as ingestion keeps them."""
    database = Database.connect(client.database_url)
    try:
        async with database.write_sessions() as session:
            for day, n in ((date(2026, 1, 2), 1), (date(2026, 1, 3), 2), (date(2026, 1, 31), 3),
                           (utc_today(), 4)):  # fmt: skip
                session.add(
                    AccountUsage(
                        account_id=account.account_id, day=day, lines_stored=10**n,
                        bytes_stored=2**40 * n, lines_excluded=n, bytes_excluded=n * 7,
                        lines_fallback=n - 1,
                    )
                )  # fmt: skip
            await session.commit()
    finally:
        await database.dispose()


async def _view_with_deliveries(client: AppClient, account: AccountCtx) -> str:
    """A view of ``account`` (its id) with three deliveries: a trigger that kept
    KEPT_LINES, a resolve at the same moment, a failure."""
    made = await client.post("/v1/config/view", json=view_body(), headers=account.headers)
    view_id: str = (await _ok(made))["viewID"]
    database = Database.connect(client.database_url)
    rows = [
        ("trigger", "delivered", 1, None, 1_700_000_000_500, {"count": 3, "matches": KEPT_LINES}),
        ("resolve", "pending", 0, None, None, {"count": 0}),
        ("trigger", "failed", 5, "Ü “boom” \u2028", 1_700_000_009_000, {"count": 1, "matches": []}),
    ]  # fmt: skip
    try:
        async with database.write_sessions() as session:
            for n, (event, status, attempts, error, finished, payload) in enumerate(rows):
                session.add(
                    AlertDelivery(
                        account_id=account.account_id, view_id=view_id, source="view",
                        channel_key=f"{n % 2}:webhook", integration="webhook",
                        channel_sealed="x", event=event, payload=payload, status=status,
                        attempts=attempts, fired_ms=1_700_000_000_000 - (n // 2),
                        next_attempt_ms=0, last_error=error, finished_ms=finished,
                    )
                )  # fmt: skip
            await session.commit()
    finally:
        await database.dispose()
    return view_id


def _alert(name: str, *, absence: bool, service: dict[str, Any], active: bool) -> dict[str, Any]:
    """A pipeline alert's body: a threshold alert with a float and Unicode, or an absence."""
    evaluation: dict[str, Any] = {"alert_type": "absence", "event_type": "log"}
    if not absence:
        expression = {"field": ".n", "str_operator": "greater", "value": 2.675, "negate": {}}
        evaluation = {
            "alert_type": "threshold",
            "event_type": "log",
            "operation": "SUM",
            "conditional": {"expressions": [expression], "logical_operation": "OR"},
            "group_by": [".host", ".Ünï"],
        }
    return {
        "inputs": [],
        "alert_config": {
            "general": {"name": name, "description": "d \u2028 “x”"},
            "evaluation": evaluation,
            "alert_payload": {"service": service, "throttling": {"window_secs": 90}},
        },
        "active": active,
    }


async def _alerts(
    client: AppClient, account: AccountCtx, pipeline: str, source: str, processor: str
) -> list[str]:
    """Two alerts on the source (a webhook with headers and a token, a log analysis one),
    one on the processor under the ``transform`` segment and one under ``processor``."""
    hook = {"name": "webhook", "uri": "https://8.8.8.8/hook?q=“x”", "method": "put",
            "auth": {"strategy": "bearer", "token": "tök"},
            "headers": [{"header_name": "X-A", "header_value": "ü ✓ \u2028"}]}  # fmt: skip
    analysis = {"name": "log_analysis", "ingestion_key": "ik-1"}
    made = []
    for segment, component, body in (
        ("source", source, _alert("Ünï “threshold”", absence=False, service=hook, active=True)),
        ("source", source, _alert("absent", absence=True, service=analysis, active=False)),
        ("transform", processor, _alert("t", absence=True, service=analysis, active=True)),
        ("processor", processor, _alert("p", absence=False, service=analysis, active=True)),
    ):
        where = f"/v3/pipeline/{pipeline}/{segment}/{component}/alert"
        made.append(
            (await _ok(await client.post(where, json=body, headers=account.headers)))["data"]["id"]
        )
    return made


def _alert_ids(
    pipelines: list[str], source: str, processor: str, destination: str, alerts: list[str]
) -> dict[str, list[str]]:
    """What to read at each alert path (after ``/v3/pipeline/``): each alert in its
    pipeline and in another; a component's alerts under each segment, of a component with
    none, of another kind; a component's alert under another component; a wrong kind."""
    empty, full = pipelines
    on_source, on_processor = alerts[:2], alerts[2:]
    return {
        "/v3/pipeline/{pipeline_id}/alert/{alert_id}": [
            *(f"{full}/alert/{alert}" for alert in alerts),
            f"{empty}/alert/{alerts[0]}",
        ],
        "/v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert": [
            f"{full}/source/{source}/alert",
            f"{full}/transform/{processor}/alert",
            f"{full}/sink/{destination}/alert",
            f"{full}/sink/{source}/alert",
            f"{empty}/source/{source}/alert",
            f"{full}/bogus/{source}/alert",
            f"{full}/source/{UNKNOWN_ID}/alert",
        ],
        "/v3/pipeline/{pipeline_id}/{kind}/{component_id}/alert/{alert_id}": [
            *(f"{full}/source/{source}/alert/{alert}" for alert in alerts),
            *(f"{full}/transform/{processor}/alert/{alert}" for alert in on_processor),
            f"{empty}/source/{source}/alert/{on_source[0]}",
            f"{full}/bogus/{source}/alert/{on_source[0]}",
        ],
        "/v3/pipeline/{pipeline_id}/processor/{component_id}/alert": [
            f"{full}/processor/{processor}/alert",
            f"{full}/processor/{source}/alert",
        ],
        "/v3/pipeline/{pipeline_id}/processor/{component_id}/alert/{alert_id}": [
            *(f"{full}/processor/{processor}/alert/{alert}" for alert in alerts)
        ],
        "/v3/pipeline/{pipeline_id}/destination/{component_id}/alert": [
            f"{full}/destination/{destination}/alert",
            f"{full}/destination/{source}/alert",
        ],
        "/v3/pipeline/{pipeline_id}/destination/{component_id}/alert/{alert_id}": [
            f"{full}/destination/{destination}/alert/{alerts[0]}"
        ],
    }


def _node_ids(pipelines: list[str], nodes: dict[str, str]) -> dict[str, list[str]]:
    """What to read at each node path (after ``/v3/pipeline/``): each pipeline's list,
    each node under its own kind and under another one (a 404)."""
    found: dict[str, list[str]] = {}
    for segment, kind in NODE_SEGMENTS.items():
        path = f"/v3/pipeline/{{pipeline_id}}/{segment}"
        found[path] = [f"{pipeline}/{segment}" for pipeline in pipelines]
        found[path + "/{node_id}"] = [
            f"{pipelines[1]}/{segment}/{node}" for node in nodes.values()
        ] + [f"{pipelines[0]}/{segment}/{nodes[kind]}"]  # not that pipeline's node
    return found


def _contexts(app: FastAPI) -> dict[str, Any]:
    return {
        context.path: context
        for context in route_contexts(app)
        if context.path in BEFORE and "GET" in (context.methods or ())
    }


def _ids(path: str, own: list[str], others: list[str]) -> list[str]:
    """Every id to read at ``path``: the account's own, another account's, unknown and
    invalid ones (too long, or not an id's characters: a 400 from the path's rules)."""
    if "{" not in path:
        return own  # a list: its path as it is
    if path.endswith(("-key", "/features", "}/alerts")):  # the id, then its last segment
        tail = path.rpartition("/")[2]
        ids = [*own, *others, UNKNOWN_ID, "x" * 40, "not an id"]
        return [f"{found}/{tail}" for found in ids]
    if "/alert" in path:  # the pipeline, the component and the alert each unknown, invalid
        pipeline, _, rest = own[0].partition("/")
        bad = [f"{UNKNOWN_ID}/{rest}", f"{'x' * 40}/{rest}"]
        if "{component_id}" in path:
            segment, _, tail = rest.split("/", 2)
            bad.append(f"{pipeline}/{segment}/{'x' * 40}/{tail}")
        if path.endswith("{alert_id}"):
            base = own[0].rpartition("/")[0]
            bad += [f"{base}/{UNKNOWN_ID}", f"{base}/{'x' * 40}", f"{base}/not an id"]
        return [*own, *others, *bad]
    if path.startswith("/v3/pipeline/{pipeline_id}/"):
        tail = path.split("/")[4]  # the node segment
        bad = [f"{UNKNOWN_ID}/{tail}", f"{'x' * 40}/{tail}"]
        if path.endswith("{node_id}"):
            pipeline = own[0].partition("/")[0]
            bad = [f"{pipeline}/{tail}/{UNKNOWN_ID}", f"{pipeline}/{tail}/{'x' * 40}"]
        return [*own, *others, *bad]
    if path.endswith("{type}"):
        return [*own, "bogus", "Views", "x" * 40]
    if path.endswith("{type}/{id}"):
        bad = ["x" * 40, "not an id", UNKNOWN_ID]
        return [*own, *others, *(f"views/{found}" for found in bad), f"bogus/{own[0][6:]}"]
    ids = [*own, *others, UNKNOWN_ID, "x" * 40, "not an id"]
    if path.endswith("{email}"):
        ids += [own[1].upper(), f" {own[1]} ", "nobody@example.com", "a%00b", "x" * 400]
    return ids


# Over a thousand comparisons, each both handlers' answer to one request: 46-62 s alone
# on two cores, and past the suite's 300 s hang limit with two other suites beside it
# (the seventeenth session's run a1). The limit is for hangs, not for this much work.
@pytest.mark.timeout(900)
async def test_raw_item_reads_answer_what_the_orm_endpoints_answered(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    account = await make_account(client, tenant, company="Ünïcode “Co”")
    other = await make_account(client, await make_tenant(client.database_url), company="other")
    own = await _account_with_items(client, account)
    others = await _account_with_items(client, other)
    await _ok(await client.post("/v1/config/archiving", json=ARCHIVING, headers=account.headers))
    for run in ({"day": "2026-01-02"}, None, {"day": "2025-12-31"}):  # None: yesterday
        where = "/v1/config/archiving/run"
        await _ok(await client.post(where, json=run, headers=account.headers))
    # an account of the enterprise with a feature enabled, one with none, another's
    sibling = await make_account(client, tenant, company="sibling")
    for feature in sorted(enterprise_service.KNOWN_FEATURES):
        where = f"/v3/enterprise/account/{account.account_id}/features/{feature}"
        await _ok(await client.put(where, headers=tenant.headers))
    own[FEATURES] = [account.account_id, sibling.account_id]
    await _ok(await client.put("/v1/config/index-rate", json=INDEX_RATE, headers=account.headers))
    others[FEATURES] = [other.account_id]
    # the account's ingestion suspended (the other's active)
    suspend = await _ok(await client.post("/v1/config/ingestion/suspend", headers=account.headers))
    confirm = "/v1/config/ingestion/suspend/confirm"
    await _ok(await client.post(confirm, json=suspend, headers=account.headers))
    browsers = {}
    for role in ("owner", "admin", "member", "readonly"):
        person = await add_person(client.database_url, account_id=account.account_id, role=role)
        browsers[role] = (await sign_in_person(client, person)).headers
    # a member whose groups hold app:web only (the view alert log shows them less)
    web_only = {"name": "web only", "apps": ["web"]}
    group = await _ok(
        await client.post("/v1/config/groups", json=web_only, headers=account.headers)
    )
    reader = await add_person(client.database_url, account_id=account.account_id, role="member")
    where = f"/v1/config/members/{reader.email}"
    await _ok(await client.put(where, json={"groups": [group["id"]]}, headers=account.headers))
    scoped = {"scoped browser": (await sign_in_person(client, reader)).headers}
    credentials = {
        "none": {},
        "wrong": {"Authorization": "Token not-a-key"},
        "account": account.headers,
        "enterprise": tenant.headers,
        "enterprise as the account": tenant.as_account(account.account_id),
        "another account": other.headers,
        **{f"{role} browser": headers for role, headers in browsers.items()},
    }
    # the admin's preferences set (the others': the defaults)
    history = "/v1/auth/preferences/query-history"
    for query in ("level:error", "app:“Ünï” \u2028 ✓"):
        await _ok(await client.post(history, json={"query": query}, headers=browsers["admin"]))
    utc = {"utc": True}
    await _ok(await client.patch("/v1/auth/preferences", json=utc, headers=browsers["admin"]))
    app: FastAPI = client._transport.app  # type: ignore[attr-defined]
    contexts = _contexts(app)
    assert set(contexts) == set(BEFORE)
    compared = 0
    statuses: set[int] = set()
    bodies: list[bytes] = []
    for path, context in sorted(contexts.items()):
        now = context.app
        assert isinstance(now, PlainHandler), path  # the raw read, on the plain handler
        # with the router's dependencies (the credential and the permission), as served
        before = APIRoute(
            context.path, BEFORE[path], methods=["GET"], dependencies=list(context.dependencies)
        ).app
        head = path.partition("{")[0]
        for found in _ids(path, own[path], others[path]):
            # a group's scope changes what a reader sees of the view alert log only
            readers = {**credentials, **scoped} if path.endswith("/alerts") else credentials
            for who, headers in readers.items():
                where = f"{who} GET {head}{found!r}"
                mine = await same_answer(
                    client, context, before, where, head + found, headers=headers
                )
                compared += 1
                statuses.add(mine.status_code)
                bodies.append(mine.content)
    assert compared > 1000
    assert any(b"123456789012345678901234567890" in body for body in bodies)
    assert any(b'"outputs":[{"id"' in body or b'"kind":"destination"' in body for body in bodies)
    assert any(b'"members":["' in body and b'","' in body for body in bodies)  # two members
    assert any(b'"fields":["method","path","status","ms"]' in body for body in bodies)
    assert any(b'"projectid":"' in body for body in bodies)
    assert any(body.count(b'"source_id"') >= 2 for body in bodies)  # a route's two sources
    assert any(body.count(b'"hint":"') == 2 and b'"title":null' in body for body in bodies)
    assert any(body.count(b'"fingerprint":"') == 2 for body in bodies)  # two signing keys
    assert any(b'"type":"access key"' in body and b'"data":[]' in body for body in bodies)
    assert any(b"archiving is not configured" in body for body in bodies)
    assert any(b'"enabled":true' in body and b'"created":"' in body for body in bodies)
    assert any(b'"max_z_score":2.675' in body and b'"bodyTemplate":"' in body for body in bodies)
    assert any(b'"max_lines":0' in body or b'"webhook":[]' in body for body in bodies)
    assert any(b'"enabled":false,' in body and b'"created":null' in body for body in bodies)
    assert any(b'"alert_payload":{"service":{"name":"webhook"' in body for body in bodies)
    assert any(b'"type":"alert"' in body and body.count(b'"component_kind":"source"') == 2
               for body in bodies)  # fmt: skip
    assert any(b'"value":2.675' in body and b'"active":false' in body for body in bodies)
    assert any(b'"status":"suspended","suspended":true,"suspended_at":1' in body for body in bodies)
    assert any(
        b'"status":"active","suspended":false,"suspended_at":null' in body for body in bodies
    )
    assert any(b'"utc":true,"query_history":["app:' in body for body in bodies)
    assert any(b'"utc":false,"query_history":[]' in body for body in bodies)
    assert any(b'"account":"\xc3\x9cn\xc3\xafcode' in body and b'"role":"admin"' in body
               for body in bodies)  # fmt: skip
    assert any(body.startswith(b'[{"id":"') and b'"servicekeys":[]},{"id"' in body
               for body in bodies)  # fmt: skip
    assert any(b'"integration":"gcs","days":[{"day":"' in body and body.count(b'"day"') == 3
               for body in bodies)  # fmt: skip
    assert any(b'"integration":null,"days":[]' in body for body in bodies)
    # the pipelines' usage metric: buckets summed over components, counts past 32 bits
    assert any(b'"type":"pipeline usage"' in body and b'"bucket":"2026-01-02T10:00:00Z"' in body
               and b'"ingress_bytes":8589934592,' in body for body in bodies)  # fmt: skip
    assert any(b'"ingress_events":null' in body and b'"egress_events":0' in body
               for body in bodies)  # fmt: skip
    # usage per day: a range with counted days (a total past 32 bits), today's counters
    assert any(b'"days":[{"day":"2026-01-01","lines_stored":0' in body
               and b'"totals":{"lines_stored":1110,"bytes_stored":6597069766656,' in body
               for body in bodies)  # fmt: skip
    assert any(b'"lines_stored":10000,"bytes_stored":4398046511104' in body for body in bodies)
    # the component types: a gated type enabled for the account, and not for the other
    assert any(b'"type":"throttle","aliases":[' in body and b'"enabled":true,"gateway' in body
               and b'"enabled":false' not in body for body in bodies)  # fmt: skip
    assert any(b'"feature":"throttle-processor","enabled":false' in body for body in bodies)
    # the view alert log: three entries, the trigger's lines (two, or the scope's one)
    assert any(body.count(b'"event":"') == 3 and b'"count":3,"lines":[{"_ts"' in body
               and b'"big":1180591620717411303424' in body for body in bodies)  # fmt: skip
    assert any(b'"count":1,"lines":[{"_ts"' in body and b"secret" not in body
               and b'"event":"resolve"' in body for body in bodies)  # fmt: skip
    assert statuses >= {200, 400, 401, 403, 404}, statuses
