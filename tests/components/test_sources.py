"""Issue 9: the push sources through the real app (both backends): the http source's
decoding, the webhook's signature, Splunk HEC's event and raw endpoints."""

from __future__ import annotations

import gzip
import hashlib
import hmac

from tests.components.factories import wire_source
from tests.conftest import AppClient
from tests.gateway.factories import new_account, stored_lines
from tests.pipelines.factories import make_pipeline, make_route


async def test_http_source_decoding_bytes_and_metadata(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(
        client, account, "http", {"decoding": "bytes", "capture_metadata": True}
    )
    response = await client.post(
        wired.url + "?team=core",
        content=b'{"not":"parsed"}',
        headers={**wired.auth, "Content-Type": "application/json", "X-Custom": "yes"},
    )
    assert response.status_code == 200, response.text
    (line,) = await stored_lines(client.database_url, account.account_id)
    assert line.line == '{"not":"parsed"}'
    assert line.meta is not None
    metadata = line.meta["metadata"]
    assert metadata["query"] == {"team": "core"}
    assert metadata["headers"]["x-custom"] == "yes"
    assert "authorization" not in metadata["headers"]


async def test_http_source_metadata_never_holds_a_datadog_api_key(client: AppClient) -> None:
    """``DD-API-KEY`` is a credential for every source type (the Datadog Agent's): like
    ``Authorization``, it is not copied into captured metadata."""
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "http", {"capture_metadata": True})
    response = await client.post(
        wired.url, json={"line": "x"}, headers={"DD-API-KEY": wired.key, "X-Custom": "yes"}
    )
    assert response.status_code == 200, response.text
    (line,) = await stored_lines(client.database_url, account.account_id)
    assert line.meta is not None
    headers = line.meta["metadata"]["headers"]
    assert headers["x-custom"] == "yes"
    assert "dd-api-key" not in headers
    assert wired.key not in str(line.meta)


async def test_http_source_decoding_ndjson_refuses_an_array(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "http", {"decoding": "ndjson"})
    refused = await client.post(wired.url, content=b"[1]", headers=wired.auth)
    assert refused.status_code == 400
    assert refused.json()["status"] == "error"
    ok = await client.post(wired.url, content=b'{"line":"a"}\n{"line":"b"}', headers=wired.auth)
    assert ok.status_code == 200, ok.text
    assert [x.line for x in await stored_lines(client.database_url, account.account_id)] == [
        "a",
        "b",
    ]


async def test_http_source_refuses_an_unknown_decoding(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    pipeline_id = await make_pipeline(client, account)
    route_id = await make_route(client, account)
    response = await client.post(
        f"/v3/pipeline/{pipeline_id}/source",
        json={"type": "http", "gateway_route_id": route_id, "user_config": {"decoding": "xml"}},
        headers=account.headers,
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["instance_path"] == "/user_config/decoding"


KEY = "a-signing-key-of-32-characters!!"


async def test_webhook_needs_a_valid_signature_of_the_raw_body(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "webhook", {"signing_key": KEY})
    body = b'{"line":"signed"}'
    raw = gzip.compress(body)  # the signature covers the body as sent
    good = "sha256=" + hmac.new(KEY.encode(), raw, hashlib.sha256).hexdigest()
    wrong = "sha256=" + hmac.new(KEY.encode(), body, hashlib.sha256).hexdigest()
    headers = {**wired.auth, "Content-Encoding": "gzip"}
    missing = await client.post(wired.url, content=raw, headers=headers)
    assert missing.status_code == 401
    assert "Missing X-Hub-Signature" in missing.json()["error"]
    bad = await client.post(wired.url, content=raw, headers={**headers, "X-Hub-Signature": wrong})
    assert bad.status_code == 401
    assert await stored_lines(client.database_url, account.account_id) == []
    ok = await client.post(wired.url, content=raw, headers={**headers, "X-Hub-Signature": good})
    assert ok.status_code == 200, ok.text
    sha1 = "sha1=" + hmac.new(KEY.encode(), raw, hashlib.sha1).hexdigest()
    again = await client.post(wired.url, content=raw, headers={**headers, "X-Hub-Signature": sha1})
    assert again.status_code == 200, again.text
    assert [x.line for x in await stored_lines(client.database_url, account.account_id)] == [
        "signed",
        "signed",
    ]


async def test_webhook_without_a_signing_key_is_guarded_by_the_access_key(
    client: AppClient,
) -> None:
    """The platform's Terraform provider writes the webhook source with an empty
    ``user_config``: it is saved, and its route's access key still guards it."""
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "webhook", {})
    body = b'{"line":"unsigned"}'
    refused = await client.post(wired.url, content=body)
    assert refused.status_code == 401
    ok = await client.post(wired.url, content=body, headers=wired.auth)
    assert ok.status_code == 200, ok.text
    lines = await stored_lines(client.database_url, account.account_id)
    assert [x.line for x in lines] == ["unsigned"]


async def test_mezmo_destination_message_schemes_of_the_terraform_provider(
    client: AppClient,
) -> None:
    """``message``: explicit field selection builds the line from the chosen fields
    only; pass-through stores the event as it is."""
    account = await new_account(client, throttle=False)
    explicit = {
        "ack_enabled": True,
        "mezmo_host": "logs.logdna.com",
        "use_ingestion_key": False,
        "message": {
            "scheme": "Explicit field selection",
            "line": ".text",
            "app": ".service.name",
            "meta_field": ".extra",
            "timestamp_field": ".when",
        },
    }
    passing = {**explicit, "message": {"scheme": "Message pass-through"}}
    steps = [
        ("explicit", "destination", "mezmo", explicit, ["source"]),
        ("passing", "destination", "mezmo", passing, ["source"]),
    ]
    wired = await wire_source(client, account, "http", {}, steps)
    event = {
        "text": "chosen",
        "message": "not the line",
        "service": {"name": "api"},
        "extra": {"k": 1},
        "when": 1_700_000_000_000,
        "level": "error",
    }
    response = await client.post(wired.url, json=[event], headers=wired.auth)
    assert response.status_code == 200, response.text
    lines = await stored_lines(client.database_url, account.account_id)
    by_line = {line.line: line for line in lines}
    assert set(by_line) == {"chosen", "not the line"}
    chosen = by_line["chosen"]
    assert (chosen.app, chosen.level, chosen.ts) == ("api", None, 1_700_000_000_000)
    assert chosen.meta == {"k": 1}
    assert by_line["not the line"].level == "error"


async def test_splunk_hec_event_and_raw_endpoints(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "splunk-hec", {})
    hec = {"Authorization": f"Splunk {wired.key}"}
    event = await client.post(
        wired.url + "/services/collector/event",
        content=b'{"event":"hello","time":1735787045.678,"host":"h1"}{"event":{"line":"obj"}}',
        headers=hec,
    )
    assert event.status_code == 200, event.text
    assert event.json() == {"text": "Success", "code": 0}
    raw = await client.post(
        wired.url + "/services/collector/raw?host=h2&sourcetype=syslog",
        content=b"raw one\nraw two\n",
        headers=hec,
    )
    assert raw.status_code == 200, raw.text
    wrong = await client.post(
        wired.url + "/services/collector/event",
        content=b'{"event":"x"}',
        headers={"Authorization": "Splunk not-a-key"},
    )
    assert wrong.status_code == 401
    lines = await stored_lines(client.database_url, account.account_id)
    assert [(x.line, x.host) for x in lines] == [
        ("hello", "h1"),
        ("obj", "gateway"),
        ("raw one", "h2"),
        ("raw two", "h2"),
    ]
    assert lines[0].ts == 1_735_787_045_678


async def test_a_protocol_path_no_source_of_the_route_serves_is_404(client: AppClient) -> None:
    account = await new_account(client, throttle=False)
    wired = await wire_source(client, account, "http", {})
    response = await client.post(wired.url + "/v1/logs", content=b"{}", headers=wired.auth)
    assert response.status_code == 404
