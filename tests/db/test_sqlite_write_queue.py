"""A process's SQLite writers queue in order for one write connection instead of each
polling SQLite's write lock from a connection of its own (db/engine.py,
``_sqlite_write_engine``): SQLite's busy handler sleeps between tries, so a writer could
sleep through every release and wait out its busy timeout while later ones wrote."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import text

from tidegate.db.engine import Database


async def test_writers_of_a_process_queue_in_order_for_one_connection(tmp_path: Path) -> None:
    db = Database.connect(f"sqlite+aiosqlite:///{tmp_path / 'queue.sqlite3'}")
    try:
        async with db.write_sessions() as session:
            await session.execute(text("CREATE TABLE t (n INTEGER)"))
            await session.commit()
        done: list[int] = []

        async def write(n: int) -> None:
            async with db.write_sessions() as session:
                await session.execute(text("INSERT INTO t VALUES (:n)"), {"n": n})
                await session.commit()
            done.append(n)

        holder = db.write_sessions()
        await holder.execute(text("INSERT INTO t VALUES (0)"))  # SQLite's write lock, held
        waiting = []
        for n in (1, 2, 3):
            waiting.append(asyncio.create_task(write(n)))
            await asyncio.sleep(0.05)  # each one in the queue before the next comes
        await asyncio.sleep(0.2)
        pool = db.write_engine.sync_engine.pool
        # The others wait for the holder's connection, not on connections of their own.
        assert pool.checkedout() == 1  # type: ignore[attr-defined]
        assert done == []
        await holder.commit()
        await holder.close()
        await asyncio.wait_for(asyncio.gather(*waiting), timeout=60)
        assert done == [1, 2, 3]
        async with db.write_sessions() as session:
            rows = (await session.execute(text("SELECT n FROM t ORDER BY rowid"))).scalars()
            assert list(rows) == [0, 1, 2, 3]
    finally:
        await db.dispose()
