"""Password hashing: argon2id, in one of two published profiles (``PROFILES``):
RFC 9106's low-memory choice (argon2-cffi's defaults: 64 MiB, 3 passes, 4 lanes), the
default, or OWASP's minimum (19 MiB, 2 passes, 1 lane) for small machines
(``TIDEGATE_PASSWORD_HASH_PROFILE``). A stored hash names its own parameters, so
hashes made under either profile verify under both.

Hashing is deliberately slow and memory-hard, so it never runs on the event loop: each
hash or verification runs in a pool of ``MAX_CONCURRENT`` threads of its own (each
holds 64 MiB while it runs), so a burst of sign-ins queues rather than exhausting
memory or the loop's default thread pool.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Final, Literal

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_LENGTH = 8
MAX_LENGTH = 1024
MAX_CONCURRENT = 2

ProfileName = Literal["rfc9106-low-memory", "owasp-minimum"]
PROFILES: Final[dict[str, PasswordHasher]] = {
    "rfc9106-low-memory": PasswordHasher(),
    "owasp-minimum": PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1),
}

_hasher = PROFILES["rfc9106-low-memory"]
_pool = ThreadPoolExecutor(max_workers=MAX_CONCURRENT, thread_name_prefix="argon2")


def use_profile(name: ProfileName) -> None:
    """Hash new passwords under ``name`` (the process's setting, from create_app)."""
    global _hasher
    _hasher = PROFILES[name]
    _dummy.cache_clear()


@functools.cache
def _dummy() -> str:
    """Verified when the e-mail is unknown, so that an unknown e-mail costs what a wrong
    password costs (the answer's timing does not tell which e-mails have users). Made on
    first use, in the pool: hashing at import would slow every process's start."""
    return _hasher.hash("tidegate: no such user")


async def hash_password(password: str) -> str:
    return await asyncio.get_running_loop().run_in_executor(_pool, _hasher.hash, password)


def _verify(stored: str, password: str) -> bool:
    try:
        return _hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


async def verify_password(stored: str | None, password: str) -> bool:
    loop = asyncio.get_running_loop()
    if stored is None:
        await loop.run_in_executor(_pool, lambda: _verify(_dummy(), password))
        return False
    return await loop.run_in_executor(_pool, _verify, stored, password)
