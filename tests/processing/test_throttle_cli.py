from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.conftest import REDIS_PREFIX
from tests.processing.throttle_redis_helpers import delete_prefix

from tidegate.processing.throttle import ThrottleConfig
from tidegate.processing.throttle_cli import main, redis_key_prefix

WORKED_CONFIG = {
    "threshold": 1,
    "window_ms": 1000,
    "key_field": ".app",
    "exclude": {"field": ".host", "str_operator": "equal", "value": "db-1"},
}
# Odd spacing and escapes on purpose: the output must be the input bytes, not JSON re-dumped.
WORKED_LINES = [
    b'{"app": "a", "host": "web-1"}',
    b'{ "app":"b" ,"host":"web-1" }',
    b'{"app":"a","host":"web-2"}',
    b'{"app":"b","host":"web-2","msg":"caf\\u00e9"}',
    b'{"app":"a","host":"db-1","n":1.50}',
    '{"app":"b","host":"web-3","msg":"héllo"}'.encode(),
]


def run_cli(
    args: list[str], stdin: bytes, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tidegate.processing.throttle_cli", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


def write_config(tmp_path: Path, config: Any, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(config) if not isinstance(config, str) else config)
    return str(path)


def test_worked_case_writes_passing_lines_unchanged(tmp_path: Path) -> None:
    config = write_config(tmp_path, WORKED_CONFIG)
    dropped = tmp_path / "dropped.ndjson"
    done = run_cli(
        ["--config", config, "--dropped", str(dropped)], b"\n".join(WORKED_LINES) + b"\n"
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout == WORKED_LINES[0] + b"\n" + WORKED_LINES[1] + b"\n" + WORKED_LINES[4] + b"\n"
    )
    assert dropped.read_bytes() == b"\n".join([WORKED_LINES[i] for i in (2, 3, 5)]) + b"\n"
    assert done.stderr == b""


def test_stats_go_to_stderr(tmp_path: Path) -> None:
    config = write_config(tmp_path, WORKED_CONFIG)
    done = run_cli(["--config", config, "--stats"], b"\n".join(WORKED_LINES))
    assert done.returncode == 0
    stats = json.loads(done.stderr.decode().strip().splitlines()[-1])
    assert stats["events_in"] == 6
    assert stats["passed"] == 3
    assert stats["discarded"] == 3
    assert stats["excluded"] == 1
    assert stats["keys_tracked"] == 2
    assert stats["keys_over_cap"] == 0
    assert len(done.stdout.splitlines()) == 3


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"threshold": 0, "window_ms": 1000}, "threshold"),
        ({"threshold": 1, "window_ms": 1000, "limit": 3}, "limit: unknown field"),
        ({"window_ms": 1000}, "threshold: required field is missing"),
        (
            {"threshold": 1, "window_ms": 1, "exclude": {"field": ".a", "str_operator": "nope"}},
            "exclude: str_operator: unknown operator",
        ),
        ('{"threshold": 1,\n "window_ms": }', "line 2 column"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_bad_config_exits_2_and_writes_nothing(tmp_path: Path, config: Any, expected: str) -> None:
    path = write_config(tmp_path, config)
    dropped = tmp_path / "dropped.ndjson"
    done = run_cli(["--config", path, "--dropped", str(dropped)], b'{"a":1}\n')
    assert done.returncode == 2
    assert done.stdout == b""
    assert expected in done.stderr.decode()
    assert not dropped.exists()


def test_missing_config_file_exits_2(tmp_path: Path) -> None:
    done = run_cli(["--config", str(tmp_path / "absent.json")], b"")
    assert done.returncode == 2
    assert "cannot read config" in done.stderr.decode()


def test_config_is_required() -> None:
    done = run_cli([], b"")
    assert done.returncode == 2
    assert b"--config" in done.stderr


@pytest.mark.parametrize(
    ("lines", "line_number", "expected"),
    [
        ([b'{"a":1}', b'{"a":2}', b"[1, 2]", b'{"a":3}'], 3, "not a JSON object (got an array)"),
        ([b'{"a":1}', b"{oops", b'{"a":3}'], 2, "not valid JSON"),
        ([b'{"a":1}', b'{"a":2}', b'"text"'], 3, "not a JSON object (got a string)"),
        ([b"null"], 1, "not a JSON object (got null)"),
        ([b'{"a":1}', b"", b"42"], 3, "not a JSON object (got a number)"),
        ([b'{"a": NaN}'], 1, "not valid JSON"),
        ([b'{"a":1}', b"\xff\xfe"], 2, "not valid JSON"),
    ],
)
def test_bad_line_exits_2_naming_the_line_and_writes_nothing(
    tmp_path: Path, lines: list[bytes], line_number: int, expected: str
) -> None:
    config = write_config(tmp_path, {"threshold": 100, "window_ms": 1000})
    dropped = tmp_path / "dropped.ndjson"
    done = run_cli(["--config", config, "--dropped", str(dropped)], b"\n".join(lines) + b"\n")
    assert done.returncode == 2
    assert done.stdout == b""
    message = done.stderr.decode()
    assert f"line {line_number}:" in message
    assert expected in message
    assert not dropped.exists()


def test_blank_lines_skipped_crlf_and_big_numbers_kept(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"threshold": 10, "window_ms": 1000})
    lines = b'{"a":1}\r\n\n   \n{"big":123456789012345678901234567890}\n{"last":true}'
    done = run_cli(["--config", config], lines)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b'{"a":1}\r\n{"big":123456789012345678901234567890}\n{"last":true}\n'


def timed_stream() -> bytes:
    lines = []
    for i in range(300):
        at = 1_700_000_000_000 + i * 70
        stamp: Any = (
            at if i % 2 else f"2023-11-14T22:13:{20 + (at - 1_700_000_000_000) / 1000:06.3f}Z"
        )
        lines.append(json.dumps({"k": f"k{i % 3}", "ts": stamp, "i": i}).encode())
    return b"\n".join(lines) + b"\n"


def test_time_field_replays_deterministically(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"threshold": 2, "window_ms": 1000, "key_field": ".k"})
    stream = timed_stream()
    first = run_cli(["--config", config, "--time-field", ".ts", "--stats"], stream)
    second = run_cli(["--config", config, "--time-field", ".ts"], stream)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    # Each key sees one event per 210 ms: 2 admitted per 1000 ms sliding window.
    kept = [json.loads(line)["i"] for line in first.stdout.splitlines()]
    assert kept[:6] == [0, 1, 2, 3, 4, 5]
    assert len(kept) < 300
    stats = json.loads(first.stderr.decode().strip().splitlines()[-1])
    assert stats["time_missing"] == 0
    assert stats["passed"] == len(kept)


def test_time_field_must_be_a_valid_path(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"threshold": 2, "window_ms": 1000})
    done = run_cli(["--config", config, "--time-field", ".ts["], b'{"a":1}\n')
    assert done.returncode == 2
    assert "--time-field" in done.stderr.decode()
    assert done.stdout == b""


@pytest.mark.redis
async def test_redis_backend(tmp_path: Path, redis_client: Redis) -> None:
    run_id = uuid.uuid4().hex
    # A key field unique to this run keeps its Redis keys apart from other runs.
    config_data = {"threshold": 2, "window_ms": 600_000, "key_field": f".k{run_id}"}
    config = write_config(tmp_path, config_data)
    # The keys start with the server's TIDEGATE_REDIS_PREFIX (this session's).
    prefix = redis_key_prefix(ThrottleConfig.model_validate(config_data), redis_prefix=REDIS_PREFIX)
    assert prefix.startswith(REDIS_PREFIX + "throttle:cli:{")
    env = {"TIDEGATE_REDIS_PREFIX": REDIS_PREFIX}
    lines = [json.dumps({f"k{run_id}": i % 2, "i": i}).encode() for i in range(10)]
    redis_args = ["--config", config, "--redis", "redis://127.0.0.1:6379/0"]
    try:
        first = run_cli(redis_args, b"\n".join(lines), env=env)
        assert first.returncode == 0, first.stderr
        assert [json.loads(line)["i"] for line in first.stdout.splitlines()] == [0, 1, 2, 3]
        # A second run shares the buckets through Redis: nothing more passes.
        second = run_cli([*redis_args, "--stats"], b"\n".join(lines), env=env)
        assert second.returncode == 0
        assert second.stdout == b""
        assert json.loads(second.stderr.decode().splitlines()[-1])["discarded"] == 10
        assert await redis_client.exists(f"{prefix}:h") == 1
    finally:
        await delete_prefix(redis_client, prefix)


def test_unreachable_redis_fails_open(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = write_config(tmp_path, {"threshold": 1, "window_ms": 1000})
    done = run_cli(
        ["--config", config, "--redis", f"redis://127.0.0.1:{port}/0", "--stats"],
        b'{"a":1}\n{"a":2}\n',
    )
    assert done.returncode == 0
    assert done.stdout == b'{"a":1}\n{"a":2}\n'
    assert "Redis store unavailable" in done.stderr.decode()
    stats = json.loads(done.stderr.decode().strip().splitlines()[-1])
    assert stats["store_errors"] == 1
    assert stats["failed_open"] == 2


def test_bad_redis_prefix_exits_2(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"threshold": 1, "window_ms": 1000})
    done = run_cli(
        ["--config", config, "--redis", "redis://127.0.0.1:6379/0"],
        b'{"a":1}\n',
        env={"TIDEGATE_REDIS_PREFIX": "two words:"},
    )
    assert done.returncode == 2
    assert "TIDEGATE_REDIS_PREFIX" in done.stderr.decode()
    assert done.stdout == b""


def test_bad_redis_url_exits_2(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"threshold": 1, "window_ms": 1000})
    done = run_cli(["--config", config, "--redis", "nope://x"], b'{"a":1}\n')
    assert done.returncode == 2
    assert "--redis" in done.stderr.decode()
    assert done.stdout == b""


def test_main_in_process_with_many_batches(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"threshold": 7000, "window_ms": 600_000, "key_field": ".k"})
    lines = b"".join(b'{"k":%d,"i":%d}\n' % (i % 2, i) for i in range(20_000))
    out = io.BytesIO()
    err = io.StringIO()
    status = main(["--config", config, "--stats"], stdin=io.BytesIO(lines), stdout=out, stderr=err)
    assert status == 0
    kept = out.getvalue().splitlines()
    assert len(kept) == 14_000
    assert kept[0] == b'{"k":0,"i":0}'
    assert json.loads(err.getvalue())["discarded"] == 6_000
