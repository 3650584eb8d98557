"""Bounded in-flight work, per worker: a gate admits at most ``limit`` holders and
refuses the next one at once (the caller answers 429/503 with ``Retry-After``) rather
than letting requests queue in memory without bound."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager

__all__ = ["Gates", "Saturated"]


class Saturated(Exception):
    def __init__(self, key: Hashable) -> None:
        super().__init__(f"too much work in flight for {key!r}")
        self.key = key


class Gates:
    """Counters of work in flight by key; a key at its limit refuses new work."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._inflight: dict[Hashable, int] = {}

    def inflight(self, key: Hashable) -> int:
        return self._inflight.get(key, 0)

    @contextmanager
    def hold(self, keys: Iterable[Hashable]) -> Iterator[None]:
        """Enter every gate of ``keys`` or none (raises ``Saturated``)."""
        wanted = list(dict.fromkeys(keys))
        for key in wanted:
            if self._inflight.get(key, 0) >= self.limit:
                raise Saturated(key)
        for key in wanted:
            self._inflight[key] = self._inflight.get(key, 0) + 1
        try:
            yield
        finally:
            for key in wanted:
                left = self._inflight[key] - 1
                if left:
                    self._inflight[key] = left
                else:
                    del self._inflight[key]
