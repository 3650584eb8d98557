"""The management reads served by the plain handler (api/plain_routes.py) answer exactly
what FastAPI's own handler answers for the same request: status, headers and body, for
every such route, with no credential, a wrong one, an enterprise key with and without
an account, a member's browser session (reads the member may make and reads it may
not), existing, unknown and invalid ids, and valid and invalid query parameters. On
SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.api.test_raw_reads import Seeded, seed
from tests.conftest import AppClient
from tests.users.factories import add_person, sign_in_person

from tidegate.api.plain_routes import PlainHandler, route_contexts

# The management reads that must take the plain handler.
EXPECTED = {
    "/v1/config/ingestion/exclusions",
    "/v1/config/ingestion/exclusions/{id}",
    "/v1/config/keys",
    "/v1/config/keys/{id}",
    "/v1/config/view",
    "/v1/config/view/{viewID}",
    "/v1/config/presetalert",
    "/v1/config/presetalert/{presetid}",
    "/v1/config/board",
    "/v1/config/board/{boardid}",
    "/v1/config/members",
    "/v1/config/members/{email}",
    "/v3/pipeline",
    "/v3/pipeline/{pipeline_id}",
    "/v3/enterprise/account",
    "/v3/enterprise/account/{account_id}",
    "/v1/config/groups",
    "/v1/config/groups/{groupId}",
    "/v1/config/categories/{type}",
    "/v1/config/categories/{type}/{id}",
    "/v1/config/parsing/templates",
    "/v1/config/parsing/templates/{id}",
    "/v1/config/archiving",
    "/v3/pipeline/gateway-route",
    "/v3/pipeline/gateway-route/{gateway_route_id}",
    "/v3/pipeline/gateway-route/{gateway_route_id}/access-key",
    "/v3/pipeline/gateway-route/{gateway_route_id}/signing-key",
    "/v3/enterprise/account/{account_id}/features",
    "/v1/config/index-rate",
    *(
        f"/v3/pipeline/{{pipeline_id}}/{segment}{item}"
        for segment in ("source", "transform", "processor", "sink", "destination")
        for item in ("", "/{node_id}")
    ),
    "/v3/pipeline/{pipeline_id}/alert/{alert_id}",
    "/v1/config/ingestion/status",
    "/v1/auth/preferences",
    "/info",
    "/orgs",
    "/v1/auth/session",
    "/v3/auth/account",
    "/v3/auth/account/{account}",
    "/v1/config/archiving/status",
    "/v1/config/view/{viewID}/alerts",
    "/v3/pipeline/component-type",
    "/v1/usage",
    "/v3/pipeline/metric/usage",
    *(
        f"/v3/pipeline/{{pipeline_id}}/{segment}/{{component_id}}/alert{item}"
        for segment in ("processor", "destination", "{kind}")
        for item in ("", "/{alert_id}")
    ),
}
UNKNOWN_ID = "0123456789abcdef01234567"
INVALID_ID = "x" * 25  # longer than an id may be: a 400 from the path's validation


def _app(client: AppClient) -> FastAPI:
    app: FastAPI = client._transport.app  # type: ignore[attr-defined]
    return app


def _plain(app: FastAPI) -> dict[str, Any]:
    """The route contexts the plain handler serves, by path."""
    return {
        context.path: context
        for context in route_contexts(app)
        if isinstance(getattr(context, "app", None), PlainHandler)
    }


def _filled(path: str, seeded: Seeded) -> list[str]:
    """``path`` with each way of filling its parameter (none: as it is)."""
    if "{" not in path:
        return [path]
    if path.startswith("/v1/config/categories/{type}"):
        # the type's real value and a wrong one; then the id as any other path's
        filled = [path.replace("{type}", kind, 1) for kind in ("views", "bogus")]
        return [url for one in filled for url in _filled(one, seeded)]
    if "/{kind}/" in path:  # a pipeline alert's kind: a real one and a wrong one
        filled = [path.replace("{kind}", kind, 1) for kind in ("source", "bogus")]
        return [url for one in filled for url in _filled(one, seeded)]
    real = {
        "/v1/config/ingestion/exclusions/{id}": seeded.ids["rule"],
        "/v1/config/keys/{id}": seeded.ids["key"],
        "/v1/config/view/{viewID}": seeded.ids["view"],
        "/v1/config/view/{viewID}/alerts": seeded.ids["view"],
        "/v1/config/presetalert/{presetid}": seeded.ids["preset"],
        "/v3/enterprise/account/{account_id}": seeded.account_id,
        "/v1/config/board/{boardid}": seeded.ids["board"],
        "/v1/config/members/{email}": seeded.ids["member"],
        "/v3/pipeline/{pipeline_id}": seeded.ids["pipeline"],
    }
    head, _, tail = path.partition("{")
    rest = tail.partition("}")[2]
    while "{" in rest:  # a second parameter (a pipeline's node, an alert): an unknown id
        rest = rest[: rest.index("{")] + UNKNOWN_ID + rest[rest.index("}") + 1 :]
    ids = [UNKNOWN_ID, INVALID_ID] + ([real[path]] if path in real else [])
    return [f"{head}{found}{rest}" for found in ids]


async def same_answer(
    client: AppClient, context: Any, theirs: Any, where: str, url: str, **request: Any
) -> httpx.Response:
    """GET ``url`` from the route ``context`` as it serves now and with ``theirs`` (an
    ASGI handler) in its place; asserts the same status, headers and body; the answer."""
    mine = context.app
    context.app = theirs
    try:
        before = await client.get(url, **request)
    finally:
        context.app = mine
    answer = await client.get(url, **request)
    assert answer.status_code == before.status_code, where
    assert answer.headers.multi_items() == before.headers.multi_items(), where
    assert answer.content == before.content, where
    return answer


def test_the_management_reads_take_the_plain_handler(client: AppClient) -> None:
    plain = _plain(_app(client))
    assert set(plain) == EXPECTED, sorted(EXPECTED ^ set(plain))


async def test_plain_answers_are_fastapis_own(client: AppClient) -> None:
    seeded = await seed(client)
    member = await add_person(client.database_url, account_id=seeded.account_id, role="member")
    browser = await sign_in_person(client, member)
    credentials = {
        "none": {},
        "wrong": {"Authorization": "Token not-a-key"},
        "account": seeded.account.headers,
        "enterprise": seeded.account.tenant.headers,
        "member": browser.headers,
    }
    plain = _plain(_app(client))
    compared = 0
    statuses = set()
    for path, context in sorted(plain.items()):
        handler: PlainHandler = context.app
        queries: list[dict[str, str]] = [{}]
        if path == "/v1/config/keys":
            queries += [{"type": "ingestion"}, {"type": "bogus"}]
        for filled in _filled(path, seeded):
            for query in queries:
                for who, headers in credentials.items():
                    where = f"{who} GET {filled} {query}"
                    mine = await same_answer(
                        client, context, handler.fastapi_handler, where,
                        filled, params=query, headers=headers,
                    )  # fmt: skip
                    compared += 1
                    statuses.add(mine.status_code)
    assert compared > 100
    assert statuses >= {200, 400, 401, 403, 404}, statuses


@pytest.mark.parametrize("path", ["/v1/config/view", "/v1/config/keys"])
async def test_dependency_overrides_are_left_to_fastapi(client: AppClient, path: str) -> None:
    """With an override in place, FastAPI's handler answers (it applies overrides)."""
    from tidegate.auth.dependencies import require_account

    app = _app(client)
    seeded = await seed(client)

    async def no_account() -> str:
        return "no-such-account"

    app.dependency_overrides[require_account] = no_account
    try:
        response = await client.get(path, headers=seeded.account.headers)
    finally:
        app.dependency_overrides.clear()
    # The override's account has nothing: an empty list (its own rows are not read).
    assert response.status_code == 200, response.text
    assert response.json() == []
