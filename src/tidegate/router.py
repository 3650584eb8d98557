"""Every router is registered here. Each management router is included with the
credential check and the permission its operations need (tidegate.auth.roles), so a
management endpoint is authenticated unless it is deliberately put elsewhere, and
tests/auth/test_role_matrix.py fails for one that declares no permission."""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI

from tidegate.aggregate.endpoints import router as aggregate_router
from tidegate.alerts.index_rate.endpoints import router as index_rate_router
from tidegate.api import health, metrics
from tidegate.archive.endpoints import router as archiving_router
from tidegate.auth.dependencies import authenticate, authenticate_export
from tidegate.auth.permissions import by_method, requires
from tidegate.auth.roles import Permission
from tidegate.boards.endpoints import router as boards_router
from tidegate.categories.endpoints import router as categories_router
from tidegate.cli_auth.endpoints import login_router as cli_login_router
from tidegate.cli_auth.endpoints import router as cli_router
from tidegate.enterprise.endpoints import router as enterprise_router
from tidegate.exclusions.endpoints import router as exclusions_router
from tidegate.export.endpoints import router as export_router
from tidegate.export.endpoints import v1_router as export_v1_router
from tidegate.gateway.endpoints import router as gateway_router
from tidegate.groups.endpoints import router as groups_router
from tidegate.ingest.endpoints import router as ingest_router
from tidegate.keys.endpoints import router as keys_router
from tidegate.members.endpoints import router as members_router
from tidegate.parsing_templates.endpoints import router as parsing_templates_router
from tidegate.pipelines.catalogue_endpoints import router as component_types_router
from tidegate.pipelines.endpoints import router as pipelines_router
from tidegate.pipelines.gateway_endpoints import router as gateway_routes_router
from tidegate.pipelines.live_endpoints import router as pipeline_live_router
from tidegate.preferences.endpoints import router as preferences_router
from tidegate.runtime.simulation_endpoints import router as simulation_router
from tidegate.sessions.endpoints import account_router as auth_account_router
from tidegate.sessions.endpoints import router as sessions_router
from tidegate.suspensions.endpoints import router as suspensions_router
from tidegate.tail.endpoints import router as tail_router
from tidegate.tail.websocket import router as tail_socket_router
from tidegate.usage.endpoints import v1_router as usage_v1_router
from tidegate.usage.endpoints import v2_router as usage_v2_router
from tidegate.users.endpoints import router as users_router
from tidegate.views.endpoints import router as views_router

READ = Permission.READ
# Reads by anyone of the account; changes by the role that manages the resource.
CONFIG = by_method(read=READ, write=Permission.MANAGE)
CONTENT = by_method(read=READ, write=Permission.CONTENT)


def include_routes(target: FastAPI | APIRouter) -> None:
    """Register every router on ``target`` (the app), each one level deep: FastAPI
    matches included routers as a tree and walks it on every request, so nesting the
    management routers under a router of their own cost each request a level of it."""
    target.include_router(health.router)
    target.include_router(metrics.router)  # GET /metrics, no credentials
    target.include_router(gateway_router)  # its own credential: a route's access key
    # Ingestion keys only: management credentials do not apply here.
    target.include_router(ingest_router)
    # WebSocket live tail: authenticates its handshake itself with the management
    # resolver and checks the read permission (route dependencies are made for HTTP).
    target.include_router(tail_socket_router)
    # Sign-in, invitations and password resets: no credentials yet (sessions' own
    # reads declare theirs on the route).
    target.include_router(sessions_router)
    target.include_router(users_router)
    # logdna-cli: /login takes Basic e-mail:password; /info and /orgs any credential.
    target.include_router(cli_login_router)
    target.include_router(cli_router)
    target.include_router(auth_account_router)
    authenticated = Depends(authenticate)
    for router, permission in (
        (enterprise_router, requires(Permission.ENTERPRISE)),
        # A person's own settings, whatever their role (keys are refused: no person).
        (preferences_router, requires(Permission.SIGNED_IN)),
        # Keys are secrets that act as the account: reading them is the admin's too.
        (keys_router, requires(Permission.MANAGE)),
        # Archiving's configuration holds the bucket's keys: the admin's, reads too.
        (archiving_router, requires(Permission.MANAGE)),
        (exclusions_router, CONFIG),
        # Templates change how every line is stored, as exclusion rules do.
        (parsing_templates_router, CONFIG),
        (boards_router, CONTENT),
        # Views, their alerts and categories are content: a member changes them.
        (views_router, CONTENT),
        (categories_router, CONTENT),
        (index_rate_router, CONTENT),
        (members_router, CONFIG),
        (groups_router, CONFIG),
        # Suspending ingestion is the owner's (an account setting).
        (suspensions_router, by_method(read=READ, write=Permission.OWN)),
        (usage_v1_router, requires(READ)),
        (usage_v2_router, requires(READ)),
        # Gateway routes first: "/v3/pipeline/gateway-route" is not a pipeline id.
        (gateway_routes_router, CONFIG),
        # Before the pipelines: "/v3/pipeline/simulate-processor" is not a pipeline id.
        (simulation_router, CONFIG),
        # Before the pipelines: "/v3/pipeline/metric/usage" is not a pipeline's path.
        (pipeline_live_router, CONFIG),
        # Before the pipelines: "/v3/pipeline/component-type" is not a pipeline id.
        (component_types_router, CONFIG),
        (pipelines_router, CONFIG),
        # Data plane reads: account-scoped, management credentials, the per-key rate
        # limit counts each export page, aggregation and tail connection once.
        (aggregate_router, requires(READ)),
        (tail_router, requires(READ)),
    ):
        target.include_router(router, dependencies=[authenticated, permission])
    # The exports also take the platform's ?servicekey= (its CLI sends the key there).
    for router in (export_router, export_v1_router):
        target.include_router(router, dependencies=[Depends(authenticate_export), requires(READ)])
