"""Which failed sign-ins refuse which next attempt (docs/isolation.md, "Sign-in
limits"). Failures are counted (tidegate.auth.signin_limit) three ways:

- per (e-mail, client address): ``signin_max_failures`` within the window refuse that
  pair only, so nobody can lock a person out from another address;
- per client address, across e-mails: past ``signin_address_max_failures`` (spraying
  one password over many e-mails from one address), each further attempt from the
  address waits a doubling delay after the last failure, as below: a hard refusal for
  the whole window would lock out everyone behind the same NAT or untrusted proxy;
- per e-mail, across addresses: past ``signin_backoff_after``, each further attempt
  waits a delay that doubles with every failure (up to ``signin_backoff_max_s``) after
  the last one. A guesser using many addresses is slowed to one guess per delay; the
  person themself waits at most that delay, never a lock-out.

A refusal is 429 with ``Retry-After``; a success clears the pair's and the e-mail's
counts. The address is tidegate.auth.client_address's.
"""

from __future__ import annotations

import math

from tidegate.app_state import AppState
from tidegate.errors import RateLimited


def _keys(email: str, address: str) -> tuple[str, str, str]:
    email = email.strip().lower()
    return f"pair:{email}|{address}", f"email:{email}", f"address:{address}"


def _refuse(wait_s: float) -> RateLimited:
    return RateLimited(
        "Too many failed sign-ins; try again later",
        headers={"Retry-After": str(max(1, math.ceil(wait_s)))},
    )


def backoff_s(state: AppState, failures: int, *, after: int) -> float:
    """The delay after the last failure that ``failures`` impose past ``after``."""
    extra = failures - after
    if extra < 0:
        return 0.0
    return float(min(2.0 ** min(extra, 32), state.settings.signin_backoff_max_s))


async def _back_off(state: AppState, key: str, *, after: int) -> None:
    tally = await state.signin_failures.tally(key)
    wait = tally.last_s + backoff_s(state, tally.count, after=after) - state.signin_failures.now_s()
    if tally.count >= after and wait > 0:
        raise _refuse(wait)


async def _check_address(state: AppState, address_key: str) -> None:
    await _back_off(state, address_key, after=state.settings.signin_address_max_failures)


async def before_password(state: AppState, *, email: str, address: str) -> None:
    pair, person, address_key = _keys(email, address)
    counter = state.signin_failures
    if (await counter.tally(pair)).count >= state.settings.signin_max_failures:
        raise _refuse(state.settings.signin_failure_window_s)
    await _check_address(state, address_key)
    await _back_off(state, person, after=state.settings.signin_backoff_after)


async def password_failed(state: AppState, *, email: str, address: str) -> None:
    for key in _keys(email, address):
        await state.signin_failures.failed(key)


async def password_succeeded(state: AppState, *, email: str, address: str) -> None:
    pair, person, _ = _keys(email, address)
    await state.signin_failures.succeeded(pair)
    await state.signin_failures.succeeded(person)


async def before_key(state: AppState, *, address: str) -> None:
    await _check_address(state, f"address:{address}")


async def key_failed(state: AppState, *, address: str) -> None:
    await state.signin_failures.failed(f"address:{address}")
