"""Exclusion rules applied at ingestion: every part, combinations, inactive rules,
indexonly lines in live tail, usage, and rule changes taking effect at once."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import AppClient
from tests.ingest.factories import add_rule, ingest, make_ingestor, stored_lines, usage_rows

from tidegate.logs.exclusion import CompiledRule, RuleSet, Verdict, Wildcards
from tidegate.logs.filtering import LineFilter

LINES: list[dict[str, Any]] = [
    {"line": "GET /health 200", "app": "nginx", "level": "info", "meta": {"status": 200}},
    {"line": "GET /api 500", "app": "nginx", "level": "error", "meta": {"status": 500}},
    {"line": "user logged in", "app": "auth-service", "level": "info"},
    {"line": "debug noise", "app": "Worker-7", "level": "debug"},
    {"line": "no app here"},
]


async def _kept(client: AppClient, hostname: str = "web-1", **rule: Any) -> list[str]:
    who = await make_ingestor(client)
    await add_rule(client, who, **rule)
    response = await ingest(client, who, LINES, hostname=hostname)
    assert response.status_code == 200, response.text
    return [row.line for row in await stored_lines(client.database_url, who.account_id)]


ALL = [line["line"] for line in LINES]


@pytest.mark.parametrize(
    ("rule", "hostname", "excluded"),
    [
        ({"hosts": ["web-1"]}, "web-1", ALL),
        ({"hosts": ["WEB-*"]}, "web-1", ALL),
        ({"hosts": ["db-*"]}, "web-1", []),
        ({"hosts": ["*-1"]}, "web-1", ALL),
        ({"hosts": ["web"]}, "web-1", []),  # whole value, not a prefix
        ({"apps": ["nginx"]}, "h", ALL[:2]),
        ({"apps": ["worker-*", "auth*"]}, "h", [ALL[2], ALL[3]]),
        ({"apps": ["*"]}, "h", ALL[:4]),  # a line with no app has nothing to match
        ({"query": "level:error"}, "h", [ALL[1]]),
        ({"query": "status:>=200 -status:500"}, "h", [ALL[0]]),
        ({"query": "GET"}, "h", ALL[:2]),
        ({"query": '"logged in" OR noise'}, "h", [ALL[2], ALL[3]]),
        ({"apps": ["nginx"], "query": "500"}, "h", [ALL[1]]),
        ({"hosts": ["h"], "apps": ["nginx"], "query": "health"}, "h", [ALL[0]]),
        ({"hosts": ["other"], "apps": ["nginx"], "query": "health"}, "h", []),
    ],
)
async def test_a_line_is_excluded_when_it_matches_every_part(
    client: AppClient, rule: dict[str, Any], hostname: str, excluded: list[str]
) -> None:
    kept = await _kept(client, hostname=hostname, **rule)
    assert kept == [line for line in ALL if line not in excluded]


async def test_inactive_rules_are_ignored(client: AppClient) -> None:
    assert await _kept(client, apps=["nginx"], active=False) == ALL


async def test_excluded_lines_count_as_excluded_not_stored(client: AppClient) -> None:
    who = await make_ingestor(client)
    await add_rule(client, who, apps=["nginx"])
    await add_rule(client, who, query="noise", indexonly=False)
    await ingest(client, who, LINES)
    (usage,) = await usage_rows(client.database_url, who.account_id)
    excluded = [LINES[0]["line"], LINES[1]["line"], LINES[3]["line"]]
    assert (usage.lines_stored, usage.lines_excluded) == (2, 3)
    assert usage.bytes_excluded == sum(len(text) for text in excluded)
    assert usage.bytes_stored == len(LINES[2]["line"]) + len(LINES[4]["line"])


async def test_rule_changes_apply_to_the_next_request(client: AppClient) -> None:
    who = await make_ingestor(client)
    rules = "/v1/config/ingestion/exclusions"
    rule = await add_rule(client, who, apps=["nginx"])

    async def kept_now(text: str) -> bool:
        await ingest(client, who, [{"line": text, "app": "nginx"}])
        rows = await stored_lines(client.database_url, who.account_id)
        return text in [row.line for row in rows]

    assert not await kept_now("1 excluded")
    patch = await client.patch(
        f"{rules}/{rule['id']}", json={"apps": ["other"]}, headers=who.account.headers
    )
    assert patch.status_code == 200
    assert await kept_now("2 kept after the change")
    await client.patch(
        f"{rules}/{rule['id']}", json={"apps": ["nginx"]}, headers=who.account.headers
    )
    assert not await kept_now("3 excluded again")
    await client.patch(f"{rules}/{rule['id']}", json={"active": False}, headers=who.account.headers)
    assert await kept_now("4 kept, rule inactive")
    await client.patch(f"{rules}/{rule['id']}", json={"active": True}, headers=who.account.headers)
    assert not await kept_now("5 excluded, active again")
    await client.delete(f"{rules}/{rule['id']}", headers=who.account.headers)
    assert await kept_now("6 kept, rule deleted")


async def test_live_tail_gets_stored_and_indexonly_lines_only(client: AppClient) -> None:
    who = await make_ingestor(client)
    await add_rule(client, who, apps=["nginx"], indexonly=True)
    await add_rule(client, who, query="noise", indexonly=False)
    # A line matched by both kinds of rule never reaches live tail.
    await add_rule(client, who, query="500", indexonly=True)
    await add_rule(client, who, query="api", indexonly=False)
    tail = client._transport.app.state.tidegate.tail  # type: ignore[attr-defined]
    async with tail.subscribe(who.account_id, LineFilter()) as subscription:
        response = await ingest(client, who, LINES)
        assert response.status_code == 200
        batch = await subscription.next_batch(timeout=30)
    seen = {item.line: item.indexonly for item in batch.lines}
    assert seen == {
        "GET /health 200": True,
        "user logged in": False,
        "no app here": False,
    }


def test_wildcards_are_whole_value_and_case_insensitive() -> None:
    pattern = Wildcards(["api-*", "*.internal", "exact", "a*b*c", "dot.s"])
    for value in ("api-1", "API-", "db.INTERNAL", "Exact", "abc", "a--b--c"):
        assert pattern.matches(value), value
    for value in ("xapi-1", "exactly", "ab", "dots", "internal"):
        assert not pattern.matches(value), value


def test_rule_set_judges_drop_before_indexonly() -> None:
    rules = RuleSet(
        [
            CompiledRule.build(rule_id="a", indexonly=True, hosts=None, apps=["x"], query=None),
            CompiledRule.build(rule_id="b", indexonly=False, hosts=None, apps=None, query="boom"),
        ]
    )

    def verdict(line: str, app: str | None) -> Verdict:
        return rules.verdict(line=line, host="h", app=app, level=None, file=None, meta=None)

    assert verdict("quiet", "x") is Verdict.INDEXONLY
    assert verdict("boom", "x") is Verdict.DROP
    assert verdict("boom", None) is Verdict.DROP
    assert verdict("quiet", "y") is Verdict.KEEP
