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
    # Throttle (docs/throttle.md): keys and approximate bytes of in-memory throttle state
    # across ALL processors of one worker process; past either, new keys fail open.
    throttle_max_keys: int = 1_000_000
    throttle_max_bytes: int = 256 * 1024 * 1024

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
            throttle_max_keys=_throttle_limit("TIDEGATE_THROTTLE_MAX_KEYS", 1_000_000),
            throttle_max_bytes=_throttle_limit("TIDEGATE_THROTTLE_MAX_BYTES", 256 * 1024 * 1024),
        )

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
