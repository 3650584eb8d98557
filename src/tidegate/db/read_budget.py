"""The work one read of stored lines may do (docs/fair-reads.md).

A read (an export page, an aggregation, a usage breakdown) runs an account's query
over every line in its time range; with no bound, one account's expensive query holds
an export thread for as long as it likes. SQLite counts the virtual machine's steps of
the read's statements (a progress handler, checked every ``SQLITE_PROGRESS_EVERY``
steps) and interrupts the statement past ``sqlite_steps``; PostgreSQL cancels any
statement of the read past ``timeout_ms`` (``SET LOCAL statement_timeout``), and the
read stops at its next statement once all of them together took longer. The log
store's segments are read with DuckDB, which counts no steps: its statements of one
read share ``segment_s`` seconds of wall time, and the one running when it is spent is
interrupted (``DuckDBPyConnection.interrupt``). Steps are work, not time: on SQLite the
same read over the same lines is stopped at the same point however loaded the machine
is.
"""

from __future__ import annotations

from dataclasses import dataclass

SQLITE_PROGRESS_EVERY = 1000


@dataclass(frozen=True, slots=True)
class ReadBudget:
    # SQLite virtual machine steps over all statements of one read; 0: unlimited.
    sqlite_steps: int = 250_000_000
    # PostgreSQL: each statement of one read, and all of them together (checked before
    # each); 0: only the connection's statement_timeout.
    timeout_ms: int = 10_000
    # DuckDB (segments, either backend): all segment statements of one read, the rows'
    # handling in Python while a statement is open included; 0: unlimited.
    segment_s: float = 10.0
    # A read that took more of its thread's CPU than this makes its account's next reads
    # run on the lower-priority threads for a while (logs.fair_share); 0: never.
    heavy_read_cpu_s: float = 0.25
