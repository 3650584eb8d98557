"""logdna-cli's signed queries: ``email``, ``id``, ``ts`` and ``hmac`` in the query.

The CLI (lib/utils.js ``authParams``) builds ``{email, id, ts}`` (its user's e-mail,
the account id it chose, ``Date.now()``), serialises it with Node's
``querystring.stringify`` (``email=a%40b.example&id=...&ts=...``, in that order) and
sends the hex HMAC-SHA256 of that text under the token ``POST /login`` gave it. Its
search deletes the e-mail first, so that text starts ``email=&``: such a signature is
checked against the token of each member of the account who has one.

A signature is good once: ``ts`` must be within ``signed_query_window_s`` of the
server's clock and an hmac seen in that window is refused (remembered in Redis when
set, under ``<TIDEGATE_REDIS_PREFIX>signed:``, so across workers and hosts; else in a
bounded map per process).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import quote

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from tidegate import clock
from tidegate.auth.shared_counts import SharedCounts
from tidegate.config import DEFAULT_REDIS_PREFIX
from tidegate.errors import RateLimited, ServiceUnavailable

# Node's querystring.escape leaves these unescaped besides letters and digits.
_NODE_SAFE = "-_.!~*'()"
MAX_REMEMBERED = 200_000


def node_querystring(pairs: list[tuple[str, str]]) -> str:
    return "&".join(f"{quote(k, safe=_NODE_SAFE)}={quote(v, safe=_NODE_SAFE)}" for k, v in pairs)


def signed_text(*, email: str, account_id: str, ts: str) -> str:
    return node_querystring([("email", email), ("id", account_id), ("ts", ts)])


def signature(token: str, text: str) -> str:
    return hmac.new(token.encode(), text.encode(), hashlib.sha256).hexdigest()


def same_signature(token: str, text: str, presented: str) -> bool:
    return hmac.compare_digest(signature(token, text).encode(), presented.lower().encode())


def fresh(ts: str, *, window_s: float, now_ms: int | None = None) -> int | None:
    """``ts`` as epoch ms when it is within the window of now, else None."""
    if not (ts.isascii() and ts.isdigit()) or len(ts) > 16:
        return None
    value = int(ts)
    now = clock.now_ms() if now_ms is None else now_ms
    return value if abs(now - value) <= window_s * 1000 else None


class ReplayGuard:
    """Remembers the signatures seen within the window; ``first_use`` is True once."""

    def __init__(
        self,
        redis: Redis | None = None,
        *,
        redis_prefix: str = DEFAULT_REDIS_PREFIX,
        max_remembered: int = MAX_REMEMBERED,
        shared: SharedCounts | None = None,
    ) -> None:
        self.redis = redis
        # Several workers without Redis: the database (tidegate.auth.shared_counts).
        self.shared = shared if redis is None else None
        self.key_prefix = redis_prefix + "signed:"
        self.max_remembered = max_remembered
        self._seen: dict[str, float] = {}

    async def first_use(self, signature_hex: str, *, window_s: float) -> bool:
        if self.redis is not None:
            try:
                stored = await self.redis.set(
                    self.key_prefix + signature_hex, b"1", nx=True, px=int(window_s * 2000)
                )
            except (RedisError, OSError):
                # Failing open would let a replay through: refuse until Redis answers.
                raise ServiceUnavailable("Signed requests cannot be checked right now") from None
            return bool(stored)
        if self.shared is not None:
            try:
                return await self.shared.first_use(signature_hex, remember_s=2 * window_s)
            except (SQLAlchemyError, OSError):
                raise ServiceUnavailable("Signed requests cannot be checked right now") from None
        now = time.monotonic()
        if signature_hex in self._seen and self._seen[signature_hex] > now:
            return False
        if len(self._seen) >= self.max_remembered:
            self._seen = {k: v for k, v in self._seen.items() if v > now}
            if len(self._seen) >= self.max_remembered:
                raise RateLimited(
                    "Too many signed requests; try again shortly",
                    headers={"Retry-After": str(int(window_s))},
                )
        # Twice the window: a ts at the window's far edge stays remembered until it
        # can no longer pass the freshness check.
        self._seen[signature_hex] = now + 2 * window_s
        return True
