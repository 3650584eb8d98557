"""The export threads, shared fairly between accounts (docs/fair-reads.md).

A read of stored lines (export page, aggregation, usage) runs on one of a process's few
export threads. First come, first served let one account's queue of expensive reads
take every thread, and another account's trivial export waited behind all of them.

``FairShare`` admits at most ``capacity`` reads at once, and at most ``per_account`` of
them one account's: with ``per_account`` below ``capacity`` an account can never hold
every thread, so another account's first read starts at once. Reads that wait are
queued per account and admitted round-robin over the accounts, so a long queue of one
account is served in turn with the others, never ahead of them.

Thread-safe: a slot is released by the thread that finishes the read (also after its
request went away), and a waiter is woken on its own event loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import Counter, OrderedDict, deque


class FairShare:
    def __init__(self, *, capacity: int, per_account: int) -> None:
        self.capacity = capacity
        self.per_account = per_account
        self._lock = threading.Lock()
        self._running: Counter[str] = Counter()
        self._total = 0
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    def running(self, account_id: str) -> int:
        with self._lock:
            return self._running[account_id]

    async def acquire(self, account_id: str) -> None:
        """Returns once a slot is this read's; ``release`` it when the read is over."""
        with self._lock:
            # Every waiter that could run was admitted when a slot freed: a read whose
            # account has nothing queued and is under its share takes a free slot.
            if account_id not in self._waiting and self._admissible(account_id):
                self._admit(account_id)
                return
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.setdefault(account_id, deque()).append(future)
        try:
            await future
        except asyncio.CancelledError:
            if not self._withdraw(account_id, future):
                self.release(account_id)  # the slot was granted as the request went away
            raise

    def release(self, account_id: str) -> None:
        with self._lock:
            self._running[account_id] -= 1
            if self._running[account_id] <= 0:
                del self._running[account_id]
            self._total -= 1
        self._wake(self._grant())

    def _admissible(self, account_id: str) -> bool:
        return self._total < self.capacity and self._running[account_id] < self.per_account

    def _admit(self, account_id: str) -> None:
        self._running[account_id] += 1
        self._total += 1

    def _grant(self) -> list[tuple[str, asyncio.Future[None]]]:
        """Admits waiting reads, round-robin over the accounts, while slots allow."""
        granted: list[tuple[str, asyncio.Future[None]]] = []
        with self._lock:
            progress = True
            while progress and self._total < self.capacity:
                progress = False
                for account_id in list(self._waiting):
                    if not self._admissible(account_id):
                        continue
                    queue = self._waiting.pop(account_id)
                    future = queue.popleft()
                    if queue:  # to the back of the round
                        self._waiting[account_id] = queue
                    self._admit(account_id)
                    granted.append((account_id, future))
                    progress = True
                    break
        return granted

    def _wake(self, granted: list[tuple[str, asyncio.Future[None]]]) -> None:
        for account_id, future in granted:
            try:
                future.get_loop().call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # its loop is closed: nobody is waiting any more
                self.release(account_id)

    def _withdraw(self, account_id: str, future: asyncio.Future[None]) -> bool:
        with self._lock:
            queue = self._waiting.get(account_id)
            if queue is None or future not in queue:
                return False
            queue.remove(future)
            if not queue:
                del self._waiting[account_id]
            return True


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class HeavyReaders:
    """The accounts whose reads lately took a lot of CPU in the export threads.

    The share above bounds how many threads an account holds, not how much of the
    machine: one account's read runs at full speed beside another's on a machine with
    few cores, and on SQLite (and DuckDB over segments) the read is done in the
    worker's own threads. An account whose read took more than ``cpu_s`` of its
    thread's CPU is heavy for the next ``for_s`` seconds, and its reads run on threads
    of lower CPU priority (``lower_priority``), so everyone else's light reads go first
    when the cores are contended; on an idle machine the heavy read loses nothing.
    CPU time, not wall time: a read waiting for its neighbours is not made heavy by
    them. Thread-safe (reads end in their threads)."""

    def __init__(self, *, cpu_s: float, for_s: float, max_accounts: int = 10_000) -> None:
        self.cpu_s = cpu_s
        self.for_s = for_s
        self.max_accounts = max_accounts
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def is_heavy(self, account_id: str, now_s: float) -> bool:
        with self._lock:
            until = self._until.get(account_id)
            return until is not None and until > now_s

    def read_took(
        self, account_id: str, cpu_s: float, now_s: float, *, threshold_s: float | None = None
    ) -> None:
        """A read of ``account_id`` took ``cpu_s``; heavy past ``threshold_s`` (the app's
        setting) or the tracker's own ``cpu_s``."""
        if cpu_s <= (self.cpu_s if threshold_s is None else threshold_s):
            return
        with self._lock:
            if len(self._until) >= self.max_accounts:
                self._until = {key: until for key, until in self._until.items() if until > now_s}
            if len(self._until) < self.max_accounts or account_id in self._until:
                self._until[account_id] = now_s + self.for_s


# How much lower a heavy read's thread runs (nice), where the system allows it.
HEAVY_NICE = 10


def lower_priority() -> None:
    """A thread pool's initializer: the calling thread runs at ``HEAVY_NICE`` more than
    the process (Linux schedules each thread with its own nice value). Where threads
    cannot be given one (another system, a sandbox), they run as they are."""
    try:
        thread = threading.get_native_id()
        current = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, current + HEAVY_NICE))
    except (AttributeError, OSError):
        pass
