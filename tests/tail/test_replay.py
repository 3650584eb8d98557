"""What a reopened live-tail stream is given of what it missed, read from the store
(``tidegate.tail.service.stored_since``): the lines past the id it had, its filter's,
oldest first, as far back as the window, the newest few when there are many; another
account's never."""

from __future__ import annotations

import pytest
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, export_all, insert_lines, read_off_loop
from tests.factories import make_account, make_tenant
from tests.tail.test_live import _account_with_key

from tidegate.clock import now_ms
from tidegate.db.engine import Database
from tidegate.logs.filtering import parse_line_filter
from tidegate.logs.reading import PageReader
from tidegate.logs.store import NewLine
from tidegate.tail import service


async def _missed(
    client: AppClient, account_id: str, after_id: int, at: int, query: str
) -> list[str]:
    line_filter = parse_line_filter(
        hosts=None, apps=None, levels=None, query=query, account_id=account_id
    )
    db = Database.connect(client.database_url)

    def read(reader: PageReader) -> list[str]:
        found = service.stored_since(
            reader, account_id=account_id, after_id=after_id, now_ms=at, line_filter=line_filter
        )
        return [line.line for line in found]

    return await read_off_loop(db, account_id, read)


async def test_the_lines_past_an_id_within_the_bounds(
    isolated_client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = isolated_client
    account, _key = await _account_with_key(client)
    other = await make_account(client, await make_tenant(client.database_url))
    now = now_ms()

    def lines(*texts: str) -> list[NewLine]:
        return [NewLine(line=text, ts=BASE_MS, host="h") for text in texts]

    # Received 20 minutes ago: past the window. Then, now, one at a time (ids in order),
    # another account's between them.
    await insert_lines(
        client.database_url, account.account_id, lines("old"), received_ms=now - 1_200_000
    )
    for text in ("seen", "one", "two", "skip three", "four", "five"):
        await insert_lines(client.database_url, account.account_id, lines(text))
        await insert_lines(client.database_url, other.account_id, lines(f"theirs {text}"))
    exported, _pages = await export_all(client, account.headers, prefer="head")
    ids = {record["_line"]: int(record["_id"]) for record in exported}
    account_id = account.account_id

    assert await _missed(client, account_id, ids["seen"], now, "-skip") == [
        "one",
        "two",
        "four",
        "five",
    ]
    assert await _missed(client, account_id, ids["five"], now, "") == []
    # The line before the window is past "old"'s id but not given.
    assert await _missed(client, account_id, ids["old"], now, "") == [
        "seen", "one", "two", "skip three", "four", "five"
    ]  # fmt: skip
    # Ten minutes on, the window has passed them all.
    assert await _missed(client, account_id, ids["seen"], now + 700_000, "") == []

    # Many missed: the newest REPLAY_SCAN read, the newest REPLAY_MAX_LINES of those sent.
    monkeypatch.setattr(service, "REPLAY_SCAN", 4)
    monkeypatch.setattr(service, "REPLAY_MAX_LINES", 2)
    assert await _missed(client, account_id, ids["seen"], now, "-skip") == ["four", "five"]
    monkeypatch.setattr(service, "REPLAY_MAX_LINES", 3)
    # The newest four are two, skip three, four, five: three selected.
    assert await _missed(client, account_id, ids["seen"], now, "-skip") == ["two", "four", "five"]
