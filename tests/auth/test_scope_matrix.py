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
in tests/groups/test_scope.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tests.auth.test_role_matrix import SKIPPED, operations
from tests.auth.test_tenancy_matrix import build_victim, fill
from tests.conftest import AppClient
from tests.export.helpers import BASE_MS, insert_lines
from tests.users.factories import add_person, sign_in_person

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
    for role in ("member", "admin"):
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
