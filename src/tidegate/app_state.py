"""What one server process holds for the lifetime of the app."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request
from redis.asyncio import Redis

from tidegate.auth.secrets import Sealer
from tidegate.auth.signed_query import ReplayGuard
from tidegate.auth.signin_limit import FailureCounter
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.ingest.runtime import IngestRuntime
from tidegate.logs.tail import TailBroker
from tidegate.ratelimit import RateLimiter


@dataclass(slots=True)
class AppState:
    settings: Settings
    db: Database
    limiter: RateLimiter
    sealer: Sealer
    redis: Redis | None
    # Live tail: writers call ``await tail.publish(account_id, lines)`` after commit.
    tail: TailBroker = field(default_factory=TailBroker)
    # Ingestion: compiled exclusion rules, the in-flight bound, the retention job.
    ingest: IngestRuntime = field(default_factory=IngestRuntime)
    # People (docs/people.md): logdna-cli signatures seen, failed sign-ins counted.
    replay: ReplayGuard = field(default_factory=ReplayGuard)
    signin_failures: FailureCounter = field(
        default_factory=lambda: FailureCounter(max_failures=10, window_s=900.0)
    )


def app_state(request: Request) -> AppState:
    state: AppState = request.app.state.tidegate
    return state
