"""The syslog listener in process, on each backend: lines sent over TCP are stored by the
one writer and found by export; lines without a valid key, of an account without
syslog, or not syslog at all are dropped and counted, never their neighbours."""

from __future__ import annotations

import asyncio

from prometheus_client import REGISTRY
from tests.conftest import AppClient
from tests.ingest.factories import add_rule, make_ingestor, usage_rows
from tests.syslog.helpers import (
    WAIT_S,
    counted,
    element,
    rfc5424,
    send,
    syslog_port,
    wait_for_lines,
)
from tests.waiting import eventually


def dropped(outcome: str) -> float:
    return REGISTRY.get_sample_value("tidegate_syslog_lines_total", {"outcome": outcome}) or 0.0


async def test_lines_over_tcp_are_stored_as_ingested_lines(syslog_client: AppClient) -> None:
    who = await make_ingestor(syslog_client, enable_syslog=True)
    port = syslog_port(syslog_client)
    before = {outcome: dropped(outcome) for outcome in ("no_key", "refused", "not_syslog")}
    bsd = f"<38>Nov 26 10:00:01 box sshd[99]: {element(who.key)} Accepted publickey for ops\n"
    await send(
        port,
        (rfc5424(who.key, "GET /health 200", pri=14) + "\n").encode(),
        rfc5424("sti_not-a-key", "wrong key").encode() + b"\n",
        b"<13>1 - h a - - - no key at all\nnot syslog\n",
        bsd.encode(),
        counted(rfc5424(who.key, '{"status":503,"msg":"down"}', pri=11, app="worker")),
        counted(f"<14>1 - db pg - - {element(who.key, tags='blue,green')} tagged"),
    )
    lines = await wait_for_lines(syslog_client, who.account.headers, 4)
    by_text = {line["_line"]: line for line in lines}
    assert set(by_text) == {
        "GET /health 200",
        "Accepted publickey for ops",
        '{"status":503,"msg":"down"}',
        "tagged",
    }
    first = by_text["GET /health 200"]
    assert (first["_host"], first["_app"], first["level"]) == ("web-1", "api", "INFO")
    assert first["_meta"]["facility"] == "user"
    assert first["_meta"]["procid"] == "77"
    bsd_line = by_text["Accepted publickey for ops"]
    assert (bsd_line["_host"], bsd_line["_app"], bsd_line["level"]) == ("box", "sshd", "INFO")
    assert bsd_line["_meta"]["facility"] == "auth"
    # The message is parsed as any ingested line's text is: its JSON fields are fields.
    json_line = by_text['{"status":503,"msg":"down"}']
    assert json_line["level"] == "ERROR"
    assert json_line["_app"] == "worker"
    assert json_line["_meta"]["_status"] == 503
    tagged = by_text["tagged"]
    assert tagged["_host"] == "db"
    assert tagged["_tag"] == ["blue", "green"]
    # The key is never stored.
    assert not any(who.key in repr(line) for line in lines)
    # The others were dropped and counted, by reason: counted once their batch is over,
    # which is after its good lines are committed (and so may be found before).
    await eventually(
        lambda: all(dropped(outcome) > before[outcome] for outcome in before),
        timeout=WAIT_S,
        what="the three drops counted",
    )
    assert dropped("refused") - before["refused"] == 1
    assert dropped("no_key") - before["no_key"] == 1
    assert dropped("not_syslog") - before["not_syslog"] == 1
    # Search finds them like any line.
    found = await wait_for_lines(syslog_client, who.account.headers, 1, query="app:sshd")
    assert found[0]["_line"] == "Accepted publickey for ops"


async def test_an_account_without_syslog_gets_nothing_until_it_turns_it_on(
    syslog_client: AppClient,
) -> None:
    off = await make_ingestor(syslog_client)  # enable_syslog defaults to false
    on = await make_ingestor(syslog_client, enable_syslog=True)
    port = syslog_port(syslog_client)
    before = dropped("refused")
    # One connection, in order: once the later line is stored, the earlier was judged.
    await send(
        port,
        (rfc5424(off.key, "not wanted") + "\n").encode(),
        (rfc5424(on.key, "sentinel") + "\n").encode(),
    )
    await wait_for_lines(syslog_client, on.account.headers, 1)
    assert await wait_for_lines(syslog_client, off.account.headers, 0) == []
    # Counted once the batch is over, after its good line is committed (and so may be
    # found before the drop is counted).
    await eventually(
        lambda: dropped("refused") > before, timeout=WAIT_S, what="the refused line counted"
    )
    assert dropped("refused") - before == 1
    response = await syslog_client.patch(
        f"/v3/enterprise/account/{off.account_id}",
        json={"enable_syslog": True},
        headers=off.account.tenant.headers,
    )
    assert response.status_code == 200, response.text
    await send(port, (rfc5424(off.key, "now wanted") + "\n").encode())
    lines = await wait_for_lines(syslog_client, off.account.headers, 1)
    assert lines[0]["_line"] == "now wanted"


async def test_exclusion_rules_and_usage_apply(syslog_client: AppClient) -> None:
    who = await make_ingestor(syslog_client, enable_syslog=True)
    await add_rule(syslog_client, who, query="healthcheck", indexonly=False)
    await send(
        syslog_port(syslog_client),
        (rfc5424(who.key, "healthcheck ok") + "\n").encode(),
        (rfc5424(who.key, "real work") + "\n").encode(),
    )
    lines = await wait_for_lines(syslog_client, who.account.headers, 1)
    assert lines[0]["_line"] == "real work"
    rows = await usage_rows(syslog_client.database_url, who.account_id)
    assert sum(row.lines_stored for row in rows) == 1
    assert sum(row.lines_excluded for row in rows) == 1


async def test_parsing_templates_apply(syslog_client: AppClient) -> None:
    who = await make_ingestor(syslog_client, enable_syslog=True)
    made = await syslog_client.post(
        "/v1/config/parsing/templates",
        json={"name": "jobs", "pattern": r"took %{INT:took_ms:int}ms", "state": "active"},
        headers=who.account.headers,
    )
    assert made.status_code == 200, made.text
    await send(syslog_port(syslog_client), (rfc5424(who.key, "job took 12ms") + "\n").encode())
    lines = await wait_for_lines(syslog_client, who.account.headers, 1)
    assert lines[0]["_line"] == "job took 12ms"
    assert lines[0]["_meta"]["took_ms"] == 12


async def test_a_hostile_connection_costs_neither_its_good_lines_nor_other_connections(
    syslog_client: AppClient,
) -> None:
    who = await make_ingestor(syslog_client, enable_syslog=True)
    port = syslog_port(syslog_client)
    no_key_before = dropped("no_key")
    # A connection that starts a frame and stalls holds no one else up.
    _, stalled = await asyncio.open_connection("127.0.0.1", port)
    stalled.write(b"<14>1 - h a - - - never ends")
    await stalled.drain()
    try:
        # An over-long line (the limit is 4096 bytes here) is cut, and kept; a frame
        # claiming a gigabyte is cut too; the lines after them are whole.
        long_message = "x" * 10_000
        await send(
            port,
            (rfc5424(who.key, long_message) + "\n").encode(),
            b"999999999 " + rfc5424(who.key, "huge").encode() + b"y" * 5000,
        )
        await send(port, (rfc5424(who.key, "after") + "\n").encode())
        lines = await wait_for_lines(syslog_client, who.account.headers, 3)
    finally:
        stalled.close()
        await stalled.wait_closed()
    # Its unfinished last line is read when it closes (a line without a key here).
    await eventually(
        lambda: dropped("no_key") - no_key_before == 1,
        timeout=WAIT_S,
        what="the closed connection's last line dropped for its missing key",
    )
    texts = sorted(line["_line"] for line in lines)
    assert texts[0] == "after"
    assert texts[1].startswith("huge")
    assert len(texts[1]) < 4096
    assert texts[2].startswith("xxx")
    assert len(texts[2]) < 4096
    rows = await usage_rows(syslog_client.database_url, who.account_id)
    assert sum(row.lines_fallback for row in rows) == 2  # the two cut lines


async def test_haproxy_lines_without_a_host_name_are_taken_and_parsed(
    syslog_client: AppClient,
) -> None:
    """HAProxy sends RFC 3164 without a host name (``<134>Nov 22 08:00:01
    haproxy[1234]: ...``): the frame is syslog, the host is the peer's, and the
    HAProxy line is parsed into its fields."""
    who = await make_ingestor(syslog_client, enable_syslog=True)
    request = (
        "10.0.1.2:33317 [22/Nov/2025:08:00:01.655] http-in api/srv2 10/0/30/69/409 504 120 "
        '- - sH-- 1/1/1/1/0 0/0 "POST /pay HTTP/1.1"'
    )
    frame = f"<134>Nov 22 08:00:01 haproxy[1234]: {element(who.key)} {request}\n"
    await send(syslog_port(syslog_client), frame.encode())
    lines = await wait_for_lines(syslog_client, who.account.headers, 1)
    [line] = lines
    assert (line["_line"], line["_app"], line["_host"]) == (request, "haproxy", "127.0.0.1")
    assert line["level"] == "INFO"
    meta = line["_meta"]
    assert (meta["procid"], meta["facility"]) == ("1234", "local0")
    assert (meta["backend"], meta["status_code"], meta["time_total"]) == ("api", 504, 409)
    found = await wait_for_lines(
        syslog_client, who.account.headers, 1, query="status_code:>=500 app:haproxy"
    )
    assert found[0]["_line"] == request
