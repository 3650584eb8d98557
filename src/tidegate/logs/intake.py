"""The one writer of log lines: every path that stores lines in an account's log store
(``POST /logs/ingest`` and ``/logs/agent``, the pipeline's ``mezmo`` destination) goes
through ``LineIntake``, so exclusion rules, usage, storage and live tail can never
disagree between them.

A writer turns what it received into ``NewLine`` records (the one record of a line in
flight; the time read by ``logs.timestamps``, the one timestamp rule), then:

0. ``judge_lines`` first parses each line's text into fields (``logs.parsing``: JSON,
   logfmt, access and error logs, syslog, a level word), merged into its meta, so
   rules, storage, search and live tail all see the same fields;
1. ``LineIntake.rules_for`` gives the account's active exclusion rules and parsing
   templates (tried before the built-in forms in step 0), compiled and cached per
   worker and checked for changes on every call (a fingerprint query);
2. ``judge_lines`` (plain CPU, fit for a worker thread) keeps each line or counts it as
   excluded, keeps the ``indexonly`` ones for live tail, and builds the rows and the
   usage to write (``StoreBatch``);
3. ``LineIntake.commit`` hands every account's batch to the worker's group-commit
   ``LineWriter`` (one transaction, usage in the same one) and returns once it committed;
   and then counts the lines each parsing template took (``logs.template_counts``);
4. ``LineIntake.publish`` gives live tail the stored lines and the indexonly ones, after
   the commit; it never blocks and never raises.

``store`` is 3 then 4. Ingestion publishes after its answer instead (a background task)
and so calls the two itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tidegate.db.engine import Database
from tidegate.logs import repository
from tidegate.logs.exclusion import Fingerprint, RuleCache, RuleSet, Verdict
from tidegate.logs.parsing import parse_line
from tidegate.logs.store import NewLine, StoreBatch
from tidegate.logs.tail import TailBroker, TailLine
from tidegate.logs.template_counts import TemplateCounts
from tidegate.logs.templates import TemplateSet
from tidegate.logs.writer import LineWriter

__all__ = ["JudgedLines", "LineIntake", "judge_lines"]


@dataclass(slots=True)
class JudgedLines:
    """One account's lines after the exclusion rules: what to store, what only live tail
    sees, what was excluded (counted in usage), and the rows to write."""

    account_id: str
    received_ms: int
    stored: list[NewLine] = field(default_factory=list)
    indexonly: list[NewLine] = field(default_factory=list)
    excluded_lines: int = 0
    excluded_bytes: int = 0
    excluded_repaired: int = 0
    batch: StoreBatch | None = None
    # Lines each parsing template took (template id: count), counted once committed.
    template_hits: dict[str, int] = field(default_factory=dict)

    def keep(self, line: NewLine, rules: RuleSet) -> None:
        verdict = (
            rules.verdict(
                line=line.line,
                host=line.host,
                app=line.app,
                level=line.level,
                file=line.file,
                meta=line.meta,
            )
            if rules
            else Verdict.KEEP
        )
        if verdict is Verdict.KEEP:
            self.stored.append(line)
            return
        self.excluded_lines += 1
        self.excluded_bytes += line.size_bytes
        self.excluded_repaired += line.repaired
        if verdict is Verdict.INDEXONLY:
            self.indexonly.append(line)

    def seal(self) -> JudgedLines:
        """Build the rows and usage to write (nothing when nothing is stored or
        counted). CPU work: in the caller's worker thread."""
        if self.stored or self.excluded_lines:
            self.batch = StoreBatch.of(
                account_id=self.account_id,
                received_ms=self.received_ms,
                lines=self.stored,
                excluded_lines=self.excluded_lines,
                excluded_bytes=self.excluded_bytes,
                excluded_repaired=self.excluded_repaired,
            )
        return self

    def for_live_tail(self) -> list[TailLine]:
        """The stored lines (with their ids once the writer knows them: committed, so a
        line's context can be asked as soon as it arrives) and the indexonly ones."""
        ids = self.batch.ids if self.batch is not None else None
        stored = (
            (TailLine.from_new_line(line) for line in self.stored)
            if ids is None or len(ids) != len(self.stored)
            else (
                TailLine.from_new_line(line, line_id=line_id)
                for line, line_id in zip(self.stored, ids, strict=True)
            )
        )
        return [
            *stored,
            *(TailLine.from_new_line(line, indexonly=True) for line in self.indexonly),
        ]


def judge_lines(
    *,
    account_id: str,
    lines: Iterable[NewLine],
    rules: RuleSet,
    received_ms: int,
    parse: bool = True,
) -> JudgedLines:
    """``lines`` parsed into fields (``parse``; off only to measure what parsing costs),
    through the account's exclusion rules, with the rows to write built."""
    judged = JudgedLines(account_id=account_id, received_ms=received_ms)
    if parse:
        run = rules.templates.counting() if rules.templates else None
        if run is not None:
            judged.template_hits = run.hits  # filled as the lines below are parsed
        templates = run.parse if run is not None else None
        lines = (parse_line(line, templates) for line in lines)
    if not rules:  # the usual case: every line is kept
        judged.stored = list(lines)
    else:
        for line in lines:
            judged.keep(line, rules)
    return judged.seal()


class LineIntake:
    """The worker's one door into the log store (see the module's docstring)."""

    def __init__(
        self,
        *,
        db: Database,
        writer: LineWriter,
        tail: TailBroker,
        rules: RuleCache,
        template_counts: TemplateCounts | None = None,
    ) -> None:
        self.db = db
        self.writer = writer
        self.tail = tail
        self.rules = rules
        self.template_counts = template_counts

    async def rules_for(self, account_id: str, fingerprint: Fingerprint | None = None) -> RuleSet:
        """The account's active exclusion rules and parsing templates. ``fingerprint``
        when the caller read it already (the ingestion key lookup does, in the same
        query); else it is read."""
        if fingerprint is None:
            fingerprint = await repository.rules_fingerprint(db=self.db, account_id=account_id)
        rules = self.rules.get(account_id, fingerprint)
        if rules is None:
            async with self.db.read_sessions() as session:
                rows = await repository.active_rules(session=session, account_id=account_id)
                templates = await repository.active_templates(
                    session=session, account_id=account_id
                )
            rules = RuleSet.from_rows(rows, TemplateSet.from_rows(templates))
            self.rules.put(account_id, fingerprint, rules)
        return rules

    async def commit(self, judged: Sequence[JudgedLines]) -> None:
        """Store the kept lines and count usage, all accounts in one transaction (group
        commit with the worker's other writers); committed on return."""
        batches = [item.batch for item in judged if item.batch is not None]
        if batches and not self.writer.numbers_lines:
            # PostgreSQL takes the ids from the sequence first (one more statement and
            # a microsecond a row), only for the accounts someone is tailing now.
            listened = await self.tail.listened({batch.account_id for batch in batches})
            for batch in batches:
                batch.want_ids = batch.account_id in listened
        if batches:
            await self.writer.write(batches)
        if self.template_counts is not None:
            for item in judged:
                if item.template_hits:
                    self.template_counts.add(item.template_hits, at_ms=item.received_ms)

    def wants_tail(self, account_id: str) -> bool:
        """Whether anyone can be listening (a subscriber here, or other processes)."""
        return self.tail.spans_processes or self.tail.subscriber_count(account_id) > 0

    async def publish(self, judged: Sequence[JudgedLines]) -> None:
        """Live tail gets the committed lines and the indexonly ones."""
        for item in judged:
            if self.wants_tail(item.account_id):
                live = item.for_live_tail()
                if live:
                    await self.tail.publish(item.account_id, live)

    async def store(self, judged: Sequence[JudgedLines]) -> None:
        await self.commit(judged)
        await self.publish(judged)
