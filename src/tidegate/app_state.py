"""What one server process holds for the lifetime of the app.

Part of the foundation (docs/architecture.md, "Layers"): every field is built by the
app's lifespan (``tidegate.app``); the domain types are named for the type checker
only, so importing this module never imports a domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from redis.asyncio import Redis
from starlette.requests import HTTPConnection

from tidegate.config import Settings
from tidegate.db.engine import Database

if TYPE_CHECKING:
    from tidegate.auth.secrets import Sealer
    from tidegate.auth.session_activity import SessionActivity
    from tidegate.auth.signed_query import ReplayGuard
    from tidegate.auth.signin_limit import FailureCounter
    from tidegate.gateway.forward import ForwardListener
    from tidegate.ingest.runtime import IngestRuntime
    from tidegate.logs.intake import LineIntake
    from tidegate.logs.tail import TailBroker
    from tidegate.ratelimit import RateLimiter
    from tidegate.runtime.runtime import Runtime
    from tidegate.syslog.listener import SyslogListener


@dataclass(slots=True)
class AppState:
    settings: Settings
    db: Database
    limiter: RateLimiter
    # A signed-in browser session's own budget (session_rate_limit_per_minute).
    session_limiter: RateLimiter
    sealer: Sealer
    redis: Redis | None
    # Live tail: writers call ``await tail.publish(account_id, lines)`` after commit.
    tail: TailBroker
    # Ingestion: compiled exclusion rules, the in-flight bound, the retention job.
    ingest: IngestRuntime
    # Pipelines' data plane: compiled pipelines, throttles, taps, usage counts.
    pipelines: Runtime
    # The one writer of log lines (ingestion and the pipeline's log store).
    intake: LineIntake
    # People (docs/people.md): logdna-cli signatures seen, failed sign-ins counted.
    replay: ReplayGuard
    signin_failures: FailureCounter
    # Browser sessions' last activity, written beside the requests (never in a read).
    session_activity: SessionActivity
    # The syslog listener (docs/syslog.md), when TIDEGATE_SYSLOG_PORT is set.
    syslog: SyslogListener | None = None
    # The Fluent Forward listener, when TIDEGATE_FLUENT_FORWARD_PORT is set.
    forward: ForwardListener | None = None


def app_state(connection: HTTPConnection) -> AppState:
    """Of a request or a WebSocket."""
    state: AppState = connection.app.state.tidegate
    return state
