"""Start the live tests' ``tidegate serve`` processes without paying for Python's imports
each time.

A live server spends most of its start importing: FastAPI, pydantic, SQLAlchemy and the
route tree cost about 2.3 s of CPU on CI's two cores, against 0.7 s for everything else
(migrations, building the app, the lifespan); the suite starts some 150 servers. So each
test process keeps one launcher: a process that has imported what ``tidegate serve``
imports, once, and forks a child for each server, which then runs the ``tidegate``
command exactly as ``python -m tidegate`` does (its argv, environment, working
directory, output to the server's log and the listening socket the harness holds).
Gunicorn's ``--preload`` starts workers the same way, and prometheus_client's
multiprocess values expect it (they reopen their files when the pid changes).

What stays real: every line of the server's own code runs in the child, from
``tidegate.cli.main`` on, against real databases and real sockets; a server started with
several workers spawns them as in production. ``TIDEGATE_TEST_LAUNCHER=0`` starts every
server with ``subprocess.Popen`` instead, and tests/e2e/test_launcher.py starts servers
both ways.

Run as a script, this file is the launcher (``python tests/launcher.py <fd>``); imported,
it is the harness's side (``Launcher``)."""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from typing import Any

# One request or answer is one datagram (SOCK_SEQPACKET); an environment is a few KB.
MAX_MESSAGE = 1 << 20
FD_PLACEHOLDER = "{fd}"


class LaunchedProcess:
    """What the tests use of ``subprocess.Popen``, for a server the launcher forked: its
    pid, its exit status (the launcher is its parent and reaps it), signals."""

    def __init__(self, launcher: Launcher, pid: int, args: list[str]) -> None:
        self.launcher = launcher
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.launcher.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.02)
        return code

    def send_signal(self, signum: int) -> None:
        # Not after it was reaped: its pid may belong to another process by then.
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Launcher:
    """The harness's side: starts the launcher process on first use (one per test
    process) and asks it for servers. Thread-safe: one request at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: socket.socket | None = None

    def spawn(
        self, args: list[str], *, env: dict[str, str], cwd: str, log: str, fd: int
    ) -> LaunchedProcess:
        """Run ``tidegate <args>`` in a child; ``{fd}`` in ``args`` names the child's copy
        of the listening socket ``fd``."""
        answer = self._ask(
            {"op": "spawn", "args": args, "env": env, "cwd": cwd, "log": log}, fds=[fd]
        )
        return LaunchedProcess(self, int(answer["pid"]), ["tidegate", *args])

    def exit_code(self, pid: int) -> int | None:
        code = self._ask({"op": "poll", "pid": pid})["code"]
        return None if code is None else int(code)

    def close(self) -> None:
        """Stop the launcher (it stops any server still running) and wait for it."""
        with self._lock:
            if self._channel is not None:
                self._channel.close()
                self._channel = None
            if self._process is not None:
                try:
                    self._process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
                self._process = None

    def _ask(self, request: dict[str, Any], fds: Sequence[int] = ()) -> dict[str, Any]:
        with self._lock:
            channel = self._ensure_started()
            socket.send_fds(channel, [json.dumps(request).encode()], list(fds))
            data = channel.recv(MAX_MESSAGE)
        if not data:
            raise RuntimeError("the server launcher has gone")
        answer: dict[str, Any] = json.loads(data)
        if "error" in answer:
            raise RuntimeError(f"the server launcher failed:\n{answer['error']}")
        return answer

    def _ensure_started(self) -> socket.socket:
        if self._channel is not None and self._process is not None:
            if self._process.poll() is None:
                return self._channel
            self._channel.close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self._process = subprocess.Popen(
                [sys.executable, __file__, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                stdin=subprocess.DEVNULL,
            )
        self._channel = ours
        ready = json.loads(ours.recv(MAX_MESSAGE) or b'{"error": "exited at start"}')
        if "error" in ready:
            raise RuntimeError(f"the server launcher did not start:\n{ready['error']}")
        return ours


# --- the launcher process ---------------------------------------------------------------


def _preload(metrics_dir: str) -> None:
    """Import what ``tidegate serve`` imports, by doing what it does short of serving."""
    import tempfile

    # prometheus_client picks its multiprocess mode at import, as `tidegate serve` has it
    # (cli._prepare_metrics_dir); each child's values reopen in its own directory.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    import uvicorn.main  # noqa: F401

    import tidegate.api.http_server
    import tidegate.bootstrap
    import tidegate.cli
    import tidegate.db.migrate  # noqa: F401
    from tidegate.app import create_app
    from tidegate.config import Settings

    with tempfile.TemporaryDirectory() as data_dir:
        create_app(Settings(database_url="sqlite+aiosqlite://", data_dir=data_dir))
    del os.environ["PROMETHEUS_MULTIPROC_DIR"]
    # A thread would not survive the fork: nothing imported may have started one.
    assert threading.active_count() == 1, threading.enumerate()


def _child(request: dict[str, Any], fd: int) -> None:
    """In the forked child: become ``python -m tidegate <args>`` and never return."""
    code = 1
    try:
        os.chdir(request["cwd"])
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        # The launcher's other descriptors stay open: they are its imports' files (the
        # metric values' files, which prometheus_client closes itself on seeing a new pid).
        # Closed under them, their numbers would be reused and closed again later.
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.path[0] = os.getcwd()  # as `python -m` has it
        sys.argv = ["tidegate", *(str(fd) if a == FD_PLACEHOLDER else a for a in request["args"])]
        import runpy

        runpy.run_module("tidegate", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        # What an interpreter does on its way out, then out without the launcher's own.
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _serve(channel: socket.socket) -> None:
    children: dict[int, int | None] = {}
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(channel, MAX_MESSAGE, 4)
        except ConnectionResetError:
            data, fds = b"", []
        if not data:
            break
        request = json.loads(data)
        try:
            if request["op"] == "spawn":
                (fd,) = fds
                pid = os.fork()
                if pid == 0:
                    channel.close()
                    _child(request, fd)
                os.close(fd)
                children[pid] = None
                answer: dict[str, Any] = {"pid": pid}
            else:
                pid = request["pid"]
                if children.get(pid) is None:
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        children[pid] = os.waitstatus_to_exitcode(status)
                answer = {"code": children[pid]}
        except Exception:
            answer = {"error": traceback.format_exc()}
        channel.send(json.dumps(answer).encode())
    # The test process is gone: so are the servers it left running.
    for pid, code in children.items():
        if code is None:
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def main(fd: int) -> None:
    import shutil
    import tempfile

    channel = socket.socket(fileno=fd)
    # Ctrl-C in the test run is the test process's to handle; it then closes the channel.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    metrics_dir = tempfile.mkdtemp(prefix="tidegate-launcher-")
    try:
        _preload(metrics_dir)
    except BaseException:
        channel.send(json.dumps({"error": traceback.format_exc()}).encode())
        raise
    channel.send(b'{"ready": true}')
    try:
        _serve(channel)
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
