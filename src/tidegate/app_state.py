"""What one server process holds for the lifetime of the app."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from redis.asyncio import Redis

from tidegate.auth.secrets import Sealer
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.ratelimit import RateLimiter


@dataclass(slots=True)
class AppState:
    settings: Settings
    db: Database
    limiter: RateLimiter
    sealer: Sealer
    redis: Redis | None


def app_state(request: Request) -> AppState:
    state: AppState = request.app.state.tidegate
    return state
