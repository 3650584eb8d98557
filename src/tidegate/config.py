"""Settings, read once from the environment (flags of the CLI override them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

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
            rate_limit_redis_timeout_s=float(
                os.environ.get("TIDEGATE_RATE_LIMIT_REDIS_TIMEOUT_S", "0.2")
            ),
            db_statement_timeout_s=float(os.environ.get("TIDEGATE_DB_STATEMENT_TIMEOUT_S", "30")),
            db_pool_timeout_s=float(os.environ.get("TIDEGATE_DB_POOL_TIMEOUT_S", "10")),
        )

    def with_overrides(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")
