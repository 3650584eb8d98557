"""FairShare: the export threads' admission, per account and round-robin
(docs/fair-reads.md). Pure asyncio: ordering only, no threads, no timing."""

from __future__ import annotations

import asyncio

import pytest

from tidegate.logs.fair_share import FairShare, HeavyReaders


async def _settle() -> None:
    # Grants are delivered with call_soon_threadsafe: one pass of the loop each.
    for _ in range(5):
        await asyncio.sleep(0)


async def test_one_account_never_holds_every_slot_and_queues_are_served_round_robin() -> None:
    share = FairShare(capacity=2, per_account=1)
    admitted: list[str] = []

    async def read(account: str) -> None:
        await share.acquire(account)
        admitted.append(account)

    await read("a")  # a takes one slot; its next three reads queue
    queued = [asyncio.create_task(read(name)) for name in ("a", "a", "a", "b", "c")]
    await _settle()
    assert admitted == ["a", "b"]  # b did not wait behind a's queue
    share.release("b")
    await _settle()
    assert admitted == ["a", "b", "c"]
    share.release("a")
    await _settle()
    assert admitted == ["a", "b", "c", "a"]
    for _ in range(2):
        share.release("a")
        await _settle()
    assert admitted == ["a", "b", "c", "a", "a", "a"]
    await asyncio.gather(*queued)
    assert share.running("a") == 1


async def test_a_read_that_goes_away_while_queued_or_just_granted_frees_its_slot() -> None:
    share = FairShare(capacity=1, per_account=1)
    await share.acquire("a")
    waiting = asyncio.create_task(share.acquire("b"))
    await _settle()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    granted = asyncio.create_task(share.acquire("c"))
    await _settle()
    share.release("a")  # c is granted, and goes away before it runs
    granted.cancel()
    with pytest.raises(asyncio.CancelledError):
        await granted
    await share.acquire("d")  # the slot is free again: admitted at once
    assert share.running("d") == 1
    assert share.running("b") == share.running("c") == 0


def test_an_account_is_heavy_for_a_while_after_a_read_that_took_much_cpu() -> None:
    heavy = HeavyReaders(cpu_s=0.25, for_s=60.0, max_accounts=2)
    heavy.read_took("light", 0.25, now_s=100.0)  # not more than the threshold
    heavy.read_took("a", 0.3, now_s=100.0)
    assert not heavy.is_heavy("light", 100.0)
    assert heavy.is_heavy("a", 100.0)
    assert heavy.is_heavy("a", 159.9)
    assert not heavy.is_heavy("a", 160.1)
    # Bounded: past max_accounts, the expired are forgotten first.
    heavy.read_took("b", 1.0, now_s=200.0)
    heavy.read_took("c", 1.0, now_s=200.0)
    assert heavy.is_heavy("b", 200.0)
    assert heavy.is_heavy("c", 200.0)
    heavy.read_took("d", 1.0, now_s=201.0)  # full of live ones: d is not remembered
    assert not heavy.is_heavy("d", 201.0)
