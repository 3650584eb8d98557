"""Issue 20: the provider's `kinesis-firehose`, `logstash`, `fluent` and `mezmo-agent`
sources through the real app (both backends), each with its sender's request shape."""

from __future__ import annotations

import base64
import gzip
import json

from tests.components.factories import wire_source
from tests.conftest import AppClient
from tests.gateway.factories import new_account, stored_lines


def _firehose_request(records: list[bytes], request_id: str) -> bytes:
    # Firehose's HTTP endpoint delivery request, as AWS documents it.
    return json.dumps(
        {
            "requestId": request_id,
            "timestamp": 1578090901599,
            "records": [{"data": base64.b64encode(data).decode()} for data in records],
        }
    ).encode()


async def test_kinesis_firehose_delivery_request(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "kinesis-firehose", {"format": "json"})
    request_id = "ed4acda5-034f-9f42-bba1-f29aea6d7d8f"
    headers = {
        "X-Amz-Firehose-Request-Id": request_id,
        "X-Amz-Firehose-Access-Key": wired.key,
        "X-Amz-Firehose-Protocol-Version": "1.0",
        "Content-Type": "application/json",
        "User-Agent": "Amazon Kinesis Data Firehose Agent/1.0",
    }
    body = _firehose_request(
        [b'{"line":"from firehose","level":"warn"}', b"plain text"], request_id
    )
    wrong = await client.post(
        wired.url, content=body, headers={**headers, "X-Amz-Firehose-Access-Key": "nope"}
    )
    assert wrong.status_code == 401
    response = await client.post(wired.url, content=body, headers=headers)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["requestId"] == request_id
    assert isinstance(answer["timestamp"], int)
    lines = await stored_lines(client.database_url, account.account_id)
    assert [line.line for line in lines] == ["from firehose", "plain text"]
    assert lines[0].level == "warn"


async def test_kinesis_firehose_text_and_bad_records(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "kinesis-firehose", {"format": "text"})
    headers = {"X-Amz-Firehose-Access-Key": wired.key}
    bad = await client.post(
        wired.url,
        content=b'{"requestId":"r","timestamp":1,"records":[{"data":"%%%"}]}',
        headers=headers,
    )
    assert bad.status_code == 400
    assert "record 1" in bad.json()["error"]
    not_firehose = await client.post(wired.url, content=b"[1,2]", headers=headers)
    assert not_firehose.status_code == 400
    body = _firehose_request([b'{"line":"kept as text"}'], "r2")
    ok = await client.post(wired.url, content=body, headers=headers)
    assert ok.status_code == 200, ok.text
    (line,) = await stored_lines(client.database_url, account.account_id)
    assert line.line == '{"line":"kept as text"}'


async def test_logstash_http_output_json_batch_and_text(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "logstash", {"format": "json"})
    # Logstash's http output, format => "json_batch".
    batch = [{"line": "one", "host": "ls1"}, {"line": "two", "host": "ls1"}]
    response = await client.post(
        wired.url,
        content=json.dumps(batch).encode(),
        headers={**wired.auth, "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    text_account = await new_account(client, throttle=False)
    text = await wire_source(client, text_account, "logstash", {"format": "text"})
    # format => "message": the message as the body.
    sent = await client.post(text.url, content=b"a plain message", headers=text.auth)
    assert sent.status_code == 200, sent.text
    assert [x.line for x in await stored_lines(client.database_url, account.account_id)] == [
        "one",
        "two",
    ]
    (line,) = await stored_lines(client.database_url, text_account.account_id)
    assert line.line == "a plain message"


async def test_fluent_bit_http_output_json_and_json_lines(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "fluent", {"decoding": "json"})
    # Fluent Bit's http output, Format json: an array of records with the date key.
    records = [{"date": 1700000000.5, "line": "fb one"}, {"date": 1700000001.0, "line": "fb two"}]
    ok = await client.post(
        wired.url,
        content=gzip.compress(json.dumps(records).encode()),
        headers={**wired.auth, "Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert ok.status_code == 200, ok.text
    lines_account = await new_account(client, throttle=False)
    lines = await wire_source(client, lines_account, "fluent", {"decoding": "ndjson"})
    body = b'{"date":1700000002.0,"line":"fb three"}\n{"date":1700000003.0,"line":"fb four"}\n'
    sent = await client.post(lines.url, content=body, headers=lines.auth)
    assert sent.status_code == 200, sent.text
    assert [x.line for x in await stored_lines(client.database_url, account.account_id)] == [
        "fb one",
        "fb two",
    ]
    assert [x.line for x in await stored_lines(client.database_url, lines_account.account_id)] == [
        "fb three",
        "fb four",
    ]


async def test_mezmo_agent_request(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "mezmo-agent", {})
    # logdna-agent-v2's request: gzip JSON lines, epoch seconds, apiKey header.
    body = {
        "lines": [
            {
                "line": "from the agent",
                "timestamp": 1700000000,
                "file": "/var/log/nginx/access.log",
                "level": "info",
                "label": {"team": "core"},
            }
        ]
    }
    response = await client.post(
        wired.url + "?hostname=node-1&ip=10.0.0.7&now=1700000000&tags=a,b",
        content=gzip.compress(json.dumps(body).encode()),
        headers={
            "apiKey": wired.key,
            "Content-Encoding": "gzip",
            "Content-Type": "application/json",
            "Accept-Charset": "utf8",
            "User-Agent": "logdna-agent/3.9.0 (linux)",
        },
    )
    assert response.status_code == 200, response.text
    (line,) = await stored_lines(client.database_url, account.account_id)
    assert line.line == "from the agent"
    assert line.app == "access.log"
    assert line.host == "node-1"
    assert line.ts == 1_700_000_000_000
    no_lines = await client.post(
        wired.url, content=b'{"lines":[{}]}', headers={"apiKey": wired.key}
    )
    assert no_lines.status_code == 400
