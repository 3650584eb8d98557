"""The ``tidegate`` command."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tidegate.config import Settings, SettingsError

if TYPE_CHECKING:
    from tidegate.auth.secrets import Sealer

# WebSocket messages a client may send (live tail's clients send none but pings).
WS_MAX_MESSAGE_BYTES = 64 * 1024


def _prepare_metrics_dir(settings: Settings) -> None:
    """Give every worker one place for its Prometheus values (docs/throttle.md#metrics).

    Before anything imports prometheus_client: it picks its mode at import. The
    directory is emptied so that values of a previous run (and of workers that are
    gone) are not reported. An operator's own PROMETHEUS_MULTIPROC_DIR is used as is.
    """
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return
    path = settings.data_dir / "prometheus"
    if path.is_dir():
        for stale in path.glob("*.db"):
            stale.unlink()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(path.resolve())


def _fork_workers_preloaded(settings: Settings) -> bool:
    """Make uvicorn fork its workers from this process with the app imported, as
    gunicorn's ``--preload`` does, instead of spawning fresh interpreters that each import
    everything again (2.5-3 s of CPU a worker; the route tree and its pydantic models are
    most of it). The workers share the imported code's memory until they write to it, and
    a restarted worker is up in a fraction of the time (docs/decisions.md, "Workers").

    Only on Linux, and only while this process runs no thread but its main one: the
    migrations and the bootstrap before it ran in ``asyncio.run`` and closed their
    engines, so no connection, thread or lock is copied into a worker. Otherwise (or
    with ``TIDEGATE_WORKER_START=spawn``) uvicorn spawns them as before."""
    import multiprocessing
    import threading
    import time

    if sys.platform != "linux" or settings.worker_start == "spawn":
        return False
    import uvicorn._subprocess

    import tidegate.app  # noqa: F401  built once, here, for every worker

    # A closed aiosqlite connection's thread ends a moment after the close returns.
    deadline = time.monotonic() + 5.0
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
    if threading.active_count() != 1:
        names = ", ".join(thread.name for thread in threading.enumerate())
        print(
            f"tidegate: workers are spawned: this process runs threads ({names})", file=sys.stderr
        )
        return False
    # uvicorn 0.54's supervisor makes each worker with this module's ``spawn`` context.
    uvicorn._subprocess.spawn = multiprocessing.get_context("fork")  # type: ignore[assignment]
    return True


def _server_sealer(settings: Settings) -> Sealer:
    """The server secret's sealer, for migrations that seal stored data."""
    from tidegate.auth.secrets import server_sealer

    return server_sealer(settings)


def _serve(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    _prepare_metrics_dir(settings)

    import uvicorn

    from tidegate.api.http_server import PROTOCOL, log_config
    from tidegate.bootstrap import bootstrap_default_enterprise
    from tidegate.db.engine import PoolBudgetError, ensure_private_dir, pool_plan_for
    from tidegate.logs.schema_upkeep import upgrade_log_store

    # The data directory holds the SQLite file and the key files: the server's user only.
    ensure_private_dir(settings.data_dir)
    # Every worker reads its share of PostgreSQL's connections from these.
    os.environ["TIDEGATE_WORKERS"] = str(args.workers)
    if not settings.is_sqlite:
        try:
            plan = asyncio.run(
                pool_plan_for(
                    settings.database_url, workers=args.workers, override=settings.db_pool_size
                )
            )
        except PoolBudgetError as error:
            print(f"tidegate: cannot start: {error}", file=sys.stderr)
            return 2
        # Workers take the plan as it is instead of each asking the server again.
        os.environ["TIDEGATE_DB_POOL_SIZE"] = str(plan.per_worker)
        print(
            f"tidegate: {plan.per_worker} PostgreSQL connections per worker "
            f"({args.workers} workers)",
            file=sys.stderr,
        )
    asyncio.run(upgrade_log_store(settings.database_url, sealer=_server_sealer(settings)))
    if settings.bootstrap:
        written = asyncio.run(
            bootstrap_default_enterprise(
                database_url=settings.database_url, data_dir=settings.data_dir
            )
        )
        if written is not None:
            print(
                f"tidegate: created the default enterprise; its key is in {written} (mode 0600).\n"
                f'  curl -H "Authorization: Token $(cat {written})" '
                f"http://{args.host}:{args.port}/v3/enterprise",
                file=sys.stderr,
            )
    if args.workers > 1:
        _fork_workers_preloaded(settings)
    uvicorn.run(
        "tidegate.app:create_app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        fd=args.fd,
        workers=args.workers,
        loop="uvloop",
        # httptools with header size and time limits and JSON errors (api/http_server.py).
        http=PROTOCOL,
        log_level=args.log_level,
        access_log=args.access_log,
        # uvicorn's logging, plus a filter keeping ?apikey= values out of the access log.
        log_config=log_config(),
        proxy_headers=False,
        # Live-tail streams never end by themselves; without a limit a stop would wait
        # for every subscriber to hang up. Requests still running after this are cancelled.
        timeout_graceful_shutdown=10,
        # A worker answers the supervisor's health check from a thread that shares the GIL
        # with its start-up imports; on a loaded machine (CI's two cores under a parallel
        # test run) 5 s was not always enough and sound workers were killed at birth.
        timeout_worker_healthcheck=30,
        # WebSocket live tail: clients send nothing but pings; a message is at most this.
        ws_max_size=WS_MAX_MESSAGE_BYTES,
    )
    return 0


def _db_upgrade(_args: argparse.Namespace) -> int:
    from tidegate.logs.schema_upkeep import upgrade_log_store

    settings = Settings.from_env()
    asyncio.run(upgrade_log_store(settings.database_url, sealer=_server_sealer(settings)))
    print("tidegate: database is up to date", file=sys.stderr)
    return 0


def _db_reindex(_args: argparse.Namespace) -> int:
    from tidegate.logs.schema_upkeep import reindex_database

    settings = Settings.from_env()
    count = asyncio.run(reindex_database(settings.database_url, sealer=_server_sealer(settings)))
    print(f"tidegate: search index rebuilt for {count} lines", file=sys.stderr)
    return 0


def _segments_compact(args: argparse.Namespace) -> int:
    """One compactor round (with the lease), for operators and the crash tests."""
    import dataclasses
    import uuid

    from tidegate.db.engine import Database
    from tidegate.logs.compactor import CompactorConfig, compact_round
    from tidegate.logs.segment_cache import attach_segment_storage

    settings = Settings.from_env()
    config = CompactorConfig.of(settings)
    if args.lease_s is not None:
        config = dataclasses.replace(config, lease_ms=int(args.lease_s * 1000))

    async def run() -> dict[str, int | bool]:
        db = Database.connect(settings.database_url)
        attach_segment_storage(db, settings)
        try:
            result = await compact_round(db, config, owner=uuid.uuid4().hex)
        finally:
            await db.dispose()
        return {
            "claimed": result.claimed,
            "segments": result.segments,
            "lines": result.lines,
            "orphans_removed": result.orphans_removed,
            "uploads_aborted": result.uploads_aborted,
            "bucket_failed": result.bucket_failed,
            "legacy_uploaded": result.legacy_uploaded,
        }

    sys.stdout.write(json.dumps(asyncio.run(run())) + "\n")
    return 0


def _secrets_rotate(_args: argparse.Namespace) -> int:
    """Reseal every stored secret under TIDEGATE_SECRET_KEY (README, "Rotating the
    server secret")."""
    from tidegate.auth.rotation import rotate_sealed
    from tidegate.db.engine import Database
    from tidegate.logs.schema_upkeep import upgrade_log_store

    settings = Settings.from_env()
    sealer = _server_sealer(settings)

    async def run() -> dict[str, int]:
        await upgrade_log_store(settings.database_url, sealer=sealer)
        db = Database.connect(settings.database_url)
        try:
            async with db.write_sessions() as session:
                return (await rotate_sealed(session, sealer)).summary()
        finally:
            await db.dispose()

    summary = asyncio.run(run())
    sys.stdout.write(json.dumps(summary) + "\n")
    if summary["unopened"]:
        print(
            f"tidegate: {summary['unopened']} sealed values open with none of the server "
            "secrets (named in the log); add the secret they were sealed with to "
            "TIDEGATE_PREVIOUS_SECRET_KEYS and run this again",
            file=sys.stderr,
        )
        return 1
    return 0


def _enterprise_create(args: argparse.Namespace) -> int:
    from tidegate.db.engine import Database
    from tidegate.enterprise.service import create_enterprise
    from tidegate.logs.schema_upkeep import upgrade_log_store

    settings = Settings.from_env()

    async def run() -> dict[str, str]:
        await upgrade_log_store(settings.database_url, sealer=_server_sealer(settings))
        db = Database.connect(settings.database_url)
        try:
            async with db.write_sessions() as session:
                enterprise, token = await create_enterprise(
                    session=session,
                    name=args.name,
                    partner=args.partner,
                    parent_enterprise_id=args.parent_enterprise_id,
                )
                await session.commit()
                return {"enterprise_id": enterprise.id, "token": token}
        finally:
            await db.dispose()

    # Exactly one JSON object on stdout: outside tools parse it.
    sys.stdout.write(json.dumps(asyncio.run(run())) + "\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tidegate", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the server (management API and data plane)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument(
        "--fd",
        type=int,
        default=None,
        help="serve on this inherited listening socket (systemd socket activation, a "
        "supervisor that binds first) instead of binding --host and --port",
    )
    serve.add_argument("--log-level", default="info")
    serve.add_argument("--access-log", action=argparse.BooleanOptionalAction, default=False)
    serve.set_defaults(func=_serve)

    db = commands.add_parser("db", help="database schema")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_commands.add_parser(
        "upgrade", help="create or migrate the schema to the latest revision"
    )
    upgrade.set_defaults(func=_db_upgrade)
    reindex = db_commands.add_parser(
        "reindex", help="rebuild the search index of every stored line (docs/log-store.md)"
    )
    reindex.set_defaults(func=_db_reindex)

    segments = commands.add_parser("segments", help="the log store's segments")
    segment_commands = segments.add_subparsers(dest="segments_command", required=True)
    compact = segment_commands.add_parser(
        "compact", help="one compactor round: move old lines into segments (docs/log-store.md)"
    )
    compact.add_argument("--lease-s", type=float, default=None, help="the lease's length")
    compact.set_defaults(func=_segments_compact)

    secrets = commands.add_parser("secrets", help="the server secret")
    secret_commands = secrets.add_subparsers(dest="secrets_command", required=True)
    rotate = secret_commands.add_parser(
        "rotate",
        help="reseal every stored secret under TIDEGATE_SECRET_KEY, opening them with it "
        "or TIDEGATE_PREVIOUS_SECRET_KEYS (README)",
    )
    rotate.set_defaults(func=_secrets_rotate)

    enterprise = commands.add_parser("enterprise", help="enterprises")
    ent_commands = enterprise.add_subparsers(dest="enterprise_command", required=True)
    create = ent_commands.add_parser("create", help="create an enterprise and its first key")
    create.add_argument("--name", required=True)
    create.add_argument("--partner", default=None)
    create.add_argument("--parent-enterprise-id", default=None)
    create.set_defaults(func=_enterprise_create)

    commands.add_parser(
        "throttle", help="run the Throttle processor over NDJSON (see --help)", add_help=False
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "throttle":
        from tidegate.processing.throttle_cli import main as throttle_main

        return throttle_main(argv[1:])
    args = _parser().parse_args(argv)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    try:
        result: int = args.func(args)
    except SettingsError as error:
        print(f"tidegate: cannot start: {error}", file=sys.stderr)
        return 2
    return result


if __name__ == "__main__":
    sys.exit(main())
