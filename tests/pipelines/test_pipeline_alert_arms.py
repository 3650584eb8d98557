"""A pipeline alert whose inputs name a route processor's arm (``<route id>.<output>``,
as the mezmo provider's docs allow) counts what that arm sent, not everything the route
received (``pipeline_output_usage``, counted by the runtime as events run). In process:
events through a published pipeline, the usage flushed, the evaluator called past the
window's end."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from tests.conftest import AppClient
from tests.export.helpers import app_state_of
from tests.gateway.factories import new_account, wire
from tests.pipelines.test_pipeline_alert_windows import _evaluate, _past_window
from tests.pipelines.test_pipeline_alerts import threshold_body

from tidegate.clock import now_ms
from tidegate.models import AlertDelivery, PipelineOutputUsage

ERRORS = {
    "conditionals": [
        {
            "output_name": "errors",
            "expressions": [{"field": ".level", "str_operator": "equal", "value": "error"}],
        }
    ]
}


def _more_than(pid: str, route: str, inputs: list[str], name: str, limit: int) -> dict[str, Any]:
    body = threshold_body(pid, route, "https://alerts.example.com/hook")
    body["component_kind"] = "transform"
    body["inputs"] = inputs
    body["alert_config"]["general"]["name"] = name
    evaluation = body["alert_config"]["evaluation"]
    evaluation["window_duration_minutes"] = 1
    evaluation["conditional"]["expressions"][0]["value"] = limit
    return body


async def test_an_alert_on_a_routes_arm_counts_that_arm(isolated_client: AppClient) -> None:
    client = isolated_client
    state = app_state_of(client)
    account = await new_account(client, throttle=False)
    wired = await wire(
        client,
        account,
        [
            ("route", "processor", "route", ERRORS, ["source"]),
            ("sink", "destination", "blackhole", {}, ["route.errors", "route._unmatched"]),
        ],
    )
    pid, route = wired.pipeline_id, wired.nodes["route"]
    for inputs, name in (
        ([f"{route}.errors"], "errors arm"),  # 3 events: does not fire
        ([route], "whole route"),  # 8 events: fires
        ([f"{route}._unmatched"], "unmatched arm"),  # 5 events: fires
    ):
        response = await client.post(
            f"/v3/pipeline/{pid}/transform/{route}/alert",
            json=_more_than(pid, route, inputs, name, 4),
            headers=account.headers,
        )
        assert response.status_code == 201, response.text
    batch = [{"line": f"e{n}", "level": "error"} for n in range(3)]
    batch += [{"line": f"i{n}", "level": "info"} for n in range(5)]
    response = await client.post(wired.url, json=batch, headers=wired.auth)
    assert response.status_code == 200, response.text
    assert await state.pipelines.usage.flush(state.db) >= 1
    async with state.db.read_sessions() as session:
        arms = (
            await session.execute(
                select(PipelineOutputUsage.output, PipelineOutputUsage.events).where(
                    PipelineOutputUsage.pipeline_id == pid
                )
            )
        ).all()
    assert sorted(arms) == [("_unmatched", 5), ("errors", 3)]

    assert await _evaluate(state, _past_window(now_ms(), state)) == 2
    async with state.db.read_sessions() as session:
        fired = (
            await session.scalars(
                select(AlertDelivery).where(AlertDelivery.account_id == account.account_id)
            )
        ).all()
    assert sorted((row.payload["name"], row.payload["count"]) for row in fired) == [
        ("unmatched arm", 5),
        ("whole route", 8),
    ]
