"""The compactor killed mid-move (SIGKILL in a process of its own) on both backends:
afterwards no line is lost and none is in both tiers, and an export paged across the
kills returns every line exactly once (docs/log-store.md, "Crash safety").

Each compactor is killed once it has committed a random number of moves (read from the
registry, not guessed from the clock: killed after a random delay, a compactor that had
not yet started, or had already finished, made the test pass without testing anything),
a random moment later, so the kill lands somewhere inside one of the many moves its
round still has to make."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from sqlalchemy import select, update
from tests.aggregate.helpers import HOUR_MS, HOUR_START
from tests.conftest import (
    BACKENDS,
    LAUNCHER,
    USE_LAUNCHER,
    DatabaseTemplates,
    make_settings,
    running_client,
)
from tests.export.helpers import insert_lines, now_ms
from tests.factories import make_account, make_tenant
from tests.live import ServerProcess
from tests.logs.test_segments import DAY_MS, generated_lines

from tidegate.db.engine import Database
from tidegate.logs.segments import TEMP_SUFFIX, stored_files
from tidegate.models import LogLine, LogSegment, SegmentLease

LINES = 1_500
KILLS = 5


def compactor_env(url: str, data_dir: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("TIDEGATE_")}
    env.update(
        TIDEGATE_DATABASE_URL=url,
        TIDEGATE_DATA_DIR=str(data_dir),
        TIDEGATE_SEGMENT_AFTER_S="86400",
        TIDEGATE_SEGMENT_WINDOW_S="86400",
        # Small segments: a round makes dozens of moves, so a kill lands inside one.
        TIDEGATE_SEGMENT_MAX_LINES="29",
        TIDEGATE_SECRET_KEY="test-secret",
    )
    return env


# A lease far longer than a move takes on a loaded machine: with half a second, a slow
# move's renewal found the lease gone, and the round ended with nothing moved. The test
# ends a killed compactor's lease itself (``expire_lease``) instead of waiting it out.
COMPACT = ["segments", "compact", "--lease-s", "120"]


def run_compactor(env: dict[str, str], log: Path) -> ServerProcess:
    """``tidegate segments compact`` in a process of its own: forked by the test process's
    launcher (its imports made once), or started afresh; at the lowest CPU priority (see
    ``niced``)."""
    process = _spawn_compactor(env, log)
    niced(process.pid)
    return process


def niced(pid: int) -> None:
    """The compactor at nice 19: on a busy machine the test, which watches its moves to
    kill it after a few, must see them before it has made dozens more (a CI run at load
    9 saw a compactor finish its whole round between two looks, and never killed it)."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, 19)
    except ProcessLookupError:  # it has finished already: the test sees that
        pass


def _spawn_compactor(env: dict[str, str], log: Path) -> ServerProcess:
    if USE_LAUNCHER:
        # The launcher's imports load prometheus_client for `serve`'s several workers
        # (values in files): any other command run there needs their directory too.
        metrics = log.parent / "compactor-metrics"
        metrics.mkdir(exist_ok=True)
        env = {**env, "PROMETHEUS_MULTIPROC_DIR": str(metrics)}
        with open(os.devnull) as unused:
            return LAUNCHER.spawn(
                COMPACT, env=env, cwd=str(log.parent), log=str(log), fd=unused.fileno()
            )
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tidegate", *COMPACT], env=env, stdout=out, stderr=out
        )


async def expire_lease(url: str) -> None:
    """What the passing of a dead compactor's lease does: the next one may claim it."""
    db = Database.connect(url)
    try:
        async with db.write_sessions() as session:
            await session.execute(update(SegmentLease).values(lease_until_ms=0))
            await session.commit()
    finally:
        await db.dispose()


async def segment_count(db: Database, account_id: str) -> int:
    async with db.read_sessions() as session:
        paths = (
            await session.execute(
                select(LogSegment.path).where(LogSegment.account_id == account_id)
            )
        ).scalars()
        return len(list(paths))


async def tiers(url: str, root: Path, account_id: str) -> tuple[list[int], list[int]]:
    """The account's line ids in the row store and in its registered segments."""
    db = Database.connect(url)
    try:
        async with db.read_sessions() as session:
            hot = list(
                (
                    await session.execute(
                        select(LogLine.id).where(LogLine.account_id == account_id)
                    )
                ).scalars()
            )
            paths = list(
                (
                    await session.execute(
                        select(LogSegment.path).where(LogSegment.account_id == account_id)
                    )
                ).scalars()
            )
    finally:
        await db.dispose()
    cold: list[int] = []
    if paths:
        files = ", ".join(f"'{root / path}'" for path in paths)
        rows = duckdb.connect().execute(f"SELECT id FROM read_parquet([{files}])").fetchall()
        cold = [int(row[0]) for row in rows]
    return [int(i) for i in hot], cold


async def page(client: Any, headers: dict[str, str], cursor: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "from": HOUR_START,
        "to": HOUR_START + HOUR_MS - 1,
        "size": 41,
        "prefer": "head",
    }
    if cursor is not None:
        params["pagination_id"] = cursor
    response = await client.get("/v2/export", params=params, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_killed_compactor_loses_no_line_and_moves_none_twice(
    backend: str, database_templates: DatabaseTemplates, tmp_path: Path
) -> None:
    url = await database_templates.fresh(backend)
    data_dir = tmp_path / "data"
    settings = make_settings(url, data_dir)
    root = settings.segment_directory
    rng = random.Random()
    try:
        async with running_client(settings) as client:
            account = await make_account(client, await make_tenant(url))
            await insert_lines(
                url,
                account.account_id,
                generated_lines(LINES, seed=3),
                # Past the segment boundary (a day) but inside the retention: the app's retention
                # job (its first run 1-30 s after start) purged ten-day-old lines mid-test
                # on a loaded machine, leaving the compactors nothing to move.
                received_ms=now_ms() - 2 * DAY_MS,
            )
            hot, cold = await tiers(url, root, account.account_id)
            everything = sorted(hot)
            assert len(everything) == LINES
            assert not cold

            seen: list[str] = []
            first = await page(client, account.headers, None)
            seen += [line["_id"] for line in first["lines"]]
            cursor = first["pagination_id"]
            env = compactor_env(url, data_dir)
            log = tmp_path / "compactor.log"
            # One connection for the many looks at the registry while a compactor works.
            counter = Database.connect(url)
            for kill in range(KILLS):
                before = await segment_count(counter, account.account_id)
                moves = rng.randint(1, 3)
                process = run_compactor(env, log)
                while await segment_count(counter, account.account_id) < before + moves:
                    # Pages go on while the compactor moves lines.
                    if cursor is not None:
                        body = await page(client, account.headers, cursor)
                        seen += [line["_id"] for line in body["lines"]]
                        cursor = body["pagination_id"]
                    assert process.poll() is None, f"kill {kill}: {log.read_text()}"
                    await asyncio.sleep(0.01)
                await asyncio.sleep(rng.uniform(0, 0.05))
                # Its round has dozens of moves left: it is still at work.
                assert process.poll() is None, log.read_text()
                process.kill()
                assert process.wait(timeout=60) == -signal.SIGKILL
                hot, cold = await tiers(url, root, account.account_id)
                # Exactly one tier each, none lost, at every kill.
                assert not set(hot) & set(cold)
                assert sorted(hot + cold) == everything
                await expire_lease(url)  # the dead process's lease runs out
            await counter.dispose()

            # A last round that is not killed finishes the moves and removes what the
            # killed ones left behind (files no segment names, temporary files).
            finished = subprocess.run(
                [sys.executable, "-m", "tidegate", *COMPACT],
                env=env,
                capture_output=True,
                timeout=300,
                check=True,
            )
            hot, cold = await tiers(url, root, account.account_id)
            assert not set(hot) & set(cold)
            assert sorted(hot + cold) == everything
            assert not hot, finished.stdout
            db = Database.connect(url)
            try:
                async with db.read_sessions() as session:
                    registered = set((await session.execute(select(LogSegment.path))).scalars())
            finally:
                await db.dispose()
            on_disk = {name for name, _ in stored_files(root)}
            assert on_disk == registered
            assert not any(name.endswith(TEMP_SUFFIX) for name in on_disk)

            while cursor is not None:
                body = await page(client, account.headers, cursor)
                seen += [line["_id"] for line in body["lines"]]
                cursor = body["pagination_id"]
            assert len(seen) == len(set(seen))
            assert sorted(int(i) for i in seen) == everything
    finally:
        await database_templates.drop(url)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_files_no_segment_names_are_removed(
    backend: str, database_templates: DatabaseTemplates, tmp_path: Path
) -> None:
    """What a crash between writing a file and committing its move leaves behind."""
    from tidegate.logs.compactor import CompactorConfig, compact_round

    url = await database_templates.fresh(backend)
    root = tmp_path / "segments"
    stray = root / "abc" / "1-1.parquet"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"PAR1")
    half = root / "abc" / ("2-2.parquet" + TEMP_SUFFIX)
    half.write_bytes(b"PAR")
    db = Database.connect(url)
    try:
        result = await compact_round(
            db,
            CompactorConfig(root=root, after_ms=0, window_ms=1000, max_lines=10, lease_ms=1000),
            owner="sweeper",
        )
    finally:
        await db.dispose()
        await database_templates.drop(url)
    assert result.claimed
    assert result.orphans_removed == 2
    assert not stray.exists()
    assert not half.exists()
