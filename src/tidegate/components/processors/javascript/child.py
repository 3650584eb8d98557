"""The sandbox process: runs tenant JavaScript with QuickJS, never in the server.

Started by ``sandbox.Sandbox`` as ``python -I <this file>``; it imports only the standard
library and ``quickjs`` (the quickjs-ng engine), and speaks frames over its standard
input and output: a 4-byte big-endian length, then the payload.

A request is a header frame (JSON: ``op``, the script's ``source`` and ``digest``, the
limits) followed, for ``run``, by ``count`` frames of one event's JSON each; for
``fold`` (the aggregate processor's ``CUSTOM``), the header's ``slots`` (accumulated
events) and ``count`` steps, each ``<slot>\n<event JSON>``. The answer
to ``check`` is one frame; to ``run`` and ``fold``, one frame per event or step, in
order, each written as soon as it is done (so the parent knows which one a hang belongs
to):

* ``E`` + the new event's JSON, ``D`` (dropped: the function returned null),
* ``X`` + why the event failed (it passes unchanged), ``S`` (not run: the batch's
  budget was spent), ``K`` (``check``: the script loads),
* ``F`` (``fold``: folded, its accumulated event kept here because a later step of
  the request folds into the same slot). A slot's last step that folds answers ``E``
  with the slot's accumulated event; when it does not (a failure, the budget), an
  ``A`` + ``<slot>\n<accumulated event>`` frame comes before its answer, for a slot
  whose accumulated event was kept. So an accumulated event crosses the pipe once per
  slot and request, not once per step.

Once started (the engine imported), the process says ``R``.

Each script (by digest) gets its own QuickJS runtime with the engine's limits: a memory
limit (its allocator refuses past it), a CPU-time limit per call (the engine's
interrupt handler; QuickJS measures ``clock()``, this process's CPU time, restarted at
every call) and a stack limit. A runtime that hit its memory or time limit is thrown
away and the script loaded again before its next event (a fresh global state). The
engine checks its interrupt in loops, calls and regular expressions; what it does not
check (native code that never returns) is the parent's wall-clock watchdog's: it kills
this process.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import struct
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, BinaryIO, Final

__all__ = ["HEADER", "frame", "main"]

HEADER: Final = struct.Struct(">I")
MAX_FRAME: Final = 256 * 1024 * 1024
"""A larger frame is a broken stream: the process ends."""

MAX_SCRIPTS: Final = 32
"""Loaded scripts kept (least recently used leave first)."""

# Captured before the tenant's script runs, so the script cannot change what the
# wrapper uses (it can only break its own results, in its own runtime).
_WRAP: Final = r"""
(function () {
  "use strict";
  const parse = JSON.parse, stringify = JSON.stringify, isArray = Array.isArray;
  const keys = Object.keys, hasOwn = Object.prototype.hasOwnProperty;
  const PromiseType = Promise, Fail = TypeError;
  function isObject(value) {
    return value !== null && typeof value === "object" && !isArray(value);
  }
  return function wrap(fn) {
    return function (text, now) {
      const message = parse(text);
      const given = message.metadata;
      const own = isObject(given);
      const metadata = own ? given : {};
      const timestamp = message.timestamp === undefined ? now : message.timestamp;
      let result = fn(message, metadata, timestamp, {});
      if (result === null) return null;
      if (result === undefined) {
        throw new Fail("the function returned undefined: return the event, or null to drop it");
      }
      if (result instanceof PromiseType) {
        throw new Fail("the function returned a Promise: return the event itself");
      }
      const kind = typeof result;
      if (kind === "function" || kind === "symbol") {
        throw new Fail("the function returned a " + kind + ": return the event");
      }
      if (!isObject(result)) result = { message: result };
      if (!own && keys(metadata).length > 0 && !hasOwn.call(result, "metadata")) {
        result.metadata = metadata;
      }
      return stringify(result);
    };
  };
})()
"""

# The aggregate processor's CUSTOM operation: the function folds an event into the
# window's accumulated event and returns the new one.
_WRAP_FOLD: Final = r"""
(function () {
  "use strict";
  const parse = JSON.parse, stringify = JSON.stringify, isArray = Array.isArray;
  const PromiseType = Promise, Fail = TypeError;
  function isObject(value) {
    return value !== null && typeof value === "object" && !isArray(value);
  }
  return function wrap(fn) {
    return function (accumText, eventText, aggregateText) {
      const accum = parse(accumText);
      const event = parse(eventText);
      if (!isObject(accum.metadata)) accum.metadata = {};
      accum.metadata.aggregate = parse(aggregateText);
      const result = fn(accum, event);
      if (result instanceof PromiseType) {
        throw new Fail("the function returned a Promise: return the accumulated event itself");
      }
      if (!isObject(result)) {
        const kind = result === null ? "null" : isArray(result) ? "an array" : typeof result;
        throw new Fail("the function returned " + kind + ": return the accumulated event (an object)");
      }
      return stringify(result);
    };
  };
})()
"""

_CREATED: Final = r"""
(function (global) {
  const names = Object.getOwnPropertyNames, stringify = JSON.stringify;
  const before = Object.create(null);
  const existing = names(global);
  for (let i = 0; i < existing.length; i++) before[existing[i]] = true;
  return function created() {
    const now = names(global), found = [];
    for (let i = 0; i < now.length; i++) {
      const name = now[i];
      if (!before[name] && typeof global[name] === "function") found.push(name);
    }
    return stringify(found);
  };
})(globalThis)
"""

_CONSOLE: Final = """
globalThis.console = (function () {
  const quiet = function () {};
  return { log: quiet, info: quiet, warn: quiet, error: quiet, debug: quiet, trace: quiet };
})();
"""

_NAMED: Final = 'typeof processEvent === "function" ? processEvent : null'


def frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


class ScriptFailed(Exception):
    """The script does not load: every event of it fails with this reason."""


class Script:
    """One script's QuickJS runtime and the wrapped function (loaded on first use)."""

    def __init__(self, source: str, limits: dict[str, Any]) -> None:
        self.source = source
        self.limits = limits
        self.runner: Any = None
        self.folder: Any = None
        self.context: Any = None
        self.failure: str | None = None

    def ready(self) -> Any:
        if self.failure is not None:
            raise ScriptFailed(self.failure)
        if self.runner is None:
            try:
                self._load()
            except ScriptFailed as failed:
                self.failure = str(failed)
                self.context = None
                raise
        return self.runner

    def fold_ready(self) -> Any:
        self.ready()
        return self.folder

    def _load(self) -> None:
        import quickjs

        context = quickjs.Context()
        context.set_memory_limit(int(self.limits["memory_bytes"]))
        context.set_max_stack_size(int(self.limits["stack_bytes"]))
        context.set_time_limit(float(self.limits["load_cpu_ms"]) / 1000)
        try:
            wrap = context.eval(_WRAP)
            wrap_fold = context.eval(_WRAP_FOLD)
            created = context.eval(_CREATED)
            context.eval(_CONSOLE)
            context.eval(self.source)
            function = context.eval(_NAMED)
            if function is None:
                names = json.loads(created())
                if len(names) != 1:
                    raise ScriptFailed(
                        "the script must define a function processEvent (or exactly one "
                        f"function; it defines {len(names)})"
                    )
                function = context.eval(f"globalThis[{json.dumps(names[0])}]")
            runner = wrap(function)
            folder = wrap_fold(function)
        except ScriptFailed:
            raise
        except Exception as error:  # any: the engine's errors, and the script's throws
            raise ScriptFailed(_reason(error, self.limits, loading=True)) from None
        context.set_time_limit(float(self.limits["event_cpu_ms"]) / 1000)
        self.context, self.runner, self.folder = context, runner, folder

    def reset(self) -> None:
        """Throw the runtime away (it hit a limit): loaded again before the next event."""
        self.context = self.runner = self.folder = None

    def retained(self) -> int:
        if self.context is None:
            return 0
        self.context.gc()
        return int(self.context.memory().get("malloc_size", 0))


def _reason(error: BaseException, limits: dict[str, Any], *, loading: bool = False) -> str:
    where = "the script's top level" if loading else "the function"
    if isinstance(error, MemoryError):  # the process's own limit, past the engine's
        return f"{where} ran past its memory limit (the sandbox process's)"
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    if first.startswith("InternalError: interrupted"):
        budget = limits["load_cpu_ms"] if loading else limits["event_cpu_ms"]
        return f"{where} ran past its CPU time budget ({budget} ms)"
    if first in ("null", "InternalError: out of memory") or "out of memory" in first:
        return f"{where} ran past its memory limit ({limits['memory_bytes'] // (1024 * 1024)} MiB)"
    if "stack overflow" in first:
        return f"{where} ran past its stack limit (stack overflow)"
    return first[:500]


def _limit_hit(reason: str) -> bool:
    return "CPU time budget" in reason or "memory limit" in reason


class Fold:
    """One ``fold`` request: the slots' accumulated events, and what the parent has
    seen of them. A step folded into a slot that a later step of the request folds
    into again is answered ``F`` and its accumulated event kept here; the slot's last
    step sends it (``E``), or, when that step does not fold, an ``A`` frame before its
    answer. While a step runs, the output's thread sends the kept ones (``send_kept``,
    every ``FLUSH_S``), so a process stopped in a step that hangs has already sent
    every slot as the steps before it left it. Folding a step and answering it hold
    the lock that sending the kept ones takes: an ``A`` frame never comes before the
    answer of a step it holds."""

    def __init__(
        self,
        slots: list[dict[str, Any]],
        steps: list[bytes],
        script: Script,
        write: Callable[..., None],
    ) -> None:
        self.accums = [json.dumps(slot["accum"]) for slot in slots]
        self.aggregates = [dict(slot["aggregate"]) for slot in slots]
        self.slot_of = [int(raw.partition(b"\n")[0]) for raw in steps]
        self.last = {slot: index for index, slot in enumerate(self.slot_of)}
        self.kept: set[int] = set()
        self.script = script
        self.write = write
        self.lock = threading.Lock()
        self.done = False

    def call(self, raw: bytes) -> Any:
        number, _, event = raw.partition(b"\n")
        slot = int(number)
        with self.lock:
            accum, aggregate = self.accums[slot], json.dumps(self.aggregates[slot])
        return self.script.fold_ready()(accum, event.decode(), aggregate)

    def keeps(self, index: int) -> bool:
        return self.last[self.slot_of[index]] != index

    def folded(self, index: int, result: str) -> None:
        slot = self.slot_of[index]
        with self.lock:
            self.accums[slot] = result
            aggregate = self.aggregates[slot]
            aggregate["event_count"] = int(aggregate.get("event_count", 0)) + 1
            if self.last[slot] == index:
                self.kept.discard(slot)
            else:
                self.kept.add(slot)
                self.write(b"F")

    def unfolded(self, index: int) -> int:
        """Before the answer of a step that did not fold: its slot's kept accumulated
        event when it was the slot's last step; the bytes sent."""
        slot = self.slot_of[index]
        with self.lock:
            if self.last[slot] != index or slot not in self.kept:
                return 0
            self.kept.discard(slot)
            data = self.accums[slot].encode()
            self.write(b"A", b"%d\n" % slot + data)
            return len(data)

    def send_kept(self, done: bool = False) -> None:
        with self.lock:
            if self.done:
                return
            self.done = done
            for slot in sorted(self.kept):
                self.write(b"A", b"%d\n" % slot + self.accums[slot].encode())
            self.kept.clear()


class Output:
    """Answers, written in chunks: at ``FLUSH_BYTES``, at the end of a request, and, by
    a thread of its own, whenever an event has been running for ``FLUSH_S`` (the engine
    releases the GIL while it runs), so the parent always holds the answers of every
    event before one that hangs."""

    def __init__(self, out: int) -> None:
        self.out = out
        self.lock = threading.Lock()
        self.pending: list[bytes] = []
        self.size = 0
        self.busy = threading.Event()
        self.tick: Callable[[], None] | None = None
        """Called before each of the thread's flushes (``fold``'s kept accumulated events)."""
        threading.Thread(target=self._watch, name="flush", daemon=True).start()

    def write(self, code: bytes, payload: bytes = b"") -> None:
        data = frame(code + payload)
        with self.lock:
            self.pending.append(data)
            self.size += len(data)
            if self.size >= FLUSH_BYTES:
                self._flush()

    def flush(self) -> None:
        with self.lock:
            self._flush()

    def _flush(self) -> None:
        if not self.pending:
            return
        view = memoryview(b"".join(self.pending))
        self.pending.clear()
        self.size = 0
        while view:
            view = view[os.write(self.out, view) :]

    def _watch(self) -> None:
        while True:
            self.busy.wait()
            time.sleep(FLUSH_S)
            tick = self.tick
            if tick is not None:
                tick()
            self.flush()


FLUSH_BYTES: Final = 64 * 1024
FLUSH_S: Final = 0.01


class Sandbox:
    """The scripts this process has loaded, and the requests it answers."""

    def __init__(self, reader: BinaryIO, out: int) -> None:
        self.reader = reader
        self.output = Output(out)
        self.write = self.output.write
        self.scripts: OrderedDict[str, Script] = OrderedDict()

    def read(self) -> bytes | None:
        head = self.reader.read(HEADER.size)
        if len(head) < HEADER.size:
            return None
        (size,) = HEADER.unpack(head)
        if size > MAX_FRAME:
            return None
        payload = self.reader.read(size)
        return payload if len(payload) == size else None

    def script(self, header: dict[str, Any]) -> Script:
        digest = str(header["digest"])
        found = self.scripts.get(digest)
        if found is None:
            found = Script(str(header["source"]), dict(header["limits"]))
            self.scripts[digest] = found
            while len(self.scripts) > MAX_SCRIPTS:
                self.scripts.popitem(last=False)
        self.scripts.move_to_end(digest)
        return found

    def serve(self) -> None:
        while True:
            payload = self.read()
            if payload is None:
                return
            header = json.loads(payload)
            events = []
            for _ in range(int(header.get("count", 0))):
                event = self.read()
                if event is None:
                    return
                events.append(event)
            self.output.busy.set()
            try:
                if header["op"] == "check":
                    self.check(header)
                elif header["op"] == "fold":
                    self.fold(header, events)
                else:
                    self.run(header, events)
            finally:
                self.output.busy.clear()
                self.output.flush()

    def check(self, header: dict[str, Any]) -> None:
        script = self.script(header)
        try:
            script.ready()
        except ScriptFailed as failed:
            self.write(b"X", str(failed).encode())
            return
        self.write(b"K")

    def run(self, header: dict[str, Any], events: list[bytes]) -> None:
        script = self.script(header)
        now = float(header["now"])
        self._each(script, events, lambda raw: script.ready()(raw.decode(), now))

    def fold(self, header: dict[str, Any], steps: list[bytes]) -> None:
        """Each step is ``<slot>\n<event JSON>``: the event folded into the slot's
        accumulated event (the header's ``slots``: ``accum`` and ``aggregate``, the
        window's ``metadata.aggregate``), which becomes what the function returned."""
        script = self.script(header)
        fold = Fold(header["slots"], steps, script, self.write)
        self.output.tick = fold.send_kept
        try:
            self._each(script, steps, fold.call, fold)
        finally:
            self.output.tick = None
            fold.send_kept(done=True)

    def _each(
        self,
        script: Script,
        events: list[bytes],
        call: Callable[[bytes], Any],
        folding: Fold | None = None,
    ) -> None:
        """Each event (or ``fold``'s step) through ``call``, answered in order."""
        limits = script.limits
        started = time.process_time()
        budget_s = float(limits["batch_cpu_ms"]) / 1000
        output_left = max(int(limits["batch_output_bytes"]), 2 * sum(map(len, events)))

        def refuse(index: int, code: bytes, payload: bytes = b"") -> None:
            nonlocal output_left
            if folding is not None:
                output_left -= folding.unfolded(index)
            self.write(code, payload)

        for index, raw in enumerate(events):
            if time.process_time() - started > budget_s:
                refuse(index, b"S")
                continue
            try:
                result = call(raw)
            except ScriptFailed as failed:
                refuse(index, b"X", f"the script does not load: {failed}".encode())
                continue
            except Exception as error:  # any: the engine's errors, and the script's throws
                reason = _reason(error, limits)
                if _limit_hit(reason):
                    script.reset()
                refuse(index, b"X", reason.encode())
                continue
            if result is None:
                refuse(index, b"D")
                continue
            if not isinstance(result, str):
                refuse(index, b"X", b"the function's result could not be read")
                continue
            data = result.encode()
            allowed = max(int(limits["event_output_bytes"]), 2 * len(raw))
            if len(data) > allowed:
                refuse(
                    index,
                    b"X",
                    f"the event returned is larger than allowed ({allowed} bytes)".encode(),
                )
                continue
            keep = folding is not None and folding.keeps(index)
            if not keep and len(data) > output_left:
                refuse(
                    index,
                    b"X",
                    f"the event returned is larger than allowed ({allowed} bytes)".encode(),
                )
                continue
            if folding is not None:
                folding.folded(index, result)  # answers F itself when it keeps it
                if keep:
                    continue
            output_left -= len(data)
            self.write(b"E", data)
        if script.retained() > int(limits["retained_bytes"]):
            script.reset()


def _end_with_parent(parent: int) -> bool:
    """Linux: killed when the server process ends (even by SIGKILL), so a script that
    never returns does not outlive it. False when the parent is already gone."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # elsewhere: the closed pipe ends the process once it is idle
    return os.getppid() == parent


_PR_SET_PDEATHSIG: Final = 1


def main() -> None:
    limits = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    if "parent" in limits and not _end_with_parent(int(limits["parent"])):
        return
    address_space = int(limits.get("address_space_bytes", 0))
    if address_space:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.nice(int(limits.get("nice", 0)))
    import quickjs  # noqa: F401  (before "ready": a request's time is its script's own)

    sandbox = Sandbox(sys.stdin.buffer, sys.stdout.fileno())
    sandbox.write(b"R")
    sandbox.output.flush()
    sandbox.serve()


if __name__ == "__main__":
    main()
