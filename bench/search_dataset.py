"""The data set of ``bench_search.py``: seeded, realistic log lines of one account, a few
other accounts' lines (so tenancy is real), and what the Python matcher selects among
the main account's lines for each benchmark case.

The same seed and size always give the same lines, timestamps included (they end at a
fixed instant, ``END_MS``; the bench's accounts keep lines forever, so retention never
thins a cached load). Lines come in time order over ``DAYS`` days with a daily rhythm
(busier by day) and a two-hour incident on day 5 (errors and resets spike), some lines
share a millisecond, some arrive a few minutes late. What is in them:

- apps ``web`` (nginx access and error logs), ``webhooks`` and ``websocket-gw`` (both
  also match ``app:web``: it is a prefix), ``api`` (structured Python service),
  ``worker``, ``auth`` (e-mail addresses with non-ASCII names), ``billing``,
  ``postgres``, ``cron``, and kernel lines without app or level; levels spelled as each
  of those programs spells them (``ERROR``, ``error``, ``Error``, ``LOG``, ``FATAL``);
- JSON meta on ~92% of lines: nested objects, integers, floats (small ones that JSON
  encoders spell with exponents), booleans, arrays of strings and numbers, and a
  ``request_id`` holding the line's sequence number (``req_000000042``), by which the
  bench checks that an exported ``_id`` is the line it should be;
- the words the cases look for, and near misses of them (``search_lines.py``).

Saved expectations (and the bench's kept loads) are keyed by ``generator_key()``, a
digest of this module and ``search_lines.py``: change either and they are made afresh.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path

from search_lines import COMMON_WORD, PHRASE, RARE_WORD, LineWriter
from tidegate.logs.store import NewLine
from tidegate.search import LogLine, Query, compile_query

DAYS = 7
DAY_MS = 86_400_000
END_MS = 1_763_856_000_000  # 2025-11-23T00:00:00Z
START_MS = END_MS - DAYS * DAY_MS
OTHER_ACCOUNTS = 3
OTHER_SHARE = 0.05  # of all lines: the other accounts' lines, interleaved in time


@dataclass(frozen=True)
class Case:
    """One measured query: ``query`` None is the export without a query."""

    name: str
    query: str | None


CASES = (
    Case("no query", None),
    Case("rare word", RARE_WORD),
    Case("level+app", "level:error app:web"),
    Case("meta field", "meta.error.code:ECONNRESET"),
    Case("phrase", f'"{PHRASE}"'),
    Case("common word", COMMON_WORD),
)


@dataclass
class Expected:
    """Which of the main account's lines (by sequence number) each case selects, one
    byte per line (1 = selected), and the time range of all generated lines."""

    lines: int
    selected: dict[str, bytearray]
    first_ms: int = END_MS
    last_ms: int = START_MS

    @classmethod
    def empty(cls, lines: int) -> Expected:
        return cls(lines, {case.name: bytearray(lines) for case in CASES})

    def count(self, case: Case) -> int:
        return self.selected[case.name].count(1)

    def save(self, directory: Path) -> None:
        """Into ``directory``, replacing what an older generator saved there."""
        directory.mkdir(parents=True, exist_ok=True)
        key = generator_key()
        for path in directory.glob("expected-*"):
            if not path.name.startswith(f"expected-{key}"):
                path.unlink()
        for case in CASES:
            (directory / _expected_file(case)).write_bytes(self.selected[case.name])
        summary = {"lines": self.lines, "first_ms": self.first_ms, "last_ms": self.last_ms}
        (directory / f"expected-{key}.json").write_text(json.dumps(summary))

    @classmethod
    def load(cls, directory: Path) -> Expected | None:
        """The saved expectations, or None when any case's is missing (cases changed)."""
        summary_path = directory / f"expected-{generator_key()}.json"
        paths = {case.name: directory / _expected_file(case) for case in CASES}
        if not summary_path.exists() or not all(path.exists() for path in paths.values()):
            return None
        summary = json.loads(summary_path.read_text())
        selected = {name: bytearray(path.read_bytes()) for name, path in paths.items()}
        return cls(summary["lines"], selected, summary["first_ms"], summary["last_ms"])


def generator_key() -> str:
    """A digest of the code that makes the lines and judges them."""
    digest = hashlib.sha256()
    for module in ("search_dataset.py", "search_lines.py"):
        digest.update((Path(__file__).parent / module).read_bytes())
    return digest.hexdigest()[:8]


def _expected_file(case: Case) -> str:
    digest = hashlib.sha256(repr(case.query).encode()).hexdigest()[:12]
    return f"expected-{generator_key()}-{digest}.bits"


@dataclass
class Batch:
    """Lines of one account in time order; ``account`` 0 is the measured account, 1.. the
    others. ``received_ms`` is when the batch "arrived": after its newest line."""

    account: int
    lines: list[NewLine] = field(default_factory=list)

    @property
    def received_ms(self) -> int:
        return max(line.ts for line in self.lines) + 1_500


def generate(
    *, seed: int, lines: int, batch: int, expected: Expected | None = None
) -> Iterator[list[Batch]]:
    """The data set in rounds: each round is one batch of up to ``batch`` lines of the
    main account and the other accounts' lines of the same time span (about
    ``OTHER_SHARE`` of the total). Fills ``expected`` as it goes."""
    rng = random.Random(seed)
    others = round(lines * OTHER_SHARE / (1 - OTHER_SHARE))
    writer = LineWriter(rng)
    matchers = [(case.name, compile_query(case.query)) for case in CASES if case.query]
    seq, other_left = 0, others
    rounds = [Batch(account) for account in range(OTHER_ACCOUNTS + 1)]
    for ts, incident in _timestamps(rng, lines + others):
        # Exactly ``lines`` main lines, the others spread evenly among them.
        if rng.random() * (lines - seq + other_left) < lines - seq:
            line = writer.line(ts, incident, seq)
            rounds[0].lines.append(line)
            if expected is not None:
                _judge(expected, matchers, seq, line)
            seq += 1
        else:
            other_left -= 1
            rounds[1 + rng.randrange(OTHER_ACCOUNTS)].lines.append(writer.line(ts, incident, None))
        if len(rounds[0].lines) >= batch:
            yield [item for item in rounds if item.lines]
            rounds = [Batch(account) for account in range(OTHER_ACCOUNTS + 1)]
    rest = [item for item in rounds if item.lines]
    if rest:
        yield rest


def _judge(expected: Expected, matchers: list[tuple[str, Query]], seq: int, line: NewLine) -> None:
    """Record which cases select the line, as export's filter would see it."""
    expected.selected["no query"][seq] = 1
    view = LogLine(
        line.line, host=line.host, app=line.app, level=line.level, file=line.file, meta=line.meta
    )
    for name, query in matchers:
        if query.matches(view):
            expected.selected[name][seq] = 1
    expected.first_ms = min(expected.first_ms, line.ts)
    expected.last_ms = max(expected.last_ms, line.ts)


def _timestamps(rng: random.Random, count: int) -> Iterator[tuple[int, bool]]:
    """``count`` timestamps over the days, in order but for a few late ones, with the
    hour's share of lines following a daily rhythm; and whether the hour is the
    incident's."""
    hours = DAYS * 24
    incident = {5 * 24 + 14, 5 * 24 + 15}
    weights = [
        (1.0 + 0.6 * math.sin(2 * math.pi * ((hour % 24) - 9) / 24))
        * (2.0 if hour in incident else 1.0)
        for hour in range(hours)
    ]
    cumulative = list(accumulate(weights))
    scale = count / cumulative[-1]
    previous = START_MS
    emitted = 0
    for hour in range(hours):
        in_hour = round(cumulative[hour] * scale) - emitted
        hour_start = START_MS + hour * 3_600_000
        step = 3_600_000 / max(1, in_hour)
        for index in range(in_hour):
            draw = rng.random()
            if draw < 0.02:  # a burst: the same millisecond as the line before
                ts = previous
            elif draw < 0.03:  # late: written minutes ago, shipped now
                ts = max(START_MS, hour_start + int(index * step) - rng.randrange(300_000))
            else:
                ts = hour_start + int((index + rng.random()) * step)
                previous = ts
            yield ts, hour in incident
        emitted += in_hour
