"""Every read x a person limited by a group scope: no line, app, host or tag outside
the scope leaves the server by any route (docs/isolation.md, "Every channel").

The operations are enumerated from the app (as tests/auth/test_role_matrix.py does), so
a read added later is walked too. A member and an admin in a group limited to ``apps:
["web"]``, signed in through the web app's session, and a service key the admin made,
call every GET on their own account's resources (ids filled by the tenancy matrix's
victim) with a window holding the account's lines; no answer may carry the
out-of-scope app's name, host, tag or line text. The export must carry the in-scope
line, so the walk is not vacuous. Alerts (which leave by e-mail and webhooks) are
walked in tests/alerts/test_scoped_alerts.py; live tail (a stream, over a real server)
in tests/groups/test_scope.py, and its end when the scope changes under it in
tests/sessions/test_tail_revocation.py.

The channels that carry an account's lines unscoped (archiving, pipelines: their
ingestion source, tap and simulations) are an admin's, who may change any group, their
own included; ``test_unscoped_channels_are_an_admins`` holds them there.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tests.auth.test_role_matrix import SKIPPED, operations
from tests.auth.test_tenancy_matrix import build_victim, fill
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, insert_lines
from tests.users.factories import add_person, sign_in_person

from tidegate.auth.roles import Permission
from tidegate.logs.store import NewLine

SECRETS = ("secretapp", "vault-host", "pci-tag", "card 4111")
DAY = datetime.fromtimestamp(BASE_MS / 1000, tz=UTC).date().isoformat()


def _params(path: str) -> dict[str, str]:
    if path.startswith("/v2/usage"):
        return {"from": DAY, "to": DAY}
    return {"from": str(BASE_MS - 3_600_000), "to": str(BASE_MS + 3_600_000)}


async def test_no_read_carries_lines_outside_the_callers_scope(client: AppClient) -> None:
    account, ids = await build_victim(client)
    await insert_lines(
        client.database_url,
        account.account_id,
        [
            NewLine(line="web ok", ts=BASE_MS + 1, host="web-1", app="web", tags=["shop"]),
            NewLine(
                line="card 4111 declined",
                ts=BASE_MS + 2,
                host="vault-host",
                app="secretapp",
                tags=["pci-tag"],
            ),
        ],
    )
    group = await client.post(
        "/v1/config/groups", json={"name": "web only", "apps": ["web"]}, headers=account.headers
    )
    assert group.status_code == 200, group.text
    callers: dict[str, dict[str, str]] = {}
    for role in ("readonly", "member", "admin"):
        person = await add_person(client.database_url, account_id=account.account_id, role=role)
        placed = await client.put(
            f"/v1/config/members/{person.email}",
            json={"groups": [group.json()["id"]]},
            headers=account.headers,
        )
        assert placed.status_code == 200, placed.text
        callers[role] = (await sign_in_person(client, person)).headers
    made = await client.post(
        "/v1/config/keys", params={"type": "service"}, headers=callers["admin"]
    )
    assert made.status_code == 200, made.text
    callers["admin's key"] = {"Authorization": f"Token {made.json()['key']}"}

    walked, leaks = 0, []
    for method, template, _permission, needs_credentials in operations(client):
        if method != "GET" or not needs_credentials or (method, template) in SKIPPED:
            continue
        path = fill(template, ids)
        if path is None:
            continue
        for who, headers in callers.items():
            response = await client.get(path, params=_params(path), headers=headers)
            assert response.status_code < 500, (who, path, response.text)
            walked += 1
            text = response.text
            leaks += [(who, path, secret) for secret in SECRETS if secret in text]
    assert leaks == []
    assert walked > 100
    for headers in callers.values():
        exported = await client.get("/v1/export", params=_params("/v1/export"), headers=headers)
        assert "web ok" in exported.text
        # A name asked for is answered with no count outside the scope.
        asked = await client.get(
            "/v1/usage/apps/secretapp", params=_params("/v1/usage"), headers=headers
        )
        assert asked.json()["lines"] == 0
    await _context_stays_in_scope(client, account.headers, callers)


def _ids(response_text: str) -> dict[str, str]:
    """Line text -> ``_id`` of an NDJSON export."""
    import json

    lines = [json.loads(row) for row in response_text.splitlines() if row.strip()]
    return {line["_line"]: str(line["_id"]) for line in lines}


async def _context_stays_in_scope(
    client: AppClient, owner: dict[str, str], callers: dict[str, dict[str, str]]
) -> None:
    """A line's context (GET /v1/export/context) takes a line id: the walk above has
    none to give it, so both lines' ids are asked for here."""
    everything = await client.get("/v1/export", params=_params("/v1/export"), headers=owner)
    ids = _ids(everything.text)
    for who, headers in callers.items():
        hidden = await client.get(
            "/v1/export/context", params={"line": ids["card 4111 declined"]}, headers=headers
        )
        assert hidden.status_code == 404, (who, hidden.text)
        shown = await client.get(
            "/v1/export/context", params={"line": ids["web ok"]}, headers=headers
        )
        assert shown.status_code == 200, (who, shown.text)
        assert "web ok" in shown.text
        assert [secret for secret in SECRETS if secret in shown.text] == [], who


# Channels by which an account's lines leave the server with no group scope applied:
# only an admin (who may change any group, their own included: docs/isolation.md) may
# open them. Lowering one of these to a member's permission needs a scope first.
UNSCOPED_CHANNELS = {
    ("GET", "/v1/config/archiving"),
    ("POST", "/v1/config/archiving"),
    ("PUT", "/v1/config/archiving"),
    ("POST", "/v1/config/archiving/run"),
    ("POST", "/v3/pipeline/{pipeline_id}/tap/{component_id}"),
    ("POST", "/v3/pipeline/{pipeline_id}/tap/{component_id}/stream"),
    ("POST", "/v3/pipeline/{pipeline_id}/simulate"),
    ("POST", "/v3/pipeline/simulate-processor"),
    # A pipeline with the log-analysis-ingestion source forwards every ingested line.
    ("POST", "/v3/pipeline/{pipeline_id}/source"),
    ("PUT", "/v3/pipeline/{pipeline_id}/source/{node_id}"),
    ("PATCH", "/v3/pipeline/{pipeline_id}/source/{node_id}"),
    ("POST", "/v3/pipeline/{pipeline_id}/publish"),
}


async def test_unscoped_channels_are_an_admins(client: AppClient) -> None:
    declared = {
        (method, path): permission
        for method, path, permission, _needs in operations(client)
        if (method, path) in UNSCOPED_CHANNELS
    }
    assert set(declared) == UNSCOPED_CHANNELS, UNSCOPED_CHANNELS - set(declared)
    assert {key for key, permission in declared.items() if permission != Permission.MANAGE} == set()
