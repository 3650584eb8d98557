"""Tenant JavaScript, run in a small pool of sandbox processes, never in the server's.

``Sandbox.run(script, events, now_ms)`` answers one ``Outcome`` per event: the event the
script returned, dropped (it returned null), failed (it threw, or ran past a limit: the
caller passes that event on unchanged) or skipped (the batch's budget was spent first).
``Sandbox.fold(script, slots, steps, now_ms)`` folds events into accumulated events
(the aggregate processor's ``CUSTOM``), one ``Outcome`` per step; a slot's accumulated
event comes back once per batch (after its last step), not after every step.
``Sandbox.check(script)`` loads a script once (its top level runs, under the same
limits) and answers why it does not load, or None.

Each sandbox process (``child.py``, QuickJS) loads a script once (by the digest of its
text) and keeps it for the following batches. The engine bounds each event: CPU time
and memory per call, the stack. Around it, this side bounds what the engine cannot:
every event's answer must come within ``event_wall_s`` (whatever the engine does not
interrupt, or a process that stalls): past it the process is killed, that event fails, and the rest of the batch goes to a fresh process; a whole batch has
``batch_wall_s``. The process runs with an address-space limit and a lower priority
than the server, and ends with it.

The work is blocking I/O on pipes, done in a thread pool of its own (one thread per
process), so the event loop only awaits it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hashlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal

import orjson

from tidegate.components.processors.javascript import child

__all__ = ["Limits", "Outcome", "Sandbox", "Script", "ScriptUser", "Slot", "shared_sandbox"]

MiB: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """What one script may use. The engine enforces the first group in the sandbox
    process; this side enforces the wall-clock ones."""

    event_cpu_ms: int = 100
    """CPU time of one call of the function (QuickJS's interrupt handler)."""
    load_cpu_ms: int = 1_000
    """CPU time of the script's top level, run once per load."""
    batch_cpu_ms: int = 2_000
    """CPU time of one batch in the sandbox process: past it, the rest is skipped."""
    memory_bytes: int = 64 * MiB
    """The script's QuickJS runtime: its allocator refuses past this."""
    stack_bytes: int = 1 * MiB
    event_output_bytes: int = 1 * MiB
    """One returned event's JSON (or twice the event given, if more)."""
    batch_output_bytes: int = 32 * MiB
    """A batch's returned events (or twice the batch given, if more)."""
    retained_bytes: int = 8 * MiB
    """A script holding more between batches is loaded afresh for the next one."""
    address_space_bytes: int = 1024 * MiB
    """The sandbox process's address space (``RLIMIT_AS``), past the engine's limits."""
    nice: int = 5
    """The sandbox process's priority below the server's."""
    event_wall_s: float = 2.0
    """Wall-clock time for one event's answer: past it, the process is killed."""
    batch_wall_s: float = 10.0
    check_wall_s: float = 10.0
    """Wall-clock time to load a script (``check``, or before a batch's first event)."""
    start_wall_s: float = 30.0
    """Wall-clock time for a new sandbox process to start."""
    processes: int = 2
    """Sandbox processes per server process, started when first needed."""


@dataclass(frozen=True, slots=True)
class Script:
    """A script's text and its digest: what a sandbox process loads once."""

    source: str
    digest: str

    @classmethod
    def of(cls, source: str) -> Script:
        return cls(source, hashlib.sha256(source.encode()).hexdigest())


Kind = Literal["event", "dropped", "failed", "skipped"]


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: Kind
    event: dict[str, Any] | None = None
    """The event returned (``kind == "event"``)."""
    reason: str = ""
    """Why it failed or was skipped."""


DROPPED: Final = Outcome("dropped")
FOLDED: Final = Outcome("event")
"""A step folded into its slot (``fold``): the slot holds the accumulated event."""
_KEPT: Final = Outcome("skipped", reason="kept")
"""``fold``'s ``F``: folded, the accumulated event kept by the process until the
slot's last step (made ``FOLDED`` when it comes, failed when it never does)."""


@dataclass(slots=True)
class Slot:
    """One accumulated event (an aggregate window's) that ``Sandbox.fold`` folds into:
    what the function last returned, with the window's ``metadata.aggregate``."""

    accum: dict[str, Any]
    count: int
    start_ms: int
    end_ms: int

    def aggregate(self) -> dict[str, int]:
        return {
            "event_count": self.count,
            "start_timestamp": self.start_ms,
            "end_timestamp": self.end_ms,
        }


class _Ended(Exception):
    """The sandbox process ended, or its stream broke."""


class _Unavailable(Exception):
    """No sandbox process could be started."""


_ENVIRONMENT: Final = ("PATH", "LD_LIBRARY_PATH", "TZ", "LANG", "LC_ALL")
"""What a sandbox process inherits of the server's environment (none of its settings)."""


class _Process:
    """One sandbox process and its pipes; used by one thread at a time."""

    def __init__(self, limits: Limits) -> None:
        settings = {**asdict(limits), "parent": os.getpid()}
        self.popen = subprocess.Popen(
            [sys.executable, "-I", str(Path(child.__file__)), json.dumps(settings)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={name: os.environ[name] for name in _ENVIRONMENT if name in os.environ},
            cwd="/",
            close_fds=True,
            start_new_session=True,  # a terminal's Ctrl-C is the server's to handle
        )
        assert self.popen.stdin is not None
        assert self.popen.stdout is not None
        self.stdin = self.popen.stdin
        self.fd = self.popen.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.poller = select.poll()
        self.poller.register(self.fd, select.POLLIN)
        self.buffer = bytearray()
        self.known: set[str] = set()
        """Digests of the scripts sent to it (it may have let some go since)."""

    def ready(self, wait_s: float) -> bool:
        try:
            answer = self.receive(time.monotonic() + wait_s)
        except _Ended:
            return False
        return answer is not None and answer[0] == b"R"

    def send(self, frames: Sequence[bytes]) -> None:
        try:
            self.stdin.write(b"".join(frames))
            self.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise _Ended from None

    def receive(self, deadline: float) -> tuple[bytes, bytes] | None:
        """The next answer ``(code, payload)``, or None when ``deadline`` (monotonic)
        passes first; ``_Ended`` when the process ended."""
        while True:
            answer = self._parse()
            if answer is not None:
                return answer
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not self.poller.poll(max(1, int(left * 1000))):
                continue
            try:
                chunk = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                continue
            except OSError:
                raise _Ended from None
            if not chunk:
                raise _Ended
            self.buffer += chunk

    def _parse(self) -> tuple[bytes, bytes] | None:
        size_bytes = child.HEADER.size
        if len(self.buffer) < size_bytes:
            return None
        (size,) = child.HEADER.unpack_from(self.buffer)
        if size < 1 or size > child.MAX_FRAME:
            raise _Ended
        if len(self.buffer) < size_bytes + size:
            return None
        body = bytes(self.buffer[size_bytes : size_bytes + size])
        del self.buffer[: size_bytes + size]
        return body[:1], body[1:]

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.popen.kill()
        with contextlib.suppress(OSError, ValueError):
            self.stdin.close()
        with contextlib.suppress(OSError, ValueError):
            assert self.popen.stdout is not None
            self.popen.stdout.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)


class Sandbox:
    """A pool of at most ``limits.processes`` sandbox processes, started when needed."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._lock = threading.Lock()
        self._idle: list[_Process] = []
        self._running: set[_Process] = set()
        self._executor = ThreadPoolExecutor(
            max_workers=self.limits.processes, thread_name_prefix="js-sandbox"
        )
        self.started = 0
        """Sandbox processes started so far (a killed one is replaced)."""
        self.killed = 0
        """Sandbox processes killed by the watchdog, or found ended."""

    async def run(self, script: Script, events: Sequence[Any], now_ms: int) -> list[Outcome]:
        loop = asyncio.get_running_loop()
        job = partial(self._run, script, list(events), now_ms)
        return await loop.run_in_executor(self._executor, job)

    async def fold(
        self, script: Script, slots: list[Slot], steps: Sequence[tuple[int, Any]], now_ms: int
    ) -> list[Outcome]:
        """Folds each step's event, in order, into its slot's accumulated event (the
        function called as ``fn(accum, event)`` returns the new one). Answers one
        ``Outcome`` per step: ``event`` (the slot's new accumulated event, also written
        to the slot with its count) or ``failed`` / ``skipped`` (the slot is as it was)."""
        loop = asyncio.get_running_loop()
        job = partial(self._fold, script, slots, list(steps), now_ms)
        return await loop.run_in_executor(self._executor, job)

    async def check(self, script: Script) -> str | None:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._check, script)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            processes = [*self._idle, *self._running]
            self._idle.clear()
            self._running.clear()
        for process in processes:
            process.kill()

    def processes(self) -> int:
        with self._lock:
            return len(self._idle) + len(self._running)

    def busy(self) -> int:
        """Sandbox processes running a request now."""
        with self._lock:
            return len(self._running)

    # -- in the pool's threads --------------------------------------------------------

    def _take(self) -> _Process:
        with self._lock:
            if self._idle:
                process = self._idle.pop()
                self._running.add(process)
                return process
            self.started += 1
        try:
            process = _Process(self.limits)
        except OSError as error:
            raise _Unavailable(f"the JavaScript sandbox could not start: {error}") from None
        if not process.ready(self.limits.start_wall_s):
            process.kill()
            raise _Unavailable("the JavaScript sandbox could not start")
        with self._lock:
            self._running.add(process)
        return process

    def _give(self, process: _Process, *, alive: bool) -> None:
        with self._lock:
            self._running.discard(process)
            if alive:
                self._idle.append(process)
                return
            self.killed += 1
        process.kill()

    def _header(self, op: str, script: Script, **extra: Any) -> bytes:
        limits = {
            name: value
            for name, value in asdict(self.limits).items()
            if not name.endswith("_s") and name != "processes"
        }
        body = {"op": op, "digest": script.digest, "source": script.source, "limits": limits}
        return child.frame(orjson.dumps({**body, **extra}))

    def _check(self, script: Script) -> str | None:
        for attempt in range(2):
            try:
                process = self._take()
            except _Unavailable as error:
                return str(error)
            alive = False
            try:
                process.send([self._header("check", script)])
                answer = process.receive(time.monotonic() + self.limits.check_wall_s)
                if answer is None:
                    return (
                        "the script's top level did not finish within "
                        f"{self.limits.check_wall_s:g} s"
                    )
                alive = True
                process.known.add(script.digest)
                code, payload = answer
                return None if code == b"K" else payload.decode(errors="replace")
            except _Ended:
                if attempt:
                    return "the script's top level ended its sandbox process"
            finally:
                self._give(process, alive=alive)
        return None  # pragma: no cover - the loop returns

    def _run(self, script: Script, events: list[Any], now_ms: int) -> list[Outcome]:
        outcomes: list[Outcome | None] = [None] * len(events)
        encoded = _encoded(events, outcomes)

        def header(count: int) -> bytes:
            return self._header("run", script, now=float(now_ms), count=count)

        return self._exchange(script, encoded, outcomes, header)

    def _fold(
        self, script: Script, slots: list[Slot], steps: list[tuple[int, Any]], now_ms: int
    ) -> list[Outcome]:
        outcomes: list[Outcome | None] = [None] * len(steps)
        encoded = _encoded([event for _, event in steps], outcomes)
        unwritable = {number for number, slot in enumerate(slots) if not _writable(slot.accum)}
        for index in list(encoded):
            if steps[index][0] in unwritable:
                del encoded[index]
                reason = "the accumulated event cannot be written as JSON"
                outcomes[index] = Outcome("failed", reason=reason)
            else:
                encoded[index] = b"%d\n" % steps[index][0] + encoded[index]

        def header(count: int) -> bytes:
            sent = [
                {"accum": {} if number in unwritable else slot.accum, "aggregate": slot.aggregate()}
                for number, slot in enumerate(slots)
            ]
            return self._header("fold", script, now=float(now_ms), count=count, slots=sent)

        # Steps answered F since their slot's accumulated event last came back.
        kept: dict[int, list[int]] = {}

        def confirm(number: int, accum: dict[str, Any], also: int) -> None:
            indexes = kept.pop(number, [])
            slot = slots[number]
            slot.accum = accum
            slot.count += len(indexes) + also
            for index in indexes:
                outcomes[index] = FOLDED

        def answered(index: int, outcome: Outcome) -> None:
            number = steps[index][0]
            if outcome is _KEPT:
                kept.setdefault(number, []).append(index)
            elif outcome.kind == "event" and outcome.event is not None:
                confirm(number, outcome.event, 1)

        def accumulated(payload: bytes) -> None:
            """``A``: a slot's kept accumulated event, before its last step's answer."""
            number_text, _, data = payload.partition(b"\n")
            number = int(number_text)
            try:
                accum = orjson.loads(data)
            except orjson.JSONDecodeError:
                accum = None
            if isinstance(accum, dict) and 0 <= number < len(slots):
                confirm(number, accum, 0)

        def lost() -> None:
            """The process is stopped: the steps it folded and kept are lost to their
            windows (the next process folds from what came back), as steps that failed."""
            for indexes in kept.values():
                for index in indexes:
                    outcomes[index] = Outcome(
                        "failed",
                        reason="folded by a sandbox process that was stopped before it "
                        "answered with the accumulated event",
                    )
            kept.clear()

        answers = self._exchange(
            script, encoded, outcomes, header, answered, accumulated=accumulated, lost=lost
        )
        lost()
        return [outcome or answer for outcome, answer in zip(outcomes, answers, strict=True)]

    def _exchange(
        self,
        script: Script,
        encoded: dict[int, bytes],
        outcomes: list[Outcome | None],
        header: Callable[[int], bytes],
        answered: Callable[[int, Outcome], None] | None = None,
        *,
        accumulated: Callable[[bytes], None] | None = None,
        lost: Callable[[], None] | None = None,
    ) -> list[Outcome]:
        """Sends the ``encoded`` items (by index) to a sandbox process, ``header(count)``
        first, and collects an outcome for each (``fold``'s ``A`` frames, which answer no
        item, go to ``accumulated``); the rest go to a fresh process after one was
        stopped (``lost`` is told)."""
        limits = self.limits
        todo = list(encoded)
        deadline = time.monotonic() + limits.batch_wall_s
        position = 0
        resent = False
        while position < len(todo):
            if time.monotonic() >= deadline:
                reason = f"the batch's time budget ({limits.batch_wall_s:g} s) was spent"
                for index in todo[position:]:
                    outcomes[index] = Outcome("skipped", reason=reason)
                break
            chunk = todo[position:]
            try:
                process = self._take()
            except _Unavailable as error:
                for index in chunk:
                    outcomes[index] = Outcome("failed", reason=str(error))
                break
            alive = False
            try:
                first = header(len(chunk))
                process.send([first, *(child.frame(encoded[index]) for index in chunk)])
                alive = True
                # The first event may wait for the script to load.
                loading = 0.0 if script.digest in process.known else limits.check_wall_s
                process.known.add(script.digest)
                deadline += loading
                for index in chunk:
                    own = time.monotonic() + limits.event_wall_s + loading
                    loading = 0.0
                    answer = process.receive(min(own, deadline))
                    while answer is not None and answer[0] == b"A" and accumulated is not None:
                        accumulated(answer[1])
                        answer = process.receive(min(own, deadline))
                    if answer is None:
                        alive = False
                        outcomes[index] = Outcome("failed", reason=_late(limits, own > deadline))
                        position += 1
                        break
                    outcomes[index] = outcome = _outcome(*answer)
                    if answered is not None:
                        answered(index, outcome)
                    position += 1
            except _Ended:
                if not alive and not resent:
                    resent = True  # it had ended before this batch: send again, once
                else:
                    outcomes[todo[position]] = Outcome(
                        "failed", reason="its sandbox process ended while running it"
                    )
                    position += 1
                alive = False
            finally:
                self._give(process, alive=alive)
                if not alive and lost is not None:
                    lost()
        return [outcome or Outcome("failed", reason="not run") for outcome in outcomes]


def _encoded(events: list[Any], outcomes: list[Outcome | None]) -> dict[int, bytes]:
    """Each event's JSON by index; one that JSON cannot hold fails here."""
    encoded: dict[int, bytes] = {}
    for index, event in enumerate(events):
        try:
            encoded[index] = orjson.dumps(event)
        except (TypeError, orjson.JSONEncodeError):
            outcomes[index] = Outcome("failed", reason="the event cannot be written as JSON")
    return encoded


def _writable(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return False
    return True


def _late(limits: Limits, batch: bool) -> str:
    spent = (
        f"the batch's time budget ({limits.batch_wall_s:g} s) ran out while the function ran"
        if batch
        else f"the function did not answer within {limits.event_wall_s:g} s (wall clock)"
    )
    return f"{spent}; its sandbox process was stopped"


def _outcome(code: bytes, payload: bytes) -> Outcome:
    if code == b"E":
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return Outcome("failed", reason="the event returned is not JSON")
        if isinstance(event, dict):
            return Outcome("event", event)
        return Outcome("failed", reason="the event returned is not an object")
    if code == b"D":
        return DROPPED
    if code == b"S":
        return Outcome("skipped", reason="the batch's CPU time budget was spent")
    if code == b"F":
        return _KEPT
    return Outcome("failed", reason=payload.decode(errors="replace"))


class ScriptUser:
    """A processor running a tenant's script: the sandbox (this server process's shared
    one unless given) and the failures reported (logged once per batch, counted in
    ``errors``)."""

    def __init__(self, script: Script, sandbox: Sandbox | None = None, *, name: str = "") -> None:
        self.script = script
        self._sandbox = sandbox
        self._name = name
        self.errors = 0

    @property
    def sandbox(self) -> Sandbox:
        return self._sandbox or shared_sandbox()

    def _failed(self, kind: str, count: int, what: str, reason: str) -> None:
        if count:
            self.errors += count
            _log.warning("%s %s: %d event(s) %s: %s", kind, self._name, count, what, reason)


_log = logging.getLogger("tidegate.runtime.processors")

_shared: Sandbox | None = None
_shared_lock = threading.Lock()


def shared_sandbox() -> Sandbox:
    """This server process's sandbox pool (its processes start when first needed)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Sandbox()
            atexit.register(_shared.close)
        return _shared
