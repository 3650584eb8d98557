"""The protocol-exact receivers refuse what their service refuses: a destination whose
wire format went wrong fails its tests there, not only on a byte comparison. Each case
is one documented rule of the API, broken once."""

from __future__ import annotations

import base64
import gzip
from typing import Any

import orjson
import pytest
from tests.components.log_store_apis import ElasticsearchBulk, LokiPush, index_name_problem
from tests.components.receiver import Request
from tests.components.vendor_apis import honeycomb, new_relic_logs

BASIC = "Basic " + base64.b64encode(b"u:p").decode()


def _request(
    target: str, body: bytes, content_type: str, *headers: tuple[str, str], method: str = "POST"
) -> Request:
    return Request(method, target, [("Content-Type", content_type), *headers], body)


# ---- Elasticsearch's bulk API -----------------------------------------------------

GOOD_BULK = b'{"index":{"_index":"logs-2025.01.02"}}\n{"message":"a"}\n'


def test_bulk_takes_ndjson_and_answers_per_item() -> None:
    api = ElasticsearchBulk(user="u", password="p")
    status, answer = api.respond(
        _request("/_bulk", gzip.compress(GOOD_BULK), "application/x-ndjson",
                 ("Authorization", BASIC), ("Content-Encoding", "gzip"))
    )  # fmt: skip
    assert status == 200
    document = orjson.loads(answer)
    assert document["errors"] is False
    assert document["items"][0]["index"]["status"] == 201
    assert api.indices == {"logs-2025.01.02": [{"message": "a"}]}


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (GOOD_BULK[:-1], "application/x-ndjson", 400),  # not ended by a newline
        (b"", "application/x-ndjson", 400),
        (GOOD_BULK, "text/plain", 406),
        (
            b'{"index":{"_index":"x"}}\n{"message":"a"}\n'.replace(b"index", b"insert", 1),
            "application/x-ndjson",
            400,
        ),
        (b'{"index":{"_index":"x","surprise":1}}\n{}\n', "application/x-ndjson", 400),
        (b'{"index":{}}\n{"message":"a"}\n', "application/x-ndjson", 400),  # no index
        (b'{"index":{"_index":"x"}}\n', "application/x-ndjson", 400),  # no source line
        (b'[{"_index":"x"}]\n{}\n', "application/x-ndjson", 400),
    ],
)
def test_bulk_refuses_a_malformed_request(body: bytes, content_type: str, status: int) -> None:
    api = ElasticsearchBulk()
    assert api.respond(_request("/_bulk", body, content_type))[0] == status
    assert api.indices == {}


@pytest.mark.parametrize(
    "line",
    [
        b'{"index":{"_index":"Logs"}}\n{"a":1}\n',  # uppercase
        b'{"index":{"_index":"_logs"}}\n{"a":1}\n',
        b'{"index":{"_index":"two words"}}\n{"a":1}\n',
        b'{"index":{"_index":"a/b"}}\n{"a":1}\n',
        b'{"index":{"_index":"x"}}\n"just a string"\n',  # the source is not an object
        b'{"index":{"_index":"x"}}\n{"_id":"7","a":1}\n',  # a metadata field in the source
        b'{"index":{"_index":"x"}}\nnot json\n',
    ],
)
def test_bulk_refuses_a_document_with_errors_true(line: bytes) -> None:
    api = ElasticsearchBulk()
    status, answer = api.respond(_request("/_bulk", line, "application/x-ndjson"))
    document = orjson.loads(answer)
    assert (status, document["errors"]) == (200, True)
    assert document["items"][0]["index"]["status"] == 400
    assert api.indices == {}


def test_bulk_checks_credentials_and_parameters() -> None:
    api = ElasticsearchBulk(user="u", password="p")
    assert api.respond(_request("/_bulk", GOOD_BULK, "application/x-ndjson"))[0] == 401
    wrong = ("Authorization", "Basic " + base64.b64encode(b"u:x").decode())
    assert api.respond(_request("/_bulk", GOOD_BULK, "application/x-ndjson", wrong))[0] == 401
    right = ("Authorization", BASIC)
    assert (
        api.respond(_request("/_bulk?pipline=x", GOOD_BULK, "application/x-ndjson", right))[0]
        == 400
    )
    assert api.respond(_request("/_bulkx", GOOD_BULK, "application/x-ndjson", right))[0] == 405
    assert index_name_problem("a" * 256) == "index name is too long"


# ---- Loki's push API --------------------------------------------------------------


def _push(streams: Any) -> bytes:
    return orjson.dumps({"streams": streams})


GOOD_PUSH = _push([{"stream": {"app": "api"}, "values": [["1735787045678000000", "line"]]}])


def test_push_takes_json_and_answers_204() -> None:
    api = LokiPush(tenant="t")
    request = _request(
        "/loki/api/v1/push", gzip.compress(GOOD_PUSH), "application/json",
        ("X-Scope-OrgID", "t"), ("Content-Encoding", "gzip"),
    )  # fmt: skip
    assert api.respond(request) == (204, b"")
    assert api.streams == {(("app", "api"),): [(1_735_787_045_678_000_000, "line")]}


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (GOOD_PUSH, "application/x-protobuf", 415),  # not JSON: protobuf + snappy
        (b"{", "application/json", 400),
        (orjson.dumps([{"stream": {"app": "api"}}]), "application/json", 400),
        (_push([{"stream": {}, "values": [["1", "x"]]}]), "application/json", 400),
        (_push([{"stream": {"app": ""}, "values": [["1", "x"]]}]), "application/json", 400),
        (_push([{"stream": {"bad-name": "x"}, "values": [["1", "x"]]}]), "application/json", 400),
        (_push([{"stream": {"n": 1}, "values": [["1", "x"]]}]), "application/json", 400),
        (
            _push([{"stream": {"a": "b"}, "values": [[1735787045678000000, "x"]]}]),
            "application/json",
            400,
        ),
        (_push([{"stream": {"a": "b"}, "values": [["1.5", "x"]]}]), "application/json", 400),
        (_push([{"stream": {"a": "b"}, "values": [["1", {"m": 1}]]}]), "application/json", 400),
        (_push([{"stream": {"a": "b"}, "values": [["1"]]}]), "application/json", 400),
        (
            _push([{"stream": {"a": "b"}, "values": [["1", "x", {"k": 1}]]}]),
            "application/json",
            400,
        ),
        (
            _push([{"stream": {f"l{n}": "v" for n in range(16)}, "values": [["1", "x"]]}]),
            "application/json",
            400,
        ),
        (_push([{"stream": {"a": "v" * 2049}, "values": [["1", "x"]]}]), "application/json", 400),
    ],
)
def test_push_refuses_a_malformed_request(body: bytes, content_type: str, status: int) -> None:
    api = LokiPush()
    assert api.respond(_request("/loki/api/v1/push", body, content_type))[0] == status
    assert api.streams == {}


def test_push_checks_the_tenant_path_and_credentials() -> None:
    api = LokiPush(tenant="t", user="u", password="p")
    right = (("X-Scope-OrgID", "t"), ("Authorization", BASIC))
    assert (
        api.respond(_request("/loki/api/v1/push", GOOD_PUSH, "application/json", *right))[0] == 204
    )
    assert (
        api.respond(_request("/loki/api/v1/push", GOOD_PUSH, "application/json", right[1]))[0]
        == 401
    )
    assert (
        api.respond(_request("/loki/api/v1/push", GOOD_PUSH, "application/json", right[0]))[0]
        == 401
    )
    assert api.respond(_request("/api/prom/pushx", GOOD_PUSH, "application/json", *right))[0] == 404


# ---- New Relic's Log API and Honeycomb's Batch API --------------------------------


def _gzip_json(document: Any) -> bytes:
    return gzip.compress(orjson.dumps(document))


def _new_relic(body: bytes) -> int:
    api = new_relic_logs("k")
    request = _request(
        "/log/v1", body, "application/json", ("X-License-Key", "k"), ("Content-Encoding", "gzip")
    )
    return api.respond(request)[0]


def test_new_relic_logs_takes_the_detailed_json() -> None:
    document = [
        {
            "common": {"attributes": {"service": "api"}},
            "logs": [{"timestamp": 1_735_787_045_678, "message": "m", "attributes": {"a": 1}}],
        }
    ]
    assert _new_relic(_gzip_json(document)) == 202


@pytest.mark.parametrize(
    "document",
    [
        {"logs": [{"message": "not in an array"}]},
        [{"logs": {"message": "logs is not an array"}}],
        [{"logs": [{"message": "m", "timestamp": "2025-01-02T03:04:05Z"}]}],
        [{"logs": [{"message": "m", "timestamp": 1.5}]}],
        [{"logs": [{"message": {"not": "a string"}}]}],
        [{"logs": [{"message": "m", "attributes": ["a"]}]}],
        [{"logs": [{"message": "m", "attributes": {f"a{n}": n for n in range(256)}}]}],
        [{"logs": [{"message": "m"}], "extra": 1}],
        [{"common": ["a"], "logs": [{"message": "m"}]}],
    ],
)
def test_new_relic_logs_refuses_a_malformed_body(document: Any) -> None:
    assert _new_relic(_gzip_json(document)) == 400


def test_new_relic_logs_refuses_a_payload_over_1_mb_as_sent_and_bad_utf8() -> None:
    noise = bytes(range(256)) * 4_000  # does not compress below 1 MB
    assert _new_relic(gzip.compress(noise)) == 413
    assert _new_relic(gzip.compress(b'[{"logs":[{"message":"\xff"}]}]')) == 400


def _honeycomb(document: Any) -> int:
    api = honeycomb("k", "ds")
    request = _request(
        "/1/batch/ds", _gzip_json(document), "application/json",
        ("X-Honeycomb-Team", "k"), ("Content-Encoding", "gzip"),
    )  # fmt: skip
    return api.respond(request)[0]


def test_honeycomb_takes_data_time_and_samplerate() -> None:
    document = [
        {"data": {"a": 1}, "time": "2025-01-02T03:04:05.678Z", "samplerate": 10},
        {"data": {"b": 2}, "time": "2025-01-02T04:04:05+01:00"},
        {"data": {}},
    ]
    assert _honeycomb(document) == 200


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"data": {"a": 1}},
        [{"a": 1}],  # no data
        [{"data": "text"}],
        [{"data": {"a": 1}, "time": 1_735_787_045_678}],
        [{"data": {"a": 1}, "time": "2025-01-02 03:04:05"}],
        [{"data": {"a": 1}, "samplerate": 0}],
        [{"data": {"a": 1}, "samplerate": "10"}],
    ],
)
def test_honeycomb_refuses_a_malformed_batch(document: Any) -> None:
    assert _honeycomb(document) == 400
