"""The ASGI application factory."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.telemetry import TelemetryConfig

from tidegate.api.error_models import error_schemas
from tidegate.config import Settings

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from tidegate.ratelimit import RateLimiter

API_VERSION = "3.0.0"


def _limiter(settings: Settings, redis: Redis | None, per_minute: int) -> RateLimiter:
    """``redis``: the limiter's own client (ratelimit.limiter_redis), when Redis is set."""
    from tidegate.ratelimit import MemoryRateLimiter, NoLimit, RedisRateLimiter  # see create_app

    if per_minute <= 0:
        return NoLimit()
    if redis is not None:
        return RedisRateLimiter(
            redis,
            per_minute,
            prefix=settings.redis_prefix + "rl:",
            timeout_s=settings.rate_limit_redis_timeout_s,
        )
    return MemoryRateLimiter(per_minute)


def _telemetry(settings: Settings) -> TelemetryConfig:
    enabled = settings.otel
    return {"tracing": enabled, "metrics": enabled, "logs": enabled, "operation_spans": enabled}


def create_app(settings: Settings | None = None, *, freeze_heap: bool = False) -> FastAPI:
    # What the app is made of is imported when an app is made, not with this module:
    # FastAPI builds every route (its dependencies, parameters and response models) as
    # its module is imported, and the lifespan's objects bring SQLAlchemy, Redis, httpx
    # and the pipeline components (the error handlers SQLAlchemy's and asyncpg's errors).
    # So `import tidegate.app` (uvicorn's factory string, test collection) costs only the
    # factory. There is no import cycle behind this.
    from redis.asyncio import Redis

    from tidegate.alerts.runner import AlertRunner
    from tidegate.api import error_handlers, plain_routes
    from tidegate.api.body_guard import BodyGuard
    from tidegate.api.docs import build_docs_router
    from tidegate.api.request_metrics import RequestMetrics
    from tidegate.api.route_prefilter import prefilter_routers
    from tidegate.app_state import AppState
    from tidegate.archive.runner import ArchiveRunner
    from tidegate.auth.passwords import use_profile
    from tidegate.auth.secrets import server_sealer
    from tidegate.auth.session_activity import SessionActivity
    from tidegate.auth.shared_counts import SharedCounts
    from tidegate.auth.signed_query import ReplayGuard
    from tidegate.auth.signin_limit import FailureCounter
    from tidegate.db.engine import DEFAULT_POOL_PLAN, Database, pool_plan_for
    from tidegate.db.read_budget import ReadBudget
    from tidegate.gateway.forward import ForwardListener
    from tidegate.ingest.runtime import IngestRuntime
    from tidegate.kit.destination_guard import policy_from_setting
    from tidegate.logs.compactor import SegmentRunner
    from tidegate.logs.intake import LineIntake
    from tidegate.logs.segment_cache import attach_segment_storage
    from tidegate.logs.tail import create_tail_broker
    from tidegate.pipelines.sealed_config import bind_sealer
    from tidegate.ratelimit import limiter_redis
    from tidegate.router import include_routes
    from tidegate.runtime.runtime import build_runtime
    from tidegate.shutdown import close_step, on_stop_signal
    from tidegate.syslog.listener import SyslogListener
    from tidegate.web.endpoints import build_web_router

    settings = settings or Settings.from_env()
    use_profile(settings.password_hash_profile)
    policy_from_setting(settings.destination_allow)  # a mistyped allow-list fails start

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        plan = DEFAULT_POOL_PLAN
        if not settings.is_sqlite:
            # This worker's share of PostgreSQL's connections (`tidegate serve` has
            # checked the budget and passes the workers' count; a refusal fails start).
            plan = await pool_plan_for(
                settings.database_url, workers=settings.workers, override=settings.db_pool_size
            )
        db = Database.connect(
            settings.database_url,
            sqlite_synchronous=settings.sqlite_synchronous,
            statement_timeout_s=settings.db_statement_timeout_s,
            pool_timeout_s=settings.db_pool_timeout_s,
            pool_plan=plan,
            read_budget=ReadBudget(
                sqlite_steps=settings.read_budget_sqlite_steps,
                timeout_ms=int(settings.read_budget_pg_timeout_s * 1000),
                segment_s=settings.read_budget_segments_s,
                heavy_read_cpu_s=settings.read_heavy_cpu_s,
            ),
        )
        attach_segment_storage(db, settings)
        redis = Redis.from_url(settings.redis_url) if settings.redis_url else None
        limiter_client = (
            limiter_redis(settings.redis_url, timeout_s=settings.rate_limit_redis_timeout_s)
            if settings.redis_url
            else None
        )
        tail = create_tail_broker(redis, redis_prefix=settings.redis_prefix)
        # Several workers and no Redis: sign-in limits and signed-query replay protection
        # are shared through the database (docs/isolation.md).
        shared = SharedCounts(db) if redis is None and settings.workers > 1 else None
        ingest = IngestRuntime.from_settings(settings)
        ingest.start(db)  # its writer is the line intake's
        sealer = server_sealer(settings)
        # Pipeline nodes' configurations are sealed at rest: every session opens them.
        bind_sealer(db, sealer)
        app.state.tidegate = AppState(
            settings=settings,
            db=db,
            limiter=_limiter(settings, limiter_client, settings.rate_limit_per_minute),
            session_limiter=_limiter(
                settings, limiter_client, settings.session_rate_limit_per_minute
            ),
            sealer=sealer,
            redis=redis,
            tail=tail,
            ingest=ingest,
            pipelines=build_runtime(settings, redis=redis),
            intake=LineIntake(
                db=db,
                writer=ingest.writer,
                tail=tail,
                rules=ingest.rules,
                template_counts=ingest.template_counts,
            ),
            replay=ReplayGuard(redis, redis_prefix=settings.redis_prefix, shared=shared),
            signin_failures=FailureCounter(
                max_failures=settings.signin_max_failures,
                window_s=settings.signin_failure_window_s,
                redis=redis,
                redis_prefix=settings.redis_prefix,
                shared=shared,
            ),
            session_activity=SessionActivity(db),
        )
        await app.state.tidegate.tail.start()
        # Live-tail and tap streams end as soon as the server is asked to stop, rather
        # than holding the stop for uvicorn's whole graceful timeout (one callback: it is
        # chained in front of uvicorn's own handler).
        tail, taps = app.state.tidegate.tail, app.state.tidegate.pipelines.taps

        def end_streams() -> None:
            tail.end_streams()
            taps.end_streams()

        on_stop_signal(end_streams)
        await app.state.tidegate.pipelines.start(
            db, intake=app.state.tidegate.intake, sealer=app.state.tidegate.sealer
        )
        # Alert evaluation and delivery (docs/alerts.md): a task beside the server.
        alerts = (
            AlertRunner(db, app.state.tidegate.sealer, settings, intake=app.state.tidegate.intake)
            if settings.alerts_enabled
            else None
        )
        if alerts is not None:
            alerts.start()
        # Archiving (docs/archiving.md): each account's days written to its bucket.
        archive = (
            ArchiveRunner(db, app.state.tidegate.sealer, settings)
            if settings.archive_enabled
            else None
        )
        if archive is not None:
            archive.start()
        # The log store's compactor (docs/log-store.md, "Segments"): one at a time, by lease.
        compactor = SegmentRunner(db, settings) if settings.segments_enabled else None
        if compactor is not None:
            compactor.start()
        # Syslog (docs/syslog.md): a TCP listener in every worker, when a port is set.
        if settings.syslog_port is not None:
            app.state.tidegate.syslog = SyslogListener(state=app.state.tidegate, settings=settings)
            await app.state.tidegate.syslog.start()
        if settings.fluent_forward_port is not None:
            app.state.tidegate.forward = ForwardListener(
                state=app.state.tidegate, settings=settings
            )
            await app.state.tidegate.forward.start()
        if freeze_heap:
            freeze_start_up_heap()
        try:
            yield
        finally:
            # Each step bounded (shutdown.py): one that hangs is named in a warning and
            # left behind, and the server still stops.
            bound = settings.shutdown_step_timeout_s
            state = app.state.tidegate
            if state.syslog is not None:
                await close_step("syslog listener", state.syslog.close, timeout_s=bound)
            if state.forward is not None:
                await close_step("forward listener", state.forward.close, timeout_s=bound)
            if alerts is not None:
                await close_step("alert runner", alerts.close, timeout_s=bound)
            if archive is not None:
                await close_step("archive runner", archive.close, timeout_s=bound)
            if compactor is not None:
                await close_step("compactor", compactor.close, timeout_s=bound)
            await close_step(
                "pipeline runtime", partial(state.pipelines.aclose, db), timeout_s=bound
            )
            await close_step("ingest runtime", state.ingest.close, timeout_s=bound)
            await close_step("live tail broker", state.tail.close, timeout_s=bound)
            await close_step("sessions' activity", state.session_activity.flush, timeout_s=bound)
            await close_step("database engines", db.dispose, timeout_s=bound)
            if redis is not None:
                await close_step("Redis client", redis.aclose, timeout_s=bound)
            if limiter_client is not None:
                await close_step(
                    "rate limiter Redis client", limiter_client.aclose, timeout_s=bound
                )

    app = FastAPI(
        title="tidegate",
        version=API_VERSION,
        summary="A self-hostable log and telemetry platform server",
        lifespan=lifespan,
        # FastAPI's native OpenTelemetry costs about a third of a cheap request even with
        # no exporter configured, so it is opt-in (TIDEGATE_OTEL=1 uses global providers).
        telemetry=_telemetry(settings),
        # Served from the package by api/docs.py rather than FastAPI's CDN-backed pages.
        docs_url=None,
        redoc_url=None,
    )
    app.openapi = partial(_openapi, app)  # type: ignore[method-assign]
    error_handlers.install(app)
    app.add_middleware(
        BodyGuard,
        max_body_bytes=settings.max_body_bytes,
        body_timeout_s=settings.body_timeout_s,
        max_buffered_bytes=settings.max_buffered_bytes,
    )
    # Outermost: it sees the answers of the body guard too (docs/metrics.md).
    app.add_middleware(RequestMetrics)
    include_routes(app)
    app.include_router(build_docs_router(title=app.title, openapi_url=app.openapi_url or ""))
    app.include_router(build_web_router())
    if not settings.otel:  # FastAPI's telemetry hooks are in its own handler
        # Plain reads skip FastAPI's general dependency solver (api/plain_routes.py);
        # given as each router's route contexts are built, before the prefilter wraps
        # that step, so that it sees each whole list FastAPI builds once.
        plain_routes.install(app)
    # Requests skip the routers that cannot match their path (api/route_prefilter.py).
    prefilter_routers(app)
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI documents a 422 on every operation; tidegate never answers 422 (validation
    failures are 400 in the family's error shape, already documented), so drop it."""
    if app.openapi_schema is None:
        document = get_openapi(
            title=app.title,
            version=app.version,
            summary=app.summary,
            routes=app.routes,
        )
        for operations in document.get("paths", {}).values():
            for operation in operations.values():
                operation.get("responses", {}).pop("422", None)
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        # The error bodies every operation refers to (error_models.error_response).
        schemas.update(error_schemas())
        # Each node type's user_config, as its component's model says (the registry).
        from tidegate.components.openapi import user_config_schemas  # see create_app

        schemas.update(user_config_schemas())
        app.openapi_schema = document
    return app.openapi_schema


def create_app_from_env() -> FastAPI:
    """Entry point for uvicorn's factory mode (each worker process calls it)."""
    return create_app(Settings.from_env(), freeze_heap=True)


def freeze_start_up_heap() -> None:
    """Move the objects a worker holds once started (its modules, the app, the pools:
    about 250,000) out of the garbage collector's reach. CPython's full collection
    walks every tracked object; a worker's requests make it run every few tens of
    thousands of lines (what they build, such as a batch's parsed fields, lives long
    enough to reach the oldest generation), at about 0.1-0.2 s each on this machine
    when it walks the start-up objects too: several ms per 1,000 lines ingested
    (docs/line-parsing.md, "Cost"). Frozen, they are never walked again; what is
    garbage at start is collected first. ``tidegate serve``'s workers only: the
    in-process apps of the tests start and stop many times in one process."""
    gc.collect()
    gc.freeze()
