"""Settings, read once from the environment (flags of the CLI override them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from tidegate.runtime.destination_guard import policy_from_setting

DEFAULT_DATA_DIR = Path("var")


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str
    redis_url: str | None
    data_dir: Path
    secret_key: str | None
    rate_limit_per_minute: int
    max_body_bytes: int
    bootstrap: bool
    otel: bool = False
    # Ingestion (docs/ingest.md): fsync mode of SQLite's write engine, requests in flight
    # per worker before 503, seconds between retention sweeps.
    sqlite_synchronous: str = "FULL"
    ingest_max_in_flight: int = 64
    retention_interval_s: float = 3600.0
    # Ingest bodies parsed at once per worker, each in a worker thread (docs/ingest.md:
    # this bounds a worker's parsing memory).
    ingest_parse_threads: int = 2
    # Group commit (docs/ingest.md): a worker's pending lines are committed together
    # after this many milliseconds, or as soon as this many lines wait.
    ingest_group_commit_ms: float = 2.0
    ingest_group_commit_lines: int = 5_000
    # Pipeline http destinations (docs/runtime.md): non-public addresses a destination
    # may reach anyway, comma-separated CIDRs and host names; empty: public ones only.
    destination_allow: str = ""
    # The server's edge (docs/decisions.md "The server's edge"): seconds without a body
    # byte before 408, bytes of request bodies one worker holds at once before 503,
    # the request line plus headers before 431, seconds to complete them before close.
    body_timeout_s: float = 30.0
    max_buffered_bytes: int = 64 * 1024 * 1024
    max_header_bytes: int = 64 * 1024
    header_timeout_s: float = 10.0
    # Live tail (docs/export-and-tail.md): seconds between re-checks of an open stream's
    # credential (a deleted key or deactivated account ends the stream).
    tail_recheck_s: float = 3.0
    # Throttle (docs/throttle.md): keys and approximate bytes of in-memory throttle state
    # across ALL processors of one worker process; past either, new keys fail open.
    throttle_max_keys: int = 1_000_000
    throttle_max_bytes: int = 256 * 1024 * 1024
    # Request path (docs/decisions.md): the Redis rate limiter's timeout per call (it
    # then fails open, behind a circuit breaker); PostgreSQL's statement_timeout and how
    # long a request waits for a pooled connection before answering 503.
    rate_limit_redis_timeout_s: float = 0.2
    db_statement_timeout_s: float = 30.0
    db_pool_timeout_s: float = 10.0

    @classmethod
    def from_env(cls) -> Settings:
        data_dir = Path(os.environ.get("TIDEGATE_DATA_DIR", str(DEFAULT_DATA_DIR)))
        default_db = f"sqlite+aiosqlite:///{(data_dir / 'tidegate.sqlite3').as_posix()}"
        return cls(
            database_url=os.environ.get("TIDEGATE_DATABASE_URL") or default_db,
            redis_url=os.environ.get("TIDEGATE_REDIS_URL") or None,
            data_dir=data_dir,
            secret_key=os.environ.get("TIDEGATE_SECRET_KEY") or None,
            rate_limit_per_minute=int(os.environ.get("TIDEGATE_RATE_LIMIT_PER_MINUTE", "50")),
            max_body_bytes=int(os.environ.get("TIDEGATE_MAX_BODY_BYTES", str(1024 * 1024))),
            bootstrap=os.environ.get("TIDEGATE_BOOTSTRAP", "1") not in ("0", "false", "no"),
            otel=os.environ.get("TIDEGATE_OTEL", "0") in ("1", "true", "yes"),
            sqlite_synchronous=os.environ.get("TIDEGATE_SQLITE_SYNCHRONOUS", "FULL").upper(),
            ingest_max_in_flight=int(os.environ.get("TIDEGATE_INGEST_MAX_IN_FLIGHT", "64")),
            retention_interval_s=float(os.environ.get("TIDEGATE_RETENTION_INTERVAL_S", "3600")),
            ingest_parse_threads=int(os.environ.get("TIDEGATE_INGEST_PARSE_THREADS", "2")),
            ingest_group_commit_ms=float(os.environ.get("TIDEGATE_INGEST_GROUP_COMMIT_MS", "2")),
            ingest_group_commit_lines=int(
                os.environ.get("TIDEGATE_INGEST_GROUP_COMMIT_LINES", "5000")
            ),
            destination_allow=os.environ.get("TIDEGATE_DESTINATION_ALLOW", ""),
            body_timeout_s=float(os.environ.get("TIDEGATE_BODY_TIMEOUT_S", "30")),
            max_buffered_bytes=int(
                os.environ.get("TIDEGATE_MAX_BUFFERED_BYTES", str(64 * 1024 * 1024))
            ),
            max_header_bytes=int(os.environ.get("TIDEGATE_MAX_HEADER_BYTES", str(64 * 1024))),
            header_timeout_s=float(os.environ.get("TIDEGATE_HEADER_TIMEOUT_S", "10")),
            tail_recheck_s=float(os.environ.get("TIDEGATE_TAIL_RECHECK_S", "3")),
            throttle_max_keys=_throttle_limit("TIDEGATE_THROTTLE_MAX_KEYS", 1_000_000),
            throttle_max_bytes=_throttle_limit("TIDEGATE_THROTTLE_MAX_BYTES", 256 * 1024 * 1024),
            rate_limit_redis_timeout_s=float(
                os.environ.get("TIDEGATE_RATE_LIMIT_REDIS_TIMEOUT_S", "0.2")
            ),
            db_statement_timeout_s=float(os.environ.get("TIDEGATE_DB_STATEMENT_TIMEOUT_S", "30")),
            db_pool_timeout_s=float(os.environ.get("TIDEGATE_DB_POOL_TIMEOUT_S", "10")),
        )

    def __post_init__(self) -> None:
        # A mistyped allow-list fails at startup, not on the first delivery.
        policy_from_setting(self.destination_allow)

    def with_overrides(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


def _throttle_limit(name: str, default: int) -> int:
    value = int(os.environ.get(name) or default)
    if value < 1:
        raise ValueError(f"{name} must be at least 1")
    return value
