"""`tidegate throttle`: run a Throttle over newline-delimited JSON on stdin.

    tidegate throttle --config FILE [--dropped FILE] [--time-field PATH]
                      [--redis URL] [--stats]

Events that pass go to stdout one per line, byte for byte as they came in and in
order; discarded ones go to `--dropped FILE` if given. All or nothing: the whole input
is read and checked first (spooled to a temporary file past 64 MiB), so a bad config or
a line that is not a JSON object stops the command with exit status 2 and a message on
stderr naming the line, before anything is written or any Redis state is touched.
Blank lines are not events and are skipped. With `--redis`, keys start with
`TIDEGATE_REDIS_PREFIX` (default `tidegate:`), as the server's do.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from tempfile import SpooledTemporaryFile
from typing import IO, Any, Final

import orjson
from pydantic import ValidationError

from tidegate.config import DEFAULT_REDIS_PREFIX, check_redis_prefix
from tidegate.processing.throttle import (
    RedisStore,
    ThrottleConfig,
    ThrottleProcessor,
    describe_validation_error,
)

__all__ = ["main", "redis_key_prefix"]

PROG: Final = "tidegate throttle"
EXIT_OK: Final = 0
EXIT_IO_ERROR: Final = 1
EXIT_BAD_INPUT: Final = 2
_BATCH: Final = 5_000
_SPOOL_IN_MEMORY: Final = 64 * 1024 * 1024


class _Rejected(Exception):
    """Bad config or input: report and exit with status 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Throttle newline-delimited JSON events from stdin: events that pass are "
            "written to stdout unchanged and in order."
        ),
    )
    parser.add_argument(
        "--config", required=True, metavar="FILE", help="file holding the user_config JSON"
    )
    parser.add_argument("--dropped", metavar="FILE", help="write discarded events to FILE")
    parser.add_argument(
        "--time-field",
        metavar="PATH",
        help="throttle by this event field (epoch ms or RFC 3339) instead of processing time",
    )
    parser.add_argument("--redis", metavar="URL", help="keep the windows on Redis at URL")
    parser.add_argument("--stats", action="store_true", help="print counters to stderr at the end")
    return parser


def main(
    argv: list[str],
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run the command; returns the exit status. Streams default to the process's."""
    err = stderr if stderr is not None else sys.stderr
    args = _parser().parse_args(argv)
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer
    try:
        config = _load_config(args.config, args.time_field)
        spool = _spool_input(source)
    except _Rejected as rejected:
        print(f"{PROG}: {rejected}", file=err)
        return EXIT_BAD_INPUT
    except OSError as error:
        print(f"{PROG}: cannot read input: {error}", file=err)
        return EXIT_IO_ERROR
    with spool:
        handler = logging.StreamHandler(err)
        handler.setFormatter(logging.Formatter(f"{PROG}: %(message)s"))
        logger = logging.getLogger("tidegate.processing.throttle")
        logger.addHandler(handler)
        try:
            processor = _processor(config, args.redis)
            dropped_file = open(args.dropped, "wb") if args.dropped else None
        except _Rejected as rejected:
            print(f"{PROG}: {rejected}", file=err)
            return EXIT_BAD_INPUT
        except OSError as error:
            print(f"{PROG}: cannot open --dropped file: {error}", file=err)
            return EXIT_IO_ERROR
        try:
            if processor.is_async:
                asyncio.run(_run_async(processor, spool, sink, dropped_file))
            else:
                _run_sync(processor, spool, sink, dropped_file)
            sink.flush()
        except BrokenPipeError:
            return EXIT_IO_ERROR
        except OSError as error:
            print(f"{PROG}: cannot write output: {error}", file=err)
            return EXIT_IO_ERROR
        finally:
            logger.removeHandler(handler)
            if dropped_file is not None:
                dropped_file.close()
    if args.stats:
        print(json.dumps(processor.counters.snapshot(), sort_keys=False), file=err)
    return EXIT_OK


def _load_config(path: str, time_field: str | None) -> ThrottleConfig:
    try:
        with open(path, "rb") as file:
            text = file.read()
    except OSError as error:
        raise _Rejected(f"cannot read config {path}: {error.strerror or error}") from None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise _Rejected(f"config {path} is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise _Rejected(f"config {path} must be a JSON object (the user_config)")
    if time_field is not None:
        data["time_field"] = time_field
    try:
        return ThrottleConfig.model_validate(data)
    except ValidationError as error:
        problems = describe_validation_error(error).replace("\n", f"\n{PROG}: ")
        if time_field is not None:
            problems = problems.replace("time_field:", "--time-field:")
        raise _Rejected(f"invalid config {path}:\n{PROG}: {problems}") from None


def _parse_line(line: bytes, number: int) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        # orjson refuses integers past 64 bits, which are valid JSON; ask the stdlib.
        try:
            value = json.loads(line, parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError) as error:
            raise _Rejected(f"line {number}: not valid JSON: {error}") from None
    if not isinstance(value, dict):
        kind = type(value).__name__ if value is not None else "null"
        kind = {"list": "an array", "str": "a string", "int": "a number", "float": "a number"}.get(
            kind, kind
        )
        raise _Rejected(f"line {number}: not a JSON object (got {kind})")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _spool_input(source: IO[bytes]) -> IO[bytes]:
    """Copy the input aside, checking every line; raises `_Rejected` on the first bad one."""
    spool: IO[bytes] = SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY, mode="w+b")
    try:
        for number, raw in enumerate(source, start=1):
            line = raw[:-1] if raw.endswith(b"\n") else raw
            if not line.strip():
                continue
            _parse_line(line, number)
            spool.write(line)
            spool.write(b"\n")
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def _batches(spool: IO[bytes]) -> Iterator[tuple[list[bytes], list[dict[str, Any]]]]:
    lines: list[bytes] = []
    events: list[dict[str, Any]] = []
    for raw in spool:
        line = raw[:-1]
        lines.append(line)
        events.append(_parse_line(line, 0))
        if len(lines) >= _BATCH:
            yield lines, events
            lines, events = [], []
    if lines:
        yield lines, events


def _processor(config: ThrottleConfig, redis_url: str | None) -> ThrottleProcessor:
    if redis_url is None:
        return ThrottleProcessor(config)
    from redis.asyncio import Redis

    try:
        client: Redis = Redis.from_url(redis_url, socket_connect_timeout=5.0, socket_timeout=30.0)
    except ValueError as error:
        raise _Rejected(f"invalid --redis URL: {error}") from None
    try:
        # The server's setting (config.py), so the command shares its namespace.
        redis_prefix = check_redis_prefix(
            os.environ.get("TIDEGATE_REDIS_PREFIX") or DEFAULT_REDIS_PREFIX
        )
    except ValueError as error:
        raise _Rejected(f"invalid TIDEGATE_REDIS_PREFIX: {error}") from None
    key_prefix = redis_key_prefix(config, redis_prefix=redis_prefix)
    return ThrottleProcessor(config, store=RedisStore(client, key_prefix=key_prefix))


def redis_key_prefix(config: ThrottleConfig, *, redis_prefix: str = DEFAULT_REDIS_PREFIX) -> str:
    """Runs with the same configuration share their buckets; others never collide."""
    canonical = json.dumps(config.model_dump(mode="json"), sort_keys=True).encode()
    digest = hashlib.sha256(canonical).hexdigest()[:20]
    return f"{redis_prefix}throttle:cli:{{{digest}}}"


def _write(
    lines: list[bytes],
    events: list[dict[str, Any]],
    passed: list[Any],
    sink: IO[bytes],
    dropped_file: IO[bytes] | None,
) -> None:
    passed_ids = {id(event) for event in passed}
    out: list[bytes] = []
    aside: list[bytes] = []
    for line, event in zip(lines, events, strict=True):
        if id(event) in passed_ids:
            out.append(line)
        else:
            aside.append(line)
    if out:
        sink.write(b"\n".join(out) + b"\n")
    if aside and dropped_file is not None:
        dropped_file.write(b"\n".join(aside) + b"\n")


def _run_sync(
    processor: ThrottleProcessor,
    spool: IO[bytes],
    sink: IO[bytes],
    dropped_file: IO[bytes] | None,
) -> None:
    for lines, events in _batches(spool):
        result = processor.process_sync(events)
        _write(lines, events, result.passed, sink, dropped_file)


async def _run_async(
    processor: ThrottleProcessor,
    spool: IO[bytes],
    sink: IO[bytes],
    dropped_file: IO[bytes] | None,
) -> None:
    store = processor.store
    try:
        for lines, events in _batches(spool):
            result = await processor.process(events)
            _write(lines, events, result.passed, sink, dropped_file)
    finally:
        if store is not None:
            await store.client.aclose()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
