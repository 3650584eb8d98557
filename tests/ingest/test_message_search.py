"""A JSON line's ``message`` is what bare terms and phrases search (the platform's "a
``message`` field is what is shown and searched as the line's text"), on both backends:
in export, exclusion rules and live tail; fields are still found by ``field:value``, and
lines without a JSON message are searched by their whole text as before."""

from __future__ import annotations

import time

from tests.conftest import AppClient
from tests.export.helpers import export_all
from tests.ingest.factories import add_rule, ingest, make_ingestor, stored_lines

from tidegate.logs.filtering import parse_line_filter

SENT = [
    '{"level":"error","message":"payment failed","status":503,"user":{"id":42}}',
    '2025-11-22T08:00:01Z GET /orders {"message":"order saved","took_ms":12}',
    '{"msg":"no message field here","level":"error"}',
    "plain error text with status 503",
    '{"message":"say \\"hi\\" to C:\\\\temp","level":"info"}',
    '{"message": "caf\\u00e9 opened"}',
]


def _window() -> dict[str, int]:
    now = int(time.time())
    return {"from": now - 3600, "to": now + 3600}


async def test_bare_terms_search_a_json_lines_message(client: AppClient) -> None:
    who = await make_ingestor(client)
    assert (await ingest(client, who, [{"line": text} for text in SENT])).status_code == 200
    window = _window()
    for query, expected in (
        ("payment", [SENT[0]]),
        ('"payment failed"', [SENT[0]]),
        # Only in the object's other fields, or the text around the object: not found.
        ("error", [SENT[2], SENT[3]]),
        ("status", [SENT[3]]),
        ("orders", []),
        ("order", [SENT[1]]),
        # Fields are found by name as ever, the message too.
        ("level:error status:503", [SENT[0]]),
        ("message:order", [SENT[1]]),
        ("user.id:42 payment", [SENT[0]]),
        ("-payment level:error", [SENT[2]]),
        # A message with characters JSON escapes is searched as it reads.
        ('"say \\"hi\\" to c:\\\\temp"', [SENT[4]]),
        ("café", [SENT[5]]),
        # _line: is still the text as sent.
        ('_line:"2025-11-22T08:00:01Z GET"', [SENT[1]]),
    ):
        found, _ = await export_all(client, who.account.headers, query=query, **window)
        assert sorted(item["_line"] for item in found) == sorted(expected), query
    # The text is stored and exported as sent.
    found, _ = await export_all(client, who.account.headers, query="payment", **window)
    assert found[0]["_line"] == SENT[0]


async def test_exclusion_rules_and_live_tail_search_the_message(client: AppClient) -> None:
    who = await make_ingestor(client)
    await add_rule(client, who, query="failed")
    tail = client._transport.app.state.tidegate.tail  # type: ignore[attr-defined]
    wanted = parse_line_filter(hosts=None, apps=None, levels=None, query="error")
    sent = [
        '{"message":"charge failed","level":"warn"}',  # excluded: its message
        '{"message":"all good","note":"failed once"}',  # kept: "failed" is not its message
        '{"message":"disk error","level":"warn"}',
        '{"message":"fine","level":"error"}',
    ]
    async with tail.subscribe(who.account_id, wanted) as subscription:
        assert (await ingest(client, who, [{"line": text} for text in sent])).status_code == 200
        batch = await subscription.next_batch(timeout=30)
    kept = [row.line for row in await stored_lines(client.database_url, who.account_id)]
    assert kept == sent[1:]
    assert [item.line for item in batch.lines] == [sent[2]]
