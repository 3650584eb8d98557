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


# Lines of the known forms that carry a message part, as the agent reads them from
# files (and syslog, nginx, Kubernetes, PostgreSQL and Lambda write them).
FORMATS = {
    "syslog": "Nov 22 08:00:01 web-1 sshd[4711]: Accepted publickey for deploy",
    "syslog 5424": "<34>1 2025-11-22T08:00:01Z db-2 cron 99 - - backup finished on db-2",
    "logfmt": 'time=2025-11-22T08:00:01Z level=warn msg="queue \\"jobs\\" is slow" took=12ms',
    "nginx error": (
        "2025/11/22 08:00:01 [error] 12#12: *9 upstream timed out, client: 10.0.0.1, "
        'server: api, request: "GET /x HTTP/1.1"'
    ),
    "klog": "E1122 08:00:01.123456    1 controller.go:114] sync failed for pod web-0",
    "postgres": "2025-11-22 08:00:01.123 UTC [4711] ERROR:  deadlock detected",
    "plain": "worker 3 processed the ledger batch",
}


async def test_bare_terms_search_the_message_of_every_parsed_form(client: AppClient) -> None:
    """As for JSON lines, the platform's "parsed the same way" for the known forms: bare
    terms and phrases search the message part of a syslog, logfmt, nginx error, klog or
    server line, sent as the agent sends lines it reads from files; fields (the host,
    the client, the caller) are found by name. A sender's own meta ``message`` beside a
    text that does not carry it changes nothing."""
    who = await make_ingestor(client)
    sent = [
        {"line": text, "file": f"/var/log/{name.replace(' ', '-')}.log"}
        for name, text in FORMATS.items()
    ]
    own = "request handled in 12 ms for tenant acme"
    sent.append({"line": own, "meta": {"message": "handled in 12 ms"}})
    # The sender's meta message wins over the parsed one: the text is searched whole.
    overridden = "Nov 22 08:00:02 web-1 sudo[12]: session opened for root"
    sent.append({"line": overridden, "meta": {"message": "elevated"}})
    assert (await ingest(client, who, sent)).status_code == 200
    window = _window()
    for query, expected in (
        # The message is searched...
        ("accepted", ["syslog"]),
        ('"backup finished on db-2"', ["syslog 5424"]),
        ('"queue \\"jobs\\" is slow"', ["logfmt"]),
        ("upstream", ["nginx error"]),
        ('"sync failed"', ["klog"]),
        ("deadlock", ["postgres"]),
        ("ledger", ["plain"]),
        # ...not the parts around it, which are fields.
        ("sshd", []),
        ("appname:sshd", ["syslog"]),
        ("cron", []),
        ("took", []),
        ("took:12ms", ["logfmt"]),
        ("client", []),
        ('client:"10.0.0.1"', ["nginx error"]),
        ("controller", []),
        ("caller:controller.go", ["klog"]),
        ("4711", []),
        ("pid:4711", ["postgres"]),
        # A sender's meta message is a field; the text is searched whole.
        ("tenant", [own]),
        ("message:handled", [own]),
        ("sudo session", [overridden]),
        # _line: is the text as sent.
        ("_line:nov", ["syslog", overridden]),
    ):
        found, _ = await export_all(client, who.account.headers, query=query, **window)
        lines = sorted(item["_line"] for item in found)
        assert lines == sorted(FORMATS.get(name, name) for name in expected), query


async def test_exclusion_rules_and_tail_search_a_parsed_forms_message(client: AppClient) -> None:
    who = await make_ingestor(client)
    await add_rule(client, who, query="publickey")
    tail = client._transport.app.state.tidegate.tail  # type: ignore[attr-defined]
    wanted = parse_line_filter(hosts=None, apps=None, levels=None, query="web")
    sent = [
        FORMATS["syslog"],  # excluded: its message
        "Nov 22 08:00:03 web-1 publickey[7]: keys rotated",  # kept: the tag is a field
        "Nov 22 08:00:04 db-1 cron[8]: web backup done",
    ]
    async with tail.subscribe(who.account_id, wanted) as subscription:
        assert (await ingest(client, who, [{"line": text} for text in sent])).status_code == 200
        batch = await subscription.next_batch(timeout=30)
    kept = [row.line for row in await stored_lines(client.database_url, who.account_id)]
    assert kept == sent[1:]
    # "web" is the first kept line's host name, a field: only the second's message has it.
    assert [item.line for item in batch.lines] == [sent[2]]
