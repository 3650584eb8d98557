"""The databases of ``bench_search.py``: one target per backend (an SQLite file, a
PostgreSQL database), loaded through the store's own write path and, with ``--keep``,
kept between runs; and what the bench reads from them directly, not through the
server: the ids in load order, the size on disk, and the floor of each case (the
hand-written SQL over the same tables, through the raw driver).

A kept load lives under the cache directory, keyed by seed, line count, the generator's
code and the schema (the migrations and the store's row-building code), hashed: when one
changes, the next ``--keep`` run loads afresh and removes the older loads of the same
seed and size.
"""

from __future__ import annotations

import array
import hashlib
import json
import sqlite3
import time
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import asyncpg

import tidegate.migrations
from harness import PG_ADMIN, create_pg_database, drop_pg_database
from search_dataset import OTHER_ACCOUNTS, Batch, Case, generator_key
from search_lines import PHRASE, RARE_WORD
from tidegate.db.engine import Database
from tidegate.db.migrate import upgrade_database
from tidegate.enterprise.schemas import AccountCreate
from tidegate.enterprise.service import create_account, create_enterprise
from tidegate.logs import store
from tidegate.logs.store import store_lines


def schema_key() -> str:
    """A digest of the migrations: which tables and indexes a load has. Whether its rows
    are still what the store writes is checked on a sample instead (``reuse``): the
    store's code changes far more often than what it writes."""
    digest = hashlib.sha256()
    versions = Path(tidegate.migrations.__file__).parent / "versions"
    for path in sorted(versions.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


def _comparable(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row with its JSON columns decoded (PostgreSQL's jsonb gives its own spelling)."""
    return tuple(
        json.loads(value) if index in _JSON_COLUMNS and value is not None else value
        for index, value in enumerate(row)
    )


_JSON_COLUMNS = {store.COLUMNS.index("tags"), store.COLUMNS.index("meta")}
SAMPLE = 200  # rows compared by ``Target.reuse``


def dataset_dir(cache: Path, seed: int, lines: int) -> Path:
    return cache / f"s{seed}-n{lines}"


@dataclass
class Loaded:
    """What a finished load left behind (the manifest of a kept one)."""

    token: str
    account_id: str
    lines: int  # of every account
    load_s: float  # in the store's write path (commits included), generation excluded


@dataclass
class Size:
    total: int
    parts: dict[str, int]  # bytes by table or index
    note: str = ""


@dataclass
class Floor:
    first_page_s: float
    walk_s: float
    rows: int


class Target:
    """One backend's database for a data set. ``dataset`` is the data set's directory
    when the load is kept, else None (a scratch database, removed by ``drop``)."""

    backend = ""

    def __init__(self, *, dataset: Path | None, work: Path) -> None:
        self.dataset = dataset
        self.work = work
        self.key = f"{generator_key()}-{schema_key()}"
        self.loaded: Loaded | None = None

    @property
    def url(self) -> str:
        raise NotImplementedError

    @property
    def _manifest(self) -> Path | None:
        return None if self.dataset is None else self.dataset / f"{self.backend}-{self.key}.json"

    @property
    def _ids_file(self) -> Path:
        base = self.dataset if self.dataset is not None else self.work
        return base / f"{self.backend}-{self.key}.ids"

    async def reuse(self, sample: Batch) -> bool:
        """Whether a kept load of this data set and schema is there (then ``loaded``) and
        its rows are what the store writes now: ``sample`` (the measured account's first
        batch) built by ``line_rows`` must begin the stored rows."""
        manifest = self._manifest
        if manifest is None or not manifest.exists() or not self._ids_file.exists():
            return False
        if not await self._exists():
            return False
        loaded = Loaded(**json.loads(manifest.read_text()))
        built = store.line_rows(loaded.account_id, sample.received_ms, sample.lines[:SAMPLE])
        stored = await self._stored_rows(self.ids()[: len(built)])
        if [_comparable(row[: len(stored[0])]) for row in built] != list(map(_comparable, stored)):
            print(f"{self.backend}: the store now writes other rows than the kept load holds")
            return False
        self.loaded = loaded
        return True

    async def load_start(self) -> None:
        """A new empty database (after removing older loads), migrated, with the bench's
        enterprise and accounts (retention 0: lines are kept forever)."""
        if self.dataset is not None:
            await self._prune()
        await self._create()
        await upgrade_database(self.url)
        self._db = Database.connect(self.url)
        async with self._db.write_sessions() as session:
            enterprise, self._token = await create_enterprise(session=session, name="bench")
            self._accounts = []
            for index in range(OTHER_ACCOUNTS + 1):
                body = AccountCreate.model_validate(
                    {
                        "company": f"bench {index}",
                        "owneremail": f"search-{index}@example.com",
                        "retention": 0,
                    }
                )
                account = await create_account(
                    session=session, enterprise_id=enterprise.id, body=body
                )
                self._accounts.append(account.account_id)
            await session.commit()
        self._load_s = 0.0
        self._lines = 0

    async def load_round(self, batches: list[Batch]) -> None:
        """One round of the generator through ``store_lines``, a transaction per batch."""
        started = time.perf_counter()
        for batch in batches:
            async with self._db.write_sessions() as session:
                await store_lines(
                    session=session,
                    account_id=self._accounts[batch.account],
                    lines=batch.lines,
                    received_ms=batch.received_ms,
                )
                await session.commit()
            self._lines += len(batch.lines)
        self._load_s += time.perf_counter() - started

    async def load_finish(self, main_lines: int) -> None:
        await self._db.dispose()
        account_id = self._accounts[0]
        ids = await self._account_ids(account_id)
        if len(ids) != main_lines:
            raise RuntimeError(f"{self.backend}: {len(ids)} lines stored, {main_lines} written")
        self._ids_file.write_bytes(ids.tobytes())
        await self._after_load()
        self.loaded = Loaded(self._token, account_id, self._lines, self._load_s)
        if self._manifest is not None:
            self._manifest.write_text(json.dumps(asdict(self.loaded)))

    def ids(self) -> array.array[int]:
        """The main account's line ids in load order: index = the line's sequence number."""
        ids = array.array("q")
        ids.frombytes(self._ids_file.read_bytes())
        return ids

    async def drop(self) -> None:
        """Remove a scratch database; a kept one stays."""

    # Per backend --------------------------------------------------------------------------

    async def _exists(self) -> bool:
        raise NotImplementedError

    async def _create(self) -> None:
        raise NotImplementedError

    async def _prune(self) -> None:
        raise NotImplementedError

    async def _account_ids(self, account_id: str) -> array.array[int]:
        raise NotImplementedError

    async def _stored_rows(self, ids: array.array[int]) -> list[tuple[Any, ...]]:
        """The lines of ``ids`` in id order, their columns in ``store.COLUMNS`` order."""
        raise NotImplementedError

    async def _after_load(self) -> None:
        pass

    async def size(self) -> Size:
        raise NotImplementedError

    async def floor(
        self, case: Case, *, account_id: str, from_ms: int, to_ms: int, page: int
    ) -> Floor:
        raise NotImplementedError


COLUMNS = "l.id, l.ts, l.host, l.app, l.level, l.env, l.file, l.ip, l.mac, l.tags, l.meta, l.line"


def fts_match(literal: str) -> str:
    """The FTS5 trigram query of a case-folded literal: the AND of its trigrams."""
    grams = dict.fromkeys(literal[i : i + 3] for i in range(len(literal) - 2))
    return " AND ".join('"' + gram.replace('"', '""') + '"' for gram in grams)


def prefix_range(column: str, prefix: str) -> str:
    """``column`` starts with ``prefix`` as a range in binary order (index-friendly)."""
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return f"{column} >= '{prefix}' AND {column} < '{upper}'"


# The hand-written SQL of each case: what a person would write over the same tables with
# the same indexes. Each is exact for the generated data but for ``rare word``, whose
# floor also returns the lines with "unquarantined" (a LIKE has no word starts).
_META_CODE_SQLITE = (
    "lower(coalesce(json_extract(l.meta, '$.\"error.code\"'), "
    "json_extract(l.meta, '$.error.code'))) LIKE 'econnreset%'"
)
SQLITE_FLOORS: dict[str, tuple[str | None, str]] = {
    # case: (FTS5 query or None, condition on log_lines l)
    "no query": (None, "1"),
    "rare word": (fts_match(RARE_WORD), f"lower(l.line) LIKE '%{RARE_WORD}%'"),
    "level+app": (
        None,
        f"{prefix_range('l.level_folded', 'error')} AND {prefix_range('l.app_folded', 'web')}",
    ),
    "meta field": (fts_match("econnreset"), _META_CODE_SQLITE),
    "phrase": (fts_match(PHRASE), f"instr(lower(l.line), '{PHRASE}') > 0"),
    "common word": (fts_match("request"), "lower(l.line) LIKE '%request%'"),
}
# Which FTS cases read the FTS matches first (then each line by id, then sort): the
# selective ones. A common word reads the account's time range in order and looks each
# id up in the list of matches instead. Never a plain JOIN: SQLite then drives the join
# from the time index and runs the full-text query once per line (11.7 s instead of
# 20 ms for the common word over 20,000 lines).
SQLITE_FTS_FIRST = {"rare word", "meta field", "phrase"}
POSTGRES_FLOORS: dict[str, str] = {
    "no query": "true",
    "rare word": f"l.search LIKE '%{RARE_WORD}%' AND lower(l.line) LIKE '%{RARE_WORD}%'",
    "level+app": f"{prefix_range('l.level_folded', 'error')} AND {prefix_range('l.app_folded', 'web')}",
    "meta field": (
        "l.search LIKE '%econnreset%' AND lower(coalesce(l.meta->>'error.code', "
        "l.meta->'error'->>'code')) LIKE 'econnreset%'"
    ),
    "phrase": f"l.search LIKE '%{PHRASE}%' AND strpos(lower(l.line), '{PHRASE}') > 0",
    "common word": "l.search LIKE '%request%' AND lower(l.line) LIKE '%request%'",
}


class SqliteTarget(Target):
    backend = "sqlite"

    @property
    def path(self) -> Path:
        base = self.dataset if self.dataset is not None else self.work
        return base / f"sqlite-{self.key}.sqlite3"

    @property
    def url(self) -> str:
        return f"sqlite+aiosqlite:///{self.path}"

    async def _exists(self) -> bool:
        return self.path.exists()

    async def _create(self) -> None:
        _remove_sqlite(self.path)

    async def _prune(self) -> None:
        assert self.dataset is not None
        for path in self.dataset.glob("sqlite-*"):
            if path.name.endswith((".sqlite3", ".json", ".ids")) and self.key not in path.name:
                print(f"removing an older load: {path}", flush=True)
                _remove_sqlite(path) if path.suffix == ".sqlite3" else path.unlink()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, isolation_level=None)
        connection.execute("PRAGMA query_only=ON")
        return connection

    async def _account_ids(self, account_id: str) -> array.array[int]:
        with closing(self._connect()) as connection:
            rows = connection.execute(
                "SELECT id FROM log_lines WHERE account_id = ? ORDER BY id", (account_id,)
            )
            return array.array("q", (row[0] for row in rows))

    async def _stored_rows(self, ids: array.array[int]) -> list[tuple[Any, ...]]:
        # The search text is not stored on SQLite (contentless FTS5).
        columns = ", ".join(store.COLUMNS[:-1])
        marks = ", ".join("?" * len(ids))
        with closing(self._connect()) as connection:
            return connection.execute(
                f"SELECT {columns} FROM log_lines WHERE id IN ({marks}) ORDER BY id", list(ids)
            ).fetchall()

    async def drop(self) -> None:
        if self.dataset is None:
            _remove_sqlite(self.path)

    async def size(self) -> Size:
        parts: dict[str, int] = {}
        with closing(self._connect()) as connection:
            for name, size in connection.execute(
                "SELECT name, pgsize FROM dbstat WHERE aggregate = TRUE"
            ):
                group = (
                    "log_search (FTS5)" if name.startswith("log_search")
                    else name if name.startswith(("log_lines", "ix_log_lines"))
                    else "other tables"
                )  # fmt: skip
                parts[group] = parts.get(group, 0) + size
        wal = Path(f"{self.path}-wal")
        parts["WAL"] = wal.stat().st_size if wal.exists() else 0
        return Size(self.path.stat().st_size + parts["WAL"], parts)

    async def floor(
        self, case: Case, *, account_id: str, from_ms: int, to_ms: int, page: int
    ) -> Floor:
        match, condition = SQLITE_FLOORS[case.name]
        source = "log_lines l"
        params: list[Any] = [account_id, from_ms, to_ms]
        if match is not None and case.name in SQLITE_FTS_FIRST:
            source = "log_search s CROSS JOIN log_lines l ON l.id = s.rowid"
            condition = f"s.log_search MATCH ? AND {condition}"
            params = [match, *params]
        elif match is not None:
            condition = (
                f"l.id IN (SELECT rowid FROM log_search WHERE log_search MATCH ?) AND {condition}"
            )
            params = [match, *params]
        sql = (
            f"SELECT {COLUMNS} FROM {source} WHERE {condition} AND l.account_id = ? "
            "AND l.ts BETWEEN ? AND ? ORDER BY l.ts, l.id"
        )
        with closing(self._connect()) as connection:
            started = time.perf_counter()
            connection.execute(f"{sql} LIMIT {page}", params).fetchall()
            first = time.perf_counter() - started
            started = time.perf_counter()
            rows = sum(1 for _ in connection.execute(sql, params))
            return Floor(first, time.perf_counter() - started, rows)


def _remove_sqlite(path: Path) -> None:
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        candidate.unlink(missing_ok=True)


class PostgresTarget(Target):
    backend = "postgres"

    def __init__(self, *, dataset: Path | None, work: Path) -> None:
        super().__init__(dataset=dataset, work=work)
        if dataset is None:
            self.prefix, self.name = "", ""  # a random name, made by _create
        else:
            self.prefix = f"tidegate_bench_search_{dataset.name.replace('-', '_')}_"
            self.name = self.prefix + self.key.replace("-", "_")

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:5432/{self.name}"

    async def _admin(self) -> asyncpg.Connection:
        return await asyncpg.connect(PG_ADMIN)

    async def _exists(self) -> bool:
        admin = await self._admin()
        try:
            return bool(
                await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", self.name)
            )
        finally:
            await admin.close()

    async def _create(self) -> None:
        if self.dataset is None:
            self.name = await create_pg_database()
            return
        await drop_pg_database(self.name)
        await create_pg_database(self.name)

    async def _prune(self) -> None:
        assert self.dataset is not None
        admin = await self._admin()
        try:
            names = [
                row[0]
                for row in await admin.fetch(
                    "SELECT datname FROM pg_database WHERE starts_with(datname, $1)", self.prefix
                )
            ]
        finally:
            await admin.close()
        for name in names:
            if name != self.name:
                print(f"removing an older load: PostgreSQL database {name}", flush=True)
                await drop_pg_database(name)
        for path in self.dataset.glob("postgres-*"):
            if self.key not in path.name:
                path.unlink()

    async def _connect(self) -> asyncpg.Connection:
        return await asyncpg.connect(f"postgresql://postgres@127.0.0.1:5432/{self.name}")

    async def _account_ids(self, account_id: str) -> array.array[int]:
        connection = await self._connect()
        try:
            ids = array.array("q")
            async with connection.transaction():
                async for row in connection.cursor(
                    "SELECT id FROM log_lines WHERE account_id = $1 ORDER BY id",
                    account_id,
                    prefetch=50_000,
                ):
                    ids.append(row[0])
            return ids
        finally:
            await connection.close()

    async def _stored_rows(self, ids: array.array[int]) -> list[tuple[Any, ...]]:
        connection = await self._connect()
        try:
            rows = await connection.fetch(
                f"SELECT {', '.join(store.COLUMNS)} FROM log_lines WHERE id = ANY($1) ORDER BY id",
                list(ids),
            )
        finally:
            await connection.close()
        return [tuple(row) for row in rows]

    async def _after_load(self) -> None:
        # What autovacuum would have done by the time anyone searches: statistics and
        # the visibility map (index-only scans). It never analyzes a partitioned parent.
        connection = await self._connect()
        try:
            await connection.execute("VACUUM (ANALYZE) log_lines")
        finally:
            await connection.close()

    async def drop(self) -> None:
        if self.dataset is None and self.name:
            await drop_pg_database(self.name)

    async def size(self) -> Size:
        connection = await self._connect()
        try:
            total, table, partitions = await connection.fetchrow(
                "SELECT sum(pg_total_relation_size(relid)), sum(pg_table_size(relid)), count(*) "
                "FROM pg_partition_tree('log_lines') WHERE isleaf"
            )
            parts = {"log_lines (with TOAST)": int(table)}
            for name, size in await connection.fetch(
                "SELECT c.relname, (SELECT sum(pg_relation_size(relid)) "
                "FROM pg_partition_tree(i.indexrelid)) FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'log_lines'::regclass"
            ):
                parts[name] = int(size)
        finally:
            await connection.close()
        return Size(int(total), parts, f"{partitions} partitions")

    async def floor(
        self, case: Case, *, account_id: str, from_ms: int, to_ms: int, page: int
    ) -> Floor:
        columns = COLUMNS.replace("l.tags", "l.tags::text").replace("l.meta", "l.meta::text")
        sql = (
            f"SELECT {columns} FROM log_lines l WHERE {POSTGRES_FLOORS[case.name]} "
            "AND l.account_id = $1 AND l.ts BETWEEN $2 AND $3 ORDER BY l.ts, l.id"
        )
        connection = await self._connect()
        try:
            started = time.perf_counter()
            await connection.fetch(f"{sql} LIMIT {page}", account_id, from_ms, to_ms)
            first = time.perf_counter() - started
            rows = 0
            started = time.perf_counter()
            async with connection.transaction():
                async for _ in connection.cursor(sql, account_id, from_ms, to_ms, prefetch=page):
                    rows += 1
            return Floor(first, time.perf_counter() - started, rows)
        finally:
            await connection.close()


TARGETS: dict[str, type[Target]] = {"sqlite": SqliteTarget, "postgres": PostgresTarget}
