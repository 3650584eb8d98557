"""Pipeline alerts on a real ``tidegate serve`` (docs/api-pipelines.md, "Pipeline alerts").

- The mezmo Terraform provider's (v5) alert requests replayed with the bodies its
  converters build (``internal/provider/models/alerts``, its testdata): create, read
  (``GET /v3/pipeline/{pid}/alert/{id}``), update with what it read, read again with no
  drift, delete.
- End to end: events sent through a published pipeline make a threshold alert POST
  once to a real local webhook receiver, and an absence alert fire when they stop.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.alerts.receivers import HttpReceiver
from tests.gateway.factories import events, new_account_on, wire
from tests.keys.factories import with_service_key
from tests.pipelines.factories import add_node, assert_v3_error, make_pipeline, source_with_route
from tests.waiting import eventually


@pytest.fixture(params=["sqlite", "postgres"])
def server_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'palerts.sqlite3'}"
    return str(request.getfixturevalue("fresh_pg_url"))


def _env(server_db: str, **extra: str) -> dict[str, str]:
    return {
        "TIDEGATE_DATABASE_URL": server_db,
        "TIDEGATE_BOOTSTRAP": "0",
        "TIDEGATE_RATE_LIMIT_PER_MINUTE": "0",
        **extra,
    }


def threshold_body(pid: str, cid: str, receiver: str) -> dict[str, Any]:
    """``ThresholdAlertFromModel`` for a log alert with a custom script (testdata)."""
    return {
        "pipeline_id": pid,
        "component_kind": "source",
        "component_id": cid,
        "inputs": [cid],
        "alert_config": {
            "general": {"name": "my threshold alert"},
            "evaluation": {
                "alert_type": "threshold",
                "event_type": "log",
                "operation": "CUSTOM",
                "conditional": {
                    "expressions": [
                        {
                            "field": ".event_count",
                            "str_operator": "greater",
                            "value": 5000,
                            # An unset negate: the provider marshals a Go struct, {}.
                            "negate": {},
                        }
                    ],
                    "logical_operation": "AND",
                },
                "window_type": "tumbling",
                "window_duration_minutes": 5,
                "event_timestamp": ".timestamp",
                "script": "function myFunc(a, e, m) { return a }",
            },
            "alert_payload": {
                "service": {
                    "name": "webhook",
                    "uri": receiver,
                    "message_text": '{"alert": "threshold"}',
                    "method": "post",
                    "auth": {"strategy": "bearer", "token": "abc123"},
                    "headers": [{"header_name": "x-my-header", "header_value": "v"}],
                },
                "throttling": {"window_secs": 300, "threshold": 1},
            },
        },
        "active": True,
    }


def absence_body(pid: str, cid: str) -> dict[str, Any]:
    """``AbsenceAlertFromModel`` (testdata): no throttling sent, server defaults."""
    return {
        "pipeline_id": pid,
        "component_kind": "source",
        "component_id": cid,
        "inputs": [cid],
        "alert_config": {
            "general": {"name": "my absence alert", "description": "quiet"},
            "evaluation": {
                "alert_type": "absence",
                "event_type": "log",
                "window_type": "tumbling",
                "window_duration_minutes": 5,
                "event_timestamp": ".timestamp",
            },
            "alert_payload": {
                "service": {
                    "name": "log_analysis",
                    "ingestion_key": "abc123",
                    "severity": "INFO",
                    "body": "You received a absence alert for a Log event",
                    "subject": "Absence Alert for Log event",
                }
            },
        },
        "active": True,
    }


def change_body(pid: str, cid: str) -> dict[str, Any]:
    """``ChangeAlertFromModel`` on a processor (``transform``), a metric alert."""
    return {
        "pipeline_id": pid,
        "component_kind": "transform",
        "component_id": cid,
        "inputs": [cid],
        "alert_config": {
            "general": {"name": "my change alert"},
            "evaluation": {
                "alert_type": "change",
                "event_type": "metric",
                "operation": "SUM",
                "group_by": [".thing"],
                "conditional": {
                    "expressions": [
                        {
                            "field": ".some_value",
                            "str_operator": "value_change_greater",
                            "value": 500,
                            "negate": False,
                        }
                    ],
                    "logical_operation": "AND",
                },
                "window_type": "tumbling",
                "window_duration_minutes": 5,
            },
            "alert_payload": {
                "service": {
                    "name": "pager_duty",
                    "uri": "https://events.pagerduty.com/v2/enqueue",
                    "summary": "Change Alert: {{.thing}}",
                    "severity": "CRITICAL",
                    "source": "{{.source}}",
                    "routing_key": "our_routing_key",
                    "event_action": "trigger",
                },
                "throttling": {"window_secs": 300, "threshold": 1},
            },
        },
        "active": True,
    }


def _expected(sent: dict[str, Any]) -> dict[str, Any]:
    """What a read answers for ``sent``: as sent, ``negate: {}`` as false, throttling
    filled with the server's defaults when the provider sent none."""
    config = copy.deepcopy(sent["alert_config"])
    for expression in (config["evaluation"].get("conditional") or {}).get("expressions", []):
        if expression.get("negate") == {}:
            expression["negate"] = False
    config["alert_payload"].setdefault("throttling", {"window_secs": 60, "threshold": 1})
    return config


def _read_matches(read: dict[str, Any], sent: dict[str, Any]) -> None:
    """``ThresholdAlertToModel`` & co: every field the provider reads, as it wrote it."""
    for key in ("pipeline_id", "component_kind", "component_id", "inputs", "active"):
        assert read[key] == sent[key], key
    assert isinstance(read["id"], str)
    assert read["id"]
    # JSON numbers: the provider decodes them as float64 (5000 and 5000.0 are equal).
    assert read["alert_config"] == _expected(sent)
    evaluation = read["alert_config"]["evaluation"]
    assert isinstance(evaluation["window_duration_minutes"], int)
    assert isinstance(evaluation["window_type"], str)


async def _call(
    http: httpx.AsyncClient, headers: dict[str, str], method: str, path: str, body: Any = None
) -> Any:
    response = await http.request(method, path, json=body, headers=headers)
    assert 200 <= response.status_code <= 204, f"{method} {path}: {response.text}"
    return response.json()["data"]


async def test_provider_alert_lifecycle(live_server_factory: Any, server_db: str) -> None:
    server = live_server_factory(env=_env(server_db, TIDEGATE_DESTINATION_ALLOW="127.0.0.1"))
    async with server.async_client() as http, HttpReceiver() as receiver:
        account = await with_service_key(http, await new_account_on(http, server_db))
        h = account.headers
        pid = await make_pipeline(http, account)
        _, source = await source_with_route(http, account, pid)
        processor = await add_node(
            http,
            account,
            pid,
            "processor",
            {
                "type": "filter",
                "user_config": {
                    "condition": {
                        "expressions": [
                            {"field": ".level", "str_operator": "equal", "value": "debug"}
                        ]
                    }
                },
                "inputs": [source],
            },
        )
        bodies = [
            threshold_body(pid, source, f"{receiver.base_url}/hook"),
            absence_body(pid, source),
            change_body(pid, processor),
        ]
        for sent in bodies:
            kind, cid = sent["component_kind"], sent["component_id"]
            created = await _call(http, h, "POST", f"/v3/pipeline/{pid}/{kind}/{cid}/alert", sent)
            _read_matches(created, sent)
            aid = created["id"]
            # The provider's read, then a plan: no drift.
            read = await _call(http, h, "GET", f"/v3/pipeline/{pid}/alert/{aid}")
            _read_matches(read, sent)
            one = f"/v3/pipeline/{pid}/{kind}/{cid}/alert/{aid}"
            assert await _call(http, h, "GET", one) == read
            # An update sends the plan with the id it read; then reads again.
            changed = copy.deepcopy(sent)
            changed["id"] = aid
            changed["active"] = False
            changed["alert_config"]["general"]["name"] = "renamed"
            changed["alert_config"]["evaluation"]["window_duration_minutes"] = 15
            updated = await _call(http, h, "PUT", one, changed)
            _read_matches(updated, changed)
            _read_matches(await _call(http, h, "GET", f"/v3/pipeline/{pid}/alert/{aid}"), changed)
            listed = await _call(http, h, "GET", f"/v3/pipeline/{pid}/{kind}/{cid}/alert")
            assert [item["id"] for item in listed] == [aid]
            # Another account sees nothing of it.
            other = await with_service_key(http, await new_account_on(http, server_db))
            for method, path in (("GET", f"/v3/pipeline/{pid}/alert/{aid}"), ("DELETE", one)):
                response = await http.request(method, path, headers=other.headers)
                assert response.status_code == 404, response.text
            response = await http.delete(one, headers=h)
            assert response.status_code == 200, response.text
            response = await http.get(f"/v3/pipeline/{pid}/alert/{aid}", headers=h)
            assert_v3_error(response, 404)

        # Refused in the documented shape, never a 500.
        bad = threshold_body(pid, source, "http://10.0.0.1/hook")
        response = await http.post(f"/v3/pipeline/{pid}/source/{source}/alert", json=bad, headers=h)
        assert "url" in str(assert_v3_error(response, 400))
        wrong_op = change_body(pid, processor)
        wrong_op["alert_config"]["evaluation"]["conditional"]["expressions"][0]["str_operator"] = (
            "greater"
        )
        response = await http.post(
            f"/v3/pipeline/{pid}/transform/{processor}/alert", json=wrong_op, headers=h
        )
        assert response.status_code == 400, response.text
        # A kind that is none of them is refused in the same shape.
        response = await http.post(
            f"/v3/pipeline/{pid}/widget/{processor}/alert",
            json=change_body(pid, processor),
            headers=h,
        )
        assert "kind" in str(assert_v3_error(response, 400))
        # Deleting a component deletes its alerts (this one made by the undocumented
        # alias of its kind, as the pipeline's own paths name it).
        kept = await _call(
            http,
            h,
            "POST",
            f"/v3/pipeline/{pid}/processor/{processor}/alert",
            change_body(pid, processor),
        )
        response = await http.delete(f"/v3/pipeline/{pid}/transform/{processor}", headers=h)
        assert response.status_code == 200, response.text
        assert_v3_error(await http.get(f"/v3/pipeline/{pid}/alert/{kept['id']}", headers=h), 404)
        processor = source  # no processor left: the next one is refused
        # The component must be the pipeline's node of that kind.
        response = await http.post(
            f"/v3/pipeline/{pid}/transform/{processor}/alert",
            json=change_body(pid, processor),
            headers=h,
        )
        assert response.status_code == 404, response.text


async def test_threshold_fires_once_and_absence_when_events_stop(
    live_server_factory: Any, server_db: str
) -> None:
    # A 1-minute window lasts 1.2 s (the test-only alert_window_scale); usage is flushed
    # every 0.2 s so a window's events are counted in it. Two workers: the usage counts
    # are summed in the database, and the alert judged on events is judged by the worker
    # holding the lease, on what either worker ran (runtime/alert_events.py).
    server = live_server_factory(
        workers=2,
        env=_env(
            server_db,
            TIDEGATE_ALERT_TICK_S="0.2",
            TIDEGATE_ALERT_SETTLE_S="0.5",
            TIDEGATE_ALERT_WINDOW_SCALE="0.02",
            TIDEGATE_PIPELINE_USAGE_FLUSH_S="0.2",
            TIDEGATE_DESTINATION_ALLOW="127.0.0.1",
        ),
    )
    async with server.async_client() as http, HttpReceiver() as receiver:
        account = await with_service_key(http, await new_account_on(http, server_db))
        wired = await wire(http, account, [("sink", "destination", "blackhole", {}, ["source"])])
        pid, source = wired.pipeline_id, wired.source_id
        threshold = threshold_body(pid, source, f"{receiver.base_url}/threshold")
        evaluation = threshold["alert_config"]["evaluation"]
        evaluation["window_duration_minutes"] = 1
        evaluation["conditional"]["expressions"][0]["value"] = 9  # more than 9 events
        threshold["alert_config"]["alert_payload"]["throttling"] = {
            "window_secs": 3600,
            "threshold": 1,
        }
        absence = threshold_body(pid, source, f"{receiver.base_url}/absence")
        absence["alert_config"]["general"]["name"] = "quiet source"
        absence["alert_config"]["evaluation"] = {
            "alert_type": "absence",
            "event_type": "log",
            "window_duration_minutes": 1,
        }
        # No message_text: the default body (name, count, the window's end).
        del absence["alert_config"]["alert_payload"]["service"]["message_text"]
        absence["alert_config"]["alert_payload"]["throttling"] = {
            "window_secs": 1,
            "threshold": 100,
        }
        for body in (threshold, absence):
            await _call(
                http, account.headers, "POST", f"/v3/pipeline/{pid}/source/{source}/alert", body
            )

        # 30 events in one request: counted together, so in one window however long the
        # request takes on a loaded machine (more than 9 in a window).
        response = await http.post(wired.url, json=events(30), headers=wired.auth)
        assert response.status_code in (200, 202), response.text
        last_sent_ms = time.time() * 1000

        posts = await eventually(
            lambda: [r for r in receiver.requests if r.path == "/threshold"],
            timeout=60,
            what="the threshold alert's post",
        )
        first = posts[0]
        assert first.method == "POST"
        assert first.headers["authorization"] == "Bearer abc123"
        assert first.headers["x-my-header"] == "v"
        assert first.json() == {"alert": "threshold"}
        # Events stopped: an empty window fires the absence alert.
        quiet = await eventually(
            lambda: [r for r in receiver.requests if r.path == "/absence"],
            timeout=60,
            what="the absence alert's post",
        )
        body = quiet[-1].json()
        assert body["name"] == "quiet source"
        assert body["count"] == 0
        assert body["source"] == "pipeline"
        await eventually(
            lambda: [
                r
                for r in receiver.requests
                if r.path == "/absence" and r.json()["fired_ms"] > last_sent_ms
            ],
            timeout=60,
            what="an absence alert after the last events",
        )
        # Two more windows pass: still one threshold post (once per firing, throttled).
        seen = len(quiet)
        await eventually(
            lambda: len([r for r in receiver.requests if r.path == "/absence"]) >= seen + 2,
            timeout=60,
            what="two more empty windows",
        )
        assert len([r for r in receiver.requests if r.path == "/threshold"]) == 1

        # An alert judged on the events themselves (its conditional names a field the
        # script makes): the server's own rounds fold them and post when a window holds.
        on_events = threshold_body(pid, source, f"{receiver.base_url}/events")
        on_events["alert_config"]["general"]["name"] = "big batch"
        on_events["alert_config"]["evaluation"].update(
            window_duration_minutes=1,
            script="function total(accum, event) { accum.n += event.n; return accum }",
            conditional={
                "expressions": [{"field": ".n", "str_operator": "greater", "value": 12}],
                "logical_operation": "AND",
            },
        )
        await _call(
            http, account.headers, "POST", f"/v3/pipeline/{pid}/source/{source}/alert", on_events
        )

        async def sent_until_fired() -> list[Any]:
            # The server reads new alerts every few seconds: send until it has.
            answer = await http.post(wired.url, json=[{"n": 5}] * 3, headers=wired.auth)
            assert answer.status_code in (200, 202), answer.text
            return [r for r in receiver.requests if r.path == "/events"]

        [fired, *_] = await eventually(
            sent_until_fired, timeout=60, every=0.5, what="the alert on events' post"
        )
        assert fired.json() == {"alert": "threshold"}  # its message_text, as sent
