"""search in the database: folded columns, the search index, PostgreSQL partitions

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 16:30:00.000000

SQLite: ``log_lines`` gains the folded columns and their indexes, the FTS5 trigram table
``log_search`` is created and filled, and ``log_store_state`` numbers new lines.
PostgreSQL: ``log_lines`` becomes a table partitioned by day of ``received_ms`` with the
folded columns, ``search`` (trigram GIN) and jsonb documents; existing lines are copied
over, partition by partition, then the old table is dropped. Stored meta and tags are
re-encoded as the store wrote them when this revision was frozen (``_document_json``
below) so that the search text is computed from the stored text. See docs/log-store.md.

Self-contained: what it needs of the log store (the batch size, the day, partition
names, the JSON encoding and the search text) is copied below as it was, so that this
revision never changes when the app does.
"""

import json
import math
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEXES = (
    ("ix_log_lines_account_ts", "account_id, ts, id"),
    ("ix_log_lines_account_id", "account_id, id"),
    ("ix_log_lines_account_level_app", "account_id, level_folded, app_folded, ts, id"),
    ("ix_log_lines_account_app", "account_id, app_folded, ts, id"),
    ("ix_log_lines_account_host", "account_id, host_folded, ts, id"),
)
# Frozen copies of the log store's definitions (tidegate.logs.store, .search_index).
_BATCH = 5_000
_DAY_MS = 86_400_000
_SEARCH_SEPARATOR = "\x1e"
_PARTITION_PREFIX = "log_lines_d"


def _partition_name(day: int) -> str:
    stamp = datetime.fromtimestamp(day * _DAY_MS / 1000, UTC)
    return _PARTITION_PREFIX + stamp.strftime("%Y%m%d")


def _search_text(line: str, meta_json: str | None) -> str:
    folded = line.casefold()
    return folded + _SEARCH_SEPARATOR + meta_json.casefold() if meta_json else folded


def _document_json(value: Any) -> str | None:
    if value is None:
        return None
    try:
        encoded = orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(_repaired(value), ensure_ascii=False, separators=(",", ":"))
    if "\\u0000" in encoded or "e+" in encoded:
        return json.dumps(_repaired(value), ensure_ascii=False, separators=(",", ":"))
    return encoded


def _repaired(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode().replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_repaired(str(key)): _repaired(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_repaired(item) for item in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if abs(value) >= 1e16:
            return int(value)
    return value


_OLD_COLUMNS = (
    "id, account_id, ts, received_ms, host, app, level, env, file, ip, mac, "
    "CAST(tags AS TEXT), CAST(meta AS TEXT), line, size_bytes"
)


def _document(stored: str | None) -> str | None:
    return None if stored is None else _document_json(orjson.loads(stored) if stored else None)


def _folded(value: str | None) -> str | None:
    return None if value is None else value.casefold()


def _old_batches(connection: sa.Connection, table: str) -> Any:
    last = 0
    while True:
        rows = connection.execute(
            sa.text(
                f"SELECT {_OLD_COLUMNS} FROM {table} WHERE id > :last ORDER BY id LIMIT :batch"
            ),
            {"last": last, "batch": _BATCH},
        ).all()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def _state_table() -> None:
    op.create_table(
        "log_store_state",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("next_line_id", sa.BigInteger(), nullable=False),
        sa.Column("unidata_version", sa.String(length=32), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_log_store_state_single_row"),
    )


def upgrade() -> None:
    connection = op.get_bind()
    _state_table()
    if connection.dialect.name == "postgresql":
        _upgrade_postgresql(connection)
    else:
        _upgrade_sqlite(connection)


def _upgrade_sqlite(connection: sa.Connection) -> None:
    op.execute("ALTER TABLE log_lines ADD COLUMN host_folded TEXT NOT NULL DEFAULT ''")
    op.execute("ALTER TABLE log_lines ADD COLUMN app_folded TEXT")
    op.execute("ALTER TABLE log_lines ADD COLUMN level_folded TEXT")
    op.execute(
        "CREATE VIRTUAL TABLE log_search USING fts5(text, "
        "tokenize='trigram case_sensitive 1', content='', detail='none')"
    )
    for rows in _old_batches(connection, "log_lines"):
        changes = []
        for row in rows:
            tags, meta = _document(row[11]), _document(row[12])
            changes.append(
                {
                    "id": row[0],
                    "tags": tags,
                    "meta": meta,
                    "host_folded": row[4].casefold(),
                    "app_folded": _folded(row[5]),
                    "level_folded": _folded(row[6]),
                    "search": _search_text(row[13], meta),
                }
            )
        connection.execute(
            sa.text(
                "UPDATE log_lines SET tags = :tags, meta = :meta, host_folded = :host_folded, "
                "app_folded = :app_folded, level_folded = :level_folded WHERE id = :id"
            ),
            changes,
        )
        connection.execute(
            sa.text("INSERT INTO log_search (rowid, text) VALUES (:id, :search)"), changes
        )
    for name, columns in _INDEXES[2:]:
        op.execute(f"CREATE INDEX {name} ON log_lines ({columns})")
    last = connection.execute(sa.text("SELECT coalesce(max(id), 0) FROM log_lines")).scalar()
    connection.execute(
        sa.text("INSERT INTO log_store_state VALUES (1, :last, :version)"),
        {"last": last, "version": unicodedata.unidata_version},
    )


def _upgrade_postgresql(connection: sa.Connection) -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.execute("ALTER TABLE log_lines RENAME TO log_lines_0003")
    for name, _columns in _INDEXES[:2]:
        op.execute(f"DROP INDEX {name}")
    op.execute("ALTER TABLE log_lines_0003 DROP CONSTRAINT pk_log_lines")
    op.execute("ALTER TABLE log_lines_0003 DROP CONSTRAINT fk_log_lines_account_id_accounts")
    # The id sequence outlives the old table and keeps counting for the new one.
    op.execute("ALTER SEQUENCE log_lines_id_seq OWNED BY NONE")
    op.execute(
        """
        CREATE TABLE log_lines (
            id BIGINT NOT NULL DEFAULT nextval('log_lines_id_seq'),
            account_id VARCHAR(24) NOT NULL
                CONSTRAINT fk_log_lines_account_id_accounts
                REFERENCES accounts (id) ON DELETE CASCADE,
            ts BIGINT NOT NULL,
            received_ms BIGINT NOT NULL,
            host VARCHAR(256) NOT NULL,
            app VARCHAR(512),
            level VARCHAR(64),
            env VARCHAR(256),
            file VARCHAR(512),
            ip VARCHAR(64),
            mac VARCHAR(64),
            tags JSONB,
            meta JSONB,
            line TEXT NOT NULL,
            size_bytes INTEGER NOT NULL,
            host_folded TEXT COLLATE "C" NOT NULL,
            app_folded TEXT COLLATE "C",
            level_folded TEXT COLLATE "C",
            search TEXT NOT NULL,
            CONSTRAINT pk_log_lines PRIMARY KEY (id, received_ms)
        ) PARTITION BY RANGE (received_ms)
        """
    )
    op.execute("ALTER SEQUENCE log_lines_id_seq OWNED BY log_lines.id")
    for name, columns in _INDEXES:
        op.execute(f"CREATE INDEX {name} ON log_lines ({columns})")
    op.execute("CREATE INDEX ix_log_lines_search ON log_lines USING gin (search gin_trgm_ops)")

    days = connection.execute(
        sa.text(f"SELECT DISTINCT received_ms / {_DAY_MS} FROM log_lines_0003")
    ).scalars()
    for day in sorted(int(day) for day in days):
        op.execute(
            f'CREATE TABLE "{_partition_name(day)}" PARTITION OF log_lines '
            f"FOR VALUES FROM ({day * _DAY_MS}) TO ({(day + 1) * _DAY_MS})"
        )
    insert = sa.text(
        "INSERT INTO log_lines (id, account_id, ts, received_ms, host, app, level, env, file, "
        "ip, mac, tags, meta, line, size_bytes, host_folded, app_folded, level_folded, search) "
        "VALUES (:id, :account_id, :ts, :received_ms, :host, :app, :level, :env, :file, :ip, "
        ":mac, CAST(:tags AS JSONB), CAST(:meta AS JSONB), :line, :size_bytes, :host_folded, "
        ":app_folded, :level_folded, :search)"
    )
    for rows in _old_batches(connection, "log_lines_0003"):
        copied = []
        for row in rows:
            tags, meta = _document(row[11]), _document(row[12])
            copied.append(
                {
                    "id": row[0],
                    "account_id": row[1],
                    "ts": row[2],
                    "received_ms": row[3],
                    "host": row[4],
                    "app": row[5],
                    "level": row[6],
                    "env": row[7],
                    "file": row[8],
                    "ip": row[9],
                    "mac": row[10],
                    "tags": tags,
                    "meta": meta,
                    "line": row[13],
                    "size_bytes": row[14],
                    "host_folded": row[4].casefold(),
                    "app_folded": _folded(row[5]),
                    "level_folded": _folded(row[6]),
                    "search": _search_text(row[13], meta),
                }
            )
        connection.execute(insert, copied)
    op.execute("DROP TABLE log_lines_0003")
    connection.execute(
        sa.text("INSERT INTO log_store_state VALUES (1, 0, :version)"),
        {"version": unicodedata.unidata_version},
    )


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        _downgrade_postgresql()
    else:
        op.execute("DROP TABLE log_search")
        for name, _columns in _INDEXES[2:]:
            op.execute(f"DROP INDEX {name}")
        with op.batch_alter_table("log_lines") as batch_op:
            batch_op.drop_column("host_folded")
            batch_op.drop_column("app_folded")
            batch_op.drop_column("level_folded")
    op.drop_table("log_store_state")


def _downgrade_postgresql() -> None:
    op.execute("ALTER TABLE log_lines RENAME TO log_lines_0004")
    for name, _columns in _INDEXES:
        op.execute(f"DROP INDEX {name}")
    op.execute("ALTER TABLE log_lines_0004 DROP CONSTRAINT pk_log_lines")
    op.execute("ALTER TABLE log_lines_0004 DROP CONSTRAINT fk_log_lines_account_id_accounts")
    op.execute("ALTER SEQUENCE log_lines_id_seq OWNED BY NONE")
    op.execute(
        """
        CREATE TABLE log_lines (
            id BIGINT NOT NULL DEFAULT nextval('log_lines_id_seq'),
            account_id VARCHAR(24) NOT NULL
                CONSTRAINT fk_log_lines_account_id_accounts
                REFERENCES accounts (id) ON DELETE CASCADE,
            ts BIGINT NOT NULL,
            received_ms BIGINT NOT NULL,
            host VARCHAR(256) NOT NULL,
            app VARCHAR(512),
            level VARCHAR(64),
            env VARCHAR(256),
            file VARCHAR(512),
            ip VARCHAR(64),
            mac VARCHAR(64),
            tags JSON,
            meta JSON,
            line TEXT NOT NULL,
            size_bytes INTEGER NOT NULL,
            CONSTRAINT pk_log_lines PRIMARY KEY (id)
        )
        """
    )
    op.execute("ALTER SEQUENCE log_lines_id_seq OWNED BY log_lines.id")
    op.execute(
        "INSERT INTO log_lines SELECT id, account_id, ts, received_ms, host, app, level, env, "
        "file, ip, mac, tags::json, meta::json, line, size_bytes FROM log_lines_0004"
    )
    op.execute("DROP TABLE log_lines_0004 CASCADE")
    for name, columns in _INDEXES[:2]:
        op.execute(f"CREATE INDEX {name} ON log_lines ({columns})")
