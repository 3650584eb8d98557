"""``mzm log search`` against a real server, as its public source makes the exchange
(@mzm/command-log/search/command.ts): ``GET /v2/export`` with ``Authorization: Token``,
the parameters sorted by name, ``query`` defaulting to ``_account:*``, ``prefer``,
``size``, ``from`` and ``to`` in epoch milliseconds, comma lists for ``hosts``,
``levels``, ``apps``; it reads ``{pagination_id, lines}`` and asks for the next page
with the same parameters plus ``pagination_id`` (``--next`` / ``--all``)."""

from __future__ import annotations

from typing import Any

from tests.conftest import AppClient
from tests.tail.test_live import _account_with_key, _env, ingest
from tests.tail.test_revocation import _service_key

from tidegate.ingest.service import now_ms


def _sorted(params: dict[str, Any]) -> list[tuple[str, Any]]:
    """mzm sorts its parameters by name "so the cursor stays consistent"."""
    return sorted(params.items())


async def test_mzm_log_search_pages_through_the_default_query(
    client: AppClient, shared_live_server: Any
) -> None:
    server = shared_live_server(env=_env(client))
    account, ingestion_key = await _account_with_key(client)
    _other, other_key = await _account_with_key(client)
    _key_id, access_key = await _service_key(client, account)
    await ingest(
        server.base_url,
        ingestion_key,
        [
            {"line": f"line {n}", "app": "api" if n % 2 else "web", "level": "info"}
            for n in range(5)
        ],
    )
    await ingest(server.base_url, other_key, [{"line": "another account's"}])
    headers = {"Authorization": f"Token {access_key}", "Content-Type": "application/json"}
    params: dict[str, Any] = {
        "query": "_account:*",  # mzm's default when no query is given
        "prefer": "tail",
        "size": 2,
        # The ingest helper sends an old now (2025): the lines (without a time of
        # their own) are stored at the receive time (docs/ingest.md).
        "from": now_ms() - 3_600_000,
        "to": now_ms() + 3_600_000,
    }
    seen: list[str] = []
    async with server.async_client() as http:
        for _page in range(10):
            answer = await http.get("/v2/export", params=_sorted(params), headers=headers)
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert set(body) == {"pagination_id", "lines"}
            seen.extend(line["_line"] for line in body["lines"])
            for line in body["lines"]:
                assert {"_host", "_ts", "_line"} <= set(line)  # what pprint reads
            if not body["pagination_id"]:
                break
            params["pagination_id"] = body["pagination_id"]
        assert seen == [f"line {n}" for n in reversed(range(5))]

        # A query, the lists, and prefer=head, as `mzm log search -a api -l info -p head`.
        filtered = {
            "query": "line",
            "prefer": "head",
            "apps": "api",
            "levels": "info",
            "from": now_ms() - 3_600_000,
            "to": now_ms() + 3_600_000,
            "size": 100,
        }
        answer = await http.get("/v2/export", params=_sorted(filtered), headers=headers)
        assert answer.status_code == 200, answer.text
        assert [line["_line"] for line in answer.json()["lines"]] == ["line 1", "line 3"]
        assert answer.json()["pagination_id"] is None

        # mzm prints `[code] error` from the legacy body.
        bad = await http.get(
            "/v2/export", params=_sorted({**filtered, "query": "_account:(*"}), headers=headers
        )
        assert bad.status_code == 400
        assert bad.json()["code"] == "BadRequest"
        assert "column" in bad.json()["error"]
