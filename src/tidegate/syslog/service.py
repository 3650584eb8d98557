"""Syslog lines into the log store, through the one writer of lines (``logs.intake``)
exactly as ``POST /logs/ingest`` stores them: the same key check, line objects, line
parsing, exclusion rules, usage, live tail and pipelines' ingestion feed.

A batch is a connection's frames read so far (``listener``). Each frame is read in a
worker thread (``messages.read_frame``); each distinct key of the batch is looked up
once, by its keyed hash, as ingestion does (``ingest.service.account_for_key``: an
unknown key, a deactivated or suspended account, or one without ``enable_syslog``
refuses its lines); the lines of each account are judged (a worker thread again) and
committed together. A line without a valid key is dropped and counted, never its
neighbours.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from tidegate.app_state import AppState
from tidegate.clock import now_ms
from tidegate.errors import BadRequest, Forbidden
from tidegate.ingest.service import (
    IngestParams,
    account_for_key,
    build_line,
    check_params,
)
from tidegate.logs.exclusion import RuleSet
from tidegate.logs.intake import JudgedLines, judge_lines
from tidegate.logs.store import NewLine
from tidegate.syslog.framing import Frame
from tidegate.syslog.messages import Message, read_frame

__all__ = ["Outcome", "store_frames"]

# Why a line was dropped (the metric's ``outcome`` label, and the log).
NOT_SYSLOG = "not_syslog"
NO_KEY = "no_key"
REFUSED = "refused"


@dataclass(slots=True)
class Outcome:
    """What became of a batch's lines: ``accepted`` went to the writer (stored, or
    excluded by a rule and counted in usage); ``dropped`` counts the others by reason;
    ``refusals`` the reasons the accounts' keys were refused (never the keys)."""

    accepted: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)


def _read_frames(frames: Sequence[Frame]) -> list[Message | None]:
    return [read_frame(frame.data, truncated=frame.truncated) for frame in frames]


def _params(peer: str, tags: str | None) -> tuple[IngestParams, bool]:
    """``/logs/ingest``'s parameters for lines from ``peer`` with the element's ``tags``
    (as ``?tags=``), and whether the tags had to be dropped (too many or too long)."""
    try:
        return check_params(
            hostname=peer, mac=None, ip=peer, now=None, tags=[tags] if tags else ()
        ), False
    except BadRequest:
        return check_params(hostname=peer, mac=None, ip=peer, now=None, tags=()), True


def _new_lines(messages: list[Message], *, peer: str, received_ms: int) -> Iterator[NewLine]:
    """The messages as ``/logs/ingest`` builds its line objects: the header's host, else
    the sender's address; the parameters made once per distinct ``tags`` of a batch."""
    made: dict[str | None, tuple[IngestParams, bool]] = {}
    for message in messages:
        found = made.get(message.tags)
        if found is None:
            found = made[message.tags] = _params(peer, message.tags)
        params, dropped_tags = found
        line = build_line(
            message.item, params=params, default_ts=received_ms, tags=list(params.tags) or None
        )
        line.repaired = line.repaired or message.repaired or dropped_tags
        yield line


def _judge(
    accounts: dict[str, tuple[RuleSet, list[Message]]], *, peer: str, received_ms: int
) -> list[JudgedLines]:
    return [
        judge_lines(
            account_id=account_id,
            lines=_new_lines(messages, peer=peer, received_ms=received_ms),
            rules=rules,
            received_ms=received_ms,
        )
        for account_id, (rules, messages) in accounts.items()
    ]


async def store_frames(*, state: AppState, frames: Sequence[Frame], peer: str) -> Outcome:
    """Store the lines of ``frames`` (one connection's, from ``peer``, its address) that
    carry a valid key of an account with syslog on; count the others."""
    outcome = Outcome()
    runtime = state.ingest
    messages = await runtime.off_loop(functools.partial(_read_frames, frames))
    by_key: dict[str, list[Message]] = {}
    for message in messages:
        if message is None:
            outcome.dropped[NOT_SYSLOG] += 1
        elif message.key is None:
            outcome.dropped[NO_KEY] += 1
        else:
            by_key.setdefault(message.key, []).append(message)
    accounts: dict[str, tuple[RuleSet, list[Message]]] = {}
    for key, keyed in by_key.items():
        try:
            account_id, rules = await account_for_key(intake=state.intake, key=key, syslog=True)
        except Forbidden as refused:
            outcome.dropped[REFUSED] += len(keyed)
            outcome.refusals[refused.message] += len(keyed)
            continue
        accounts.setdefault(account_id, (rules, []))[1].extend(keyed)
    if not accounts:
        return outcome
    received_ms = now_ms()
    judged = await runtime.off_loop(
        functools.partial(_judge, accounts, peer=peer, received_ms=received_ms)
    )
    intake = state.intake
    await intake.commit(judged)
    outcome.accepted = sum(len(messages) for _, messages in accounts.values())
    await intake.publish(judged)
    feed = state.pipelines.ingestion_feed
    for item in judged:
        if await feed.wanted(db=state.db, runtime=state.pipelines, account_id=item.account_id):
            await feed.feed(
                runtime=state.pipelines, intake=intake, judged=[item], received_ms=received_ms
            )
    return outcome
