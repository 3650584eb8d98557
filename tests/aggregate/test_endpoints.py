"""GET /v1/aggregate on both backends: the counts are what the Python matcher selects
among the stored lines, for exact and inexact translations; buckets, top values,
tenancy, credentials, parameters and the cap on confirmed candidates."""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.aggregate.helpers import HOUR_MS, HOUR_START, aggregate, expected
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, insert_lines
from tests.factories import AccountCtx, insert_key, make_account, make_tenant

from tidegate.aggregate import service
from tidegate.aggregate.schemas import Aggregation
from tidegate.logs import filter_plan
from tidegate.logs.store import NewLine

WORDS = [
    "timeout", "Timed", "disk", "full", "error", "user_login", "GET", "/api/v1/orders",
    "ip=192.168.0.1", "Straße", "xtimeout", "ok", "retrying",
]  # fmt: skip
METAS: list[dict[str, Any] | None] = [
    None,
    {"status": 500, "user": {"id": 7}},
    {"status": 200, "user": {"id": 70}},
    {"msg": "disk full", "status": 404},
    {"region": "EU-west"},
]
QUERIES = [
    None,
    "level:error app:web",
    "level:[warn,error] -app:api",
    "host:web-1",
    "app:==web",
    "-level:*",
    "timeout",
    "time",
    '"disk full"',
    "straße",
    "192.168",
    "/api",
    "status:>=500",
    "user.id:7",
    "msg:disk",
    "region:eu",
    "timeout OR app:api",
    "-timeout",
    "-timeout app:*",
    "(disk -full) OR level:warn",
]


async def _account(client: AppClient) -> AccountCtx:
    return await make_account(client, await make_tenant(client.database_url))


def _varied_lines(count: int, *, seed: int, start_ms: int) -> list[NewLine]:
    rng = random.Random(seed)
    return [
        NewLine(
            line=" ".join(rng.choices(WORDS, k=rng.randint(1, 5))),
            # Whole seconds and repeats, so some lines share their time.
            ts=start_ms + rng.randrange(0, 2 * HOUR_MS, 1000) + rng.choice([0, 0, 999]),
            host=rng.choice(["web-1", "WEB-1", "web-10", "db-2"]),
            app=rng.choice(["web", "Web", "api", "worker", None]),
            level=rng.choice(["ERROR", "error", "info", "warn", None]),
            meta=rng.choice(METAS),
        )
        for _ in range(count)
    ]


async def test_counts_are_what_the_matcher_selects(
    client: AppClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = await _account(client)
    lines = _varied_lines(400, seed=1, start_ms=HOUR_START - HOUR_MS // 2)
    await insert_lines(client.database_url, account.account_id, lines)
    # The range leaves out the lines of its first and last half hour.
    window = {"from_ms": HOUR_START, "to_ms": HOUR_START + HOUR_MS - 1}
    params = {"from": HOUR_START, "to": HOUR_START + HOUR_MS - 1}
    cases: list[dict[str, str | None]] = [{"query": query} for query in QUERIES]
    cases += [
        {"hosts": "WEB-1,db-2"},
        {"levels": "error", "apps": "web", "query": "timeout"},
        {"apps": "worker", "query": "-status:500"},
    ]
    for case in cases:
        response = await aggregate(client, account.headers, **params, **case)
        assert response.status_code == 200, (case, response.text)
        assert response.json() == expected(lines, **window, **case), case

    # The same when a literal is too common for SQLite's index (every lookup dropped).
    monkeypatch.setattr(filter_plan, "COMMON_FTS_ROWS", 0)
    for case in cases[6:12]:
        response = await aggregate(client, account.headers, **params, **case)
        assert response.json() == expected(lines, **window, **case), case


async def test_histogram_buckets_zeros_and_alignment(client: AppClient) -> None:
    account = await _account(client)
    lines = [
        NewLine(line="a", ts=HOUR_START - 1, host="h"),  # before the range
        NewLine(line="b", ts=HOUR_START + 40_000, host="h"),
        NewLine(line="c", ts=HOUR_START + 59_999, host="h"),
        NewLine(line="d", ts=HOUR_START + 5 * 60_000, host="h"),
        NewLine(line="e", ts=HOUR_START + HOUR_MS - 1, host="h"),
        NewLine(line="f", ts=HOUR_START + HOUR_MS, host="h"),  # after it
    ]
    await insert_lines(client.database_url, account.account_id, lines)
    body = (await aggregate(client, account.headers, **{"from": HOUR_START + 30_000})).json()
    # From 30 s past the hour to its end touches 60 minutes: one-minute buckets, the
    # first starting before `from` (only lines within the range are counted).
    assert body["bucket_ms"] == 60_000
    histogram = body["histogram"]
    assert len(histogram) == 60
    assert histogram[0] == {"ts": HOUR_START, "count": 2}
    assert histogram[5] == {"ts": HOUR_START + 5 * 60_000, "count": 1}
    assert histogram[59] == {"ts": HOUR_START + 59 * 60_000, "count": 1}
    assert sum(bucket["count"] for bucket in histogram) == body["total"] == 4
    assert [bucket["ts"] for bucket in histogram] == [
        HOUR_START + index * 60_000 for index in range(60)
    ]
    # Fewer buckets asked for: wider ones.
    coarse = (await aggregate(client, account.headers, buckets=12)).json()
    assert coarse["bucket_ms"] == 5 * 60_000
    assert [bucket["count"] for bucket in coarse["histogram"]][:2] == [2, 1]
    # Seconds for `from` and `to`: `to` covers its whole second.
    seconds = (
        await aggregate(
            client, account.headers, **{"from": HOUR_START // 1000, "to": HOUR_START // 1000}
        )
    ).json()
    assert seconds["from"] == HOUR_START
    assert seconds["to"] == HOUR_START + 999
    assert seconds["bucket_ms"] == 1000
    assert seconds["histogram"] == [{"ts": HOUR_START, "count": 0}]


async def test_top_values_order_ties_and_missing_fields(client: AppClient) -> None:
    account = await _account(client)
    spec = [
        ("Web-1", "api", "INFO", 3),
        ("web-1", None, "info", 2),  # the same host and level, folded
        ("db-2", "web", None, 5),
        ("cache", "web", "WARN", 2),
        ("b-host", "zz", "ERROR", 2),
        ("a-host", "aa", "error", 1),
    ]
    lines = [
        NewLine(line="x", ts=HOUR_START + index, host=host, app=app, level=level)
        for host, app, level, times in spec
        for index in range(times)
    ]
    await insert_lines(client.database_url, account.account_id, lines)
    body = (await aggregate(client, account.headers, **{"from": HOUR_START})).json()
    assert body["total"] == 15
    assert body["top"] == {
        # Ties in code point order of the value.
        "host": [
            {"value": "db-2", "count": 5},
            {"value": "web-1", "count": 5},
            {"value": "b-host", "count": 2},
            {"value": "cache", "count": 2},
            {"value": "a-host", "count": 1},
        ],
        "app": [
            {"value": "web", "count": 7},
            {"value": "api", "count": 3},
            {"value": "zz", "count": 2},
            {"value": "aa", "count": 1},
        ],
        "level": [
            {"value": "info", "count": 5},
            {"value": "error", "count": 3},
            {"value": "warn", "count": 2},
        ],
    }
    two = (await aggregate(client, account.headers, top=2, **{"from": HOUR_START})).json()
    assert two["top"]["host"] == [{"value": "db-2", "count": 5}, {"value": "web-1", "count": 5}]
    # top=0: the histogram alone.
    none = (await aggregate(client, account.headers, top=0, **{"from": HOUR_START})).json()
    assert none["top"] == {"host": [], "app": [], "level": []}
    assert none["histogram"] == body["histogram"]
    # The same order when the matcher confirms (a bare term is never exact in SQL).
    confirmed = (
        await aggregate(client, account.headers, top=2, query="x", **{"from": HOUR_START})
    ).json()
    assert confirmed["top"] == two["top"]
    assert confirmed["total"] == 15


async def test_an_empty_account_has_every_bucket_at_zero(client: AppClient) -> None:
    account = await _account(client)
    response = await aggregate(client, account.headers, **{"from": HOUR_START, "buckets": 6})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["bucket_ms"] == 10 * 60_000
    assert body["histogram"] == [
        {"ts": HOUR_START + index * 600_000, "count": 0} for index in range(6)
    ]
    assert body["total"] == 0
    assert body["top"] == {"host": [], "app": [], "level": []}
    assert body["exact"] is True
    assert body["counted_from"] == HOUR_START


async def test_another_accounts_lines_are_never_counted(client: AppClient) -> None:
    tenant = await make_tenant(client.database_url)
    mine = await make_account(client, tenant)
    theirs = await make_account(client, tenant)
    stranger = await _account(client)
    mine_lines = _varied_lines(20, seed=2, start_ms=HOUR_START)
    for other in (theirs, stranger):
        await insert_lines(
            client.database_url, other.account_id, _varied_lines(50, seed=3, start_ms=HOUR_START)
        )
    await insert_lines(client.database_url, mine.account_id, mine_lines)
    window = {"from_ms": HOUR_START, "to_ms": HOUR_START + 2 * HOUR_MS}
    for query in (None, "level:error", "timeout"):
        body = (
            await aggregate(
                client, mine.headers, query=query, **{"from": HOUR_START, "to": window["to_ms"]}
            )
        ).json()
        assert body == expected(mine_lines, **window, query=query), query


async def test_credentials_as_for_export(client: AppClient) -> None:
    account = await _account(client)
    await insert_lines(
        client.database_url, account.account_id, _varied_lines(5, seed=4, start_ms=BASE_MS)
    )
    key = await insert_key(client.database_url, kind="service", account_id=account.account_id)
    assert (await aggregate(client, {"Authorization": f"Token {key}"})).status_code == 200
    assert (await aggregate(client, {})).status_code == 401
    ingestion = await insert_key(
        client.database_url, kind="ingestion", account_id=account.account_id
    )
    assert (await aggregate(client, {"Authorization": f"Token {ingestion}"})).status_code == 401
    # An enterprise key must say which account; it cannot name another enterprise's.
    assert (await aggregate(client, account.tenant.headers)).status_code in (400, 403)
    outsider = await make_tenant(client.database_url)
    assert (await aggregate(client, outsider.as_account(account.account_id))).status_code == 403


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"from": None}, "from: required"),
        ({"to": "soon"}, "to: must be epoch seconds or milliseconds, or an ISO 8601 time"),
        ({"from": -1}, "from: must not be negative"),
        ({"from": BASE_MS + 1, "to": BASE_MS}, "from: must not be after to"),
        ({"to": 10**18}, "to: out of range"),
        ({"buckets": 0}, "buckets: must be an integer from 1 to 500"),
        ({"buckets": 501}, "buckets: must be an integer from 1 to 500"),
        ({"buckets": "many"}, "buckets: must be an integer from 1 to 500"),
        ({"top": -1}, "top: must be an integer from 0 to 100"),
        ({"top": 101}, "top: must be an integer from 0 to 100"),
        ({"query": "app:(a OR"}, "query: "),
        ({"query": "a\x00b"}, "query: must not contain NUL"),
        ({"levels": ",".join(f"l{i}" for i in range(101))}, "levels: at most 100 values"),
    ],
)
async def test_bad_parameters_are_400_in_the_legacy_shape(
    client: AppClient, params: dict[str, Any], fragment: str
) -> None:
    account = await _account(client)
    response = await aggregate(client, account.headers, **params)
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error", "code", "status"}
    assert body["status"] == "error"
    assert fragment in body["error"]


# PostgreSQL reads the candidates in chunks (the first of ``FIRST_CHUNK`` rows, then
# doubling): with 2, chunks end between lines of their own times; with 10, the first
# ends between the two lines at 20 s.
@pytest.mark.parametrize("first_chunk", [service.FIRST_CHUNK, 2, 10])
async def test_past_the_cap_the_newest_lines_are_counted(
    client: AppClient, monkeypatch: pytest.MonkeyPatch, first_chunk: int
) -> None:
    monkeypatch.setattr(service, "FIRST_CHUNK", first_chunk)
    monkeypatch.setattr(service, "MAX_CANDIDATES", 10)
    account = await _account(client)
    # Candidates of "needle" on both backends: every line holding the text. Those with
    # "xneedle" are turned down by the matcher (not at a word start).
    lines = [
        NewLine(
            line=f"{'x' if index % 3 == 0 else ''}needle {index}",
            ts=HOUR_START + index * 1000,
            host="h",
        )
        for index in range(30)
    ]
    # The 10th and 11th newest candidates share a time: the cut falls inside it.
    lines.append(NewLine(line="needle again", ts=HOUR_START + 20_000, host="h"))
    lines += [NewLine(line=f"hay {index}", ts=HOUR_START + index, host="h") for index in range(50)]
    await insert_lines(client.database_url, account.account_id, lines)
    window = {"from_ms": HOUR_START, "to_ms": HOUR_START + HOUR_MS - 1}
    body = (await aggregate(client, account.headers, query="needle", **{"from": HOUR_START})).json()
    # Newest first, candidates are at 29 s, 28 s, ..., 21 s (9), then two at 20 s:
    # the walk stops inside 20 s, so the counts are those of 20.001 s on.
    assert body["exact"] is False
    assert body["counted_from"] == HOUR_START + 20_001
    assert body == expected(lines, **window, counted_from=HOUR_START + 20_001, query="needle")
    # Exactly at the cap: everything counted.
    monkeypatch.setattr(service, "MAX_CANDIDATES", 31)
    whole = (
        await aggregate(client, account.headers, query="needle", **{"from": HOUR_START})
    ).json()
    assert whole == expected(lines, **window, query="needle")
    # An exact filter is counted by the database whatever the cap.
    monkeypatch.setattr(service, "MAX_CANDIDATES", 1)
    exact = (await aggregate(client, account.headers, hosts="h", **{"from": HOUR_START})).json()
    assert exact == expected(lines, **window, hosts="h")


def test_the_documented_example_is_an_answer() -> None:
    example = Aggregation.model_config["json_schema_extra"]["examples"][0]  # type: ignore[index]
    answer = Aggregation.model_validate(example)
    assert answer.model_dump(by_alias=True, exclude_none=True) == example


async def test_the_answer_is_in_the_openapi_document(client: AppClient) -> None:
    document = (await client.get("/openapi.json")).json()
    operation = document["paths"]["/v1/aggregate"]["get"]
    reference = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    schema = document["components"]["schemas"][reference.rsplit("/", 1)[-1]]
    assert set(schema["required"]) == {
        "from", "to", "bucket_ms", "total", "histogram", "top", "exact", "counted_from"
    }  # fmt: skip
    assert schema["examples"]
    assert {parameter["name"] for parameter in operation["parameters"]} == {
        "from", "to", "hosts", "apps", "levels", "query", "buckets", "top", "fields"
    }  # fmt: skip
