"""The pipeline editor in a real browser (docs/web.md, "Pipelines"): a pipeline built
node by node through forms generated from the components' configuration models,
connected, published (what the server refuses shown on the nodes it names), a node
removed, a live tap showing the events sent to the pipeline's source, and each node's
event counts from the usage metrics; every step checked against the public API. A
readonly member sees the graph and no editing control."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import sqlite3
from contextlib import closing

from playwright.sync_api import Locator, Page, expect
from tests.live import live_client
from tests.waiting import until
from tests.web.conftest import Site
from tests.web.harness import (
    Account,
    make_person,
    now_ms,
    sign_in_as_person,
    sign_in_with_key,
)


def node(page: Page, title: str) -> Locator:
    return (
        page.get_by_test_id("pipeline-graph")
        .get_by_test_id("pipeline-node")
        .filter(has=page.locator(".node-title", has_text=title))
    )


def add_node(page: Page, kind: str, type_: str, title: str) -> Locator:
    """Opens the Add node panel with a kind, a type and a title chosen; the panel."""
    page.get_by_test_id("node-add").click()
    panel = page.get_by_test_id("node-panel")
    expect(panel.locator("h2")).to_have_text("Add a node")
    panel.get_by_test_id("node-kind").select_option(kind)
    panel.get_by_test_id("node-type").select_option(type_)
    panel.get_by_test_id("node-title").fill(title)
    return panel


def test_a_pipeline_is_built_published_tapped_and_counted(site: Site, page: Page) -> None:
    account = site.account()
    sign_in_with_key(page, site.base_url, account.service_key)
    page.get_by_test_id("nav-pipelines").click()
    page.get_by_test_id("pipeline-new-title").fill("Edge")
    page.get_by_test_id("pipeline-create").click()
    expect(page.locator("main h1")).to_have_text("Edge")
    expect(page.get_by_test_id("pipeline-empty")).to_be_visible()
    pipeline_id = page.url.rsplit("/", 1)[1]
    expect(page.get_by_test_id("pipeline-status")).to_contain_text("never published")

    # A source: its `decoding` is a select of the enum its configuration model allows.
    panel = add_node(page, "source", "http", "Webhook")
    expect(panel.get_by_test_id("node-route")).to_have_value("")  # a route of its own
    config = panel.get_by_test_id("node-config")
    decoding = config.get_by_label("decoding", exact=True)
    assert decoding.locator("option").all_inner_texts() == [
        "— default: auto —", "auto", "bytes", "json", "ndjson",
    ]  # fmt: skip
    decoding.select_option("json")
    config.get_by_label("capture_metadata", exact=True).check()
    panel.get_by_test_id("node-save").click()
    expect(node(page, "Webhook")).to_have_count(1)

    # A processor: the filter's condition is required; saved without an expression, the
    # server's validation error lands on the field it names.
    panel = add_node(page, "processor", "filter", "Keep errors")
    panel.get_by_test_id("node-input").filter(has_text="Webhook").locator("input").check()
    config = panel.get_by_test_id("node-config")
    panel.get_by_test_id("node-save").click()
    expressions = config.locator('[data-pointer="/conditional/expressions"]')
    expect(expressions.get_by_test_id("config-error")).to_have_text(
        "must not be empty (leave the condition out, or null, for no condition)"
    )
    expect(panel.get_by_test_id("node-problem")).to_be_visible()
    expect(node(page, "Keep errors")).to_have_count(0)  # nothing saved
    expressions.get_by_role("button", name="Add expressions").click()
    config.get_by_label("field", exact=True).fill(".level")
    config.get_by_label("str_operator", exact=True).select_option("equal")
    config.get_by_label("value", exact=True).fill("error")
    panel.get_by_test_id("node-save").click()
    expect(node(page, "Keep errors")).to_have_count(1)
    expect(page.get_by_test_id("pipeline-graph").locator("path.edge")).to_have_count(1)

    # A destination, left unconnected; a second one to remove.
    panel = add_node(page, "destination", "mezmo", "Store")
    panel.get_by_test_id("node-save").click()
    expect(node(page, "Store")).to_have_count(1)
    panel = add_node(page, "destination", "blackhole", "Scratch")
    panel.get_by_test_id("node-input").filter(has_text="Keep errors").locator("input").check()
    panel.get_by_test_id("node-save").click()
    expect(node(page, "Scratch")).to_have_count(1)
    expect(page.get_by_test_id("pipeline-graph").locator("path.edge")).to_have_count(2)

    with account.http() as http:
        nodes = {
            n["title"]: n for n in http.get(f"/v3/pipeline/{pipeline_id}").json()["data"]["nodes"]
        }
    assert nodes["Webhook"]["user_config"] == {"decoding": "json", "capture_metadata": True}
    assert nodes["Webhook"]["gateway_route_id"]
    assert nodes["Keep errors"]["inputs"] == [nodes["Webhook"]["id"]]
    assert nodes["Keep errors"]["user_config"] == {
        "conditional": {
            "expressions": [{"field": ".level", "str_operator": "equal", "value": "error"}]
        }
    }
    assert (nodes["Store"]["type"], nodes["Store"]["inputs"], nodes["Store"]["user_config"]) == (
        "mezmo",
        [],
        {},
    )

    # Remove the scratch node (after a confirmation).
    node(page, "Scratch").click()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_test_id("node-panel").get_by_test_id("node-remove").click()
    expect(node(page, "Scratch")).to_have_count(0)
    expect(page.get_by_test_id("pipeline-graph").locator("path.edge")).to_have_count(1)

    # Publishing refuses the loose ends, shown on the nodes: the store takes nothing, the
    # filter's output goes nowhere.
    page.get_by_test_id("pipeline-publish").click()
    expect(page.get_by_test_id("publish-error")).to_have_text(
        "Not published: “Keep errors”, “Store” need fixing (marked on the graph)."
    )
    expect(node(page, "Store").get_by_test_id("node-error")).to_have_text(
        "⚠ unconnected: no inputs"
    )
    expect(node(page, "Keep errors").get_by_test_id("node-error")).to_have_text(
        "⚠ unconnected: output unused"
    )
    expect(node(page, "Webhook").get_by_test_id("node-error")).to_have_count(0)
    node(page, "Store").click()
    panel = page.get_by_test_id("node-panel")
    expect(panel.get_by_test_id("node-publish-error")).to_contain_text(
        "Not connected: it has no inputs"
    )
    panel.get_by_test_id("node-input").filter(has_text="Keep errors").locator("input").check()
    panel.get_by_test_id("node-save").click()
    expect(page.get_by_test_id("pipeline-graph").locator("path.edge")).to_have_count(2)
    expect(node(page, "Store").get_by_test_id("node-error")).to_have_count(0)
    page.get_by_test_id("pipeline-publish").click()
    expect(page.get_by_test_id("publish-ok")).to_be_visible()
    expect(page.locator("[data-testid=node-error]")).to_have_count(0)
    expect(page.get_by_test_id("pipeline-status")).to_contain_text("the draft is the same")
    with account.http() as http:
        published = http.get(f"/v3/pipeline/{pipeline_id}").json()["data"]
    assert published["published_revision"] == published["revision"]

    # The configuration as JSON, as the form reads it.
    node(page, "Keep errors").click()
    panel = page.get_by_test_id("node-panel")
    panel.get_by_test_id("node-config-json-toggle").click()
    assert (
        json.loads(panel.get_by_test_id("node-config-json").input_value())
        == nodes["Keep errors"]["user_config"]
    )

    # An access key of the source's route, made on the source's panel.
    node(page, "Webhook").click()
    panel = page.get_by_test_id("node-panel")
    expect(panel.get_by_test_id("node-route-url")).to_have_text(
        f"POST {site.base_url}/gateway/{nodes['Webhook']['gateway_route_id']}"
    )
    panel.get_by_test_id("route-key-create").click()
    access_key = panel.get_by_test_id("route-key").inner_text().strip()

    # A live tap on the filter shows every event sent to the source that passes it, from
    # the moment it listens: one stream, so none passes unseen between rounds.
    node(page, "Keep errors").click()
    page.get_by_test_id("node-panel").get_by_test_id("node-tab-tap").click()
    tap = page.get_by_test_id("tap-panel")
    tap.get_by_test_id("tap-start").click()
    expect(tap.get_by_test_id("tap-status")).to_contain_text("listening")
    with live_client(site.base_url) as http:
        for sent in range(1, 7):
            batch = [
                {"level": "error", "message": f"boom {sent}"},
                {"level": "info", "message": f"fine {sent}"},
            ]
            response = http.post(
                f"/gateway/{nodes['Webhook']['gateway_route_id']}",
                headers={"Authorization": f"Token {access_key}"},
                json=batch,
            )
            assert response.status_code == 200, response.text
    expect(tap.get_by_test_id("tap-event")).to_have_count(6)
    caught = [json.loads(text) for text in tap.get_by_test_id("tap-event").all_inner_texts()]
    assert [(event["level"], event["message"]) for event in caught] == [
        ("error", f"boom {sent}") for sent in range(6, 0, -1)
    ]
    expect(tap.get_by_test_id("tap-status")).to_contain_text("listening… 6 events since")
    tap.get_by_test_id("tap-stop").click()
    expect(tap.get_by_test_id("tap-status")).to_contain_text("stopped")

    # New counts are written into the nodes drawn: they stay the elements they were (a
    # graph drawn again as the counts arrive loses a click pressed on the old node and
    # released on the new one, and the keyboard's focus). Marked, then one batch more.
    page.evaluate(
        "document.querySelectorAll('[data-testid=pipeline-node]')"
        ".forEach((element) => { element.dataset.drawn = 'before'; })"
    )
    with live_client(site.base_url) as http:
        sent += 1
        response = http.post(
            f"/gateway/{nodes['Webhook']['gateway_route_id']}",
            headers={"Authorization": f"Token {access_key}"},
            json=[
                {"level": "error", "message": f"boom {sent}"},
                {"level": "info", "message": f"fine {sent}"},
            ],
        )
        assert response.status_code == 200, response.text

    # Each node's events in and out over the last minutes (usage metrics).
    expect(node(page, "Webhook").get_by_test_id("node-rate")).to_have_text(
        f"{2 * sent} in · {2 * sent} out / 5 min"
    )
    expect(node(page, "Keep errors").get_by_test_id("node-rate")).to_have_text(
        f"{2 * sent} in · {sent} out / 5 min"
    )
    expect(node(page, "Store").get_by_test_id("node-rate")).to_have_text(
        f"{sent} in · {sent} out / 5 min"
    )
    for title in ("Webhook", "Keep errors", "Store"):
        expect(node(page, title)).to_have_attribute("data-drawn", "before")


def alert_body(name: str, source_id: str) -> dict[str, object]:
    """An absence alert told to the account's logs, as the provider sends it."""
    return {
        "inputs": [source_id],
        "active": True,
        "alert_config": {
            "general": {"name": name},
            "evaluation": {
                "alert_type": "absence",
                "event_type": "log",
                "window_duration_minutes": 15,
            },
            "alert_payload": {
                "service": {"name": "log_analysis", "ingestion_key": "k", "subject": "quiet"}
            },
        },
    }


def _alerts_tab(site: Site, page: Page, title: str) -> tuple[Account, str, Locator]:
    """A new account's pipeline with one HTTP source, ``title``, whose alerts tab an
    editor has open: the account, the source's alerts path and the node's panel."""
    account = site.account()
    with account.http() as http:
        pipeline = http.post("/v3/pipeline", json={"title": title}).json()["data"]
        base = f"/v3/pipeline/{pipeline['id']}"
        source = http.post(f"{base}/source", json={"type": "http", "title": title}).json()["data"]
    sign_in_with_key(
        page, site.base_url, account.service_key, next_path=f"/pipelines/{pipeline['id']}"
    )
    node(page, title).click()
    panel = page.get_by_test_id("node-panel")
    panel.get_by_test_id("node-tab-alerts").click()
    expect(panel.get_by_test_id("node-alerts-none")).to_be_visible()
    return account, f"{base}/source/{source['id']}/alert", panel


def test_a_nodes_alerts_are_added_listed_and_removed(site: Site, page: Page) -> None:
    account, alerts, panel = _alerts_tab(site, page, "Webhook")

    # A sliding threshold told to the account's own logs.
    panel.get_by_test_id("node-alert-name").fill("Busy webhook")
    panel.get_by_test_id("node-alert-count").fill("50")
    panel.get_by_test_id("node-alert-window").fill("10")
    panel.get_by_test_id("node-alert-window-type").select_option("sliding")
    expect(panel.get_by_test_id("node-alert-url")).to_be_hidden()
    panel.get_by_test_id("node-alert-message").fill("Busy: {{count}} events")
    panel.get_by_test_id("node-alert-save").click()
    expect(panel.get_by_test_id("node-alert")).to_have_count(1)
    expect(panel.get_by_test_id("node-alert-what")).to_have_text(
        "threshold: more than 50 events in 10 min sliding → This account's logs"
    )
    with account.http() as http:
        [stored] = http.get(alerts).json()["data"]
    config = stored["alert_config"]
    assert config["general"] == {"name": "Busy webhook"}
    assert config["evaluation"]["window_type"] == "sliding"
    assert config["evaluation"]["window_duration_minutes"] == 10
    assert config["evaluation"]["conditional"]["expressions"] == [
        {"field": ".event_count", "str_operator": "greater", "value": 50, "negate": False}
    ]
    assert config["alert_payload"]["service"] == {
        "name": "log_analysis",
        "subject": "Busy: {{count}} events",
        "severity": "WARNING",
    }

    # Changed in place: the form shows it whole; what it does not show is kept.
    panel.get_by_test_id("node-alert-edit").click()
    expect(panel.get_by_test_id("node-alert-name")).to_have_value("Busy webhook")
    expect(panel.get_by_test_id("node-alert-count")).to_have_value("50")
    expect(panel.get_by_test_id("node-alert-message")).to_have_value("Busy: {{count}} events")
    panel.get_by_test_id("node-alert-count").fill("80")
    panel.get_by_test_id("node-alert-window-type").select_option("tumbling")
    panel.get_by_test_id("node-alert-save").click()
    expect(panel.get_by_test_id("node-alert-what")).to_have_text(
        "threshold: more than 80 events in 10 min tumbling → This account's logs"
    )
    expect(panel.get_by_test_id("node-alert-cancel")).to_be_hidden()
    with account.http() as http:
        [changed] = http.get(alerts).json()["data"]
    assert changed["id"] == stored["id"]
    assert changed["alert_config"]["evaluation"]["conditional"]["expressions"][0]["value"] == 80
    assert changed["alert_config"]["evaluation"]["window_type"] == "tumbling"
    assert changed["alert_config"]["alert_payload"] == config["alert_payload"]

    # A webhook to an address the server may not reach: the API's refusal, shown.
    panel.get_by_test_id("node-alert-name").fill("Local hook")
    panel.get_by_test_id("node-alert-type").select_option("absence")
    expect(panel.get_by_test_id("node-alert-count")).to_be_hidden()
    panel.get_by_test_id("node-alert-service").select_option("webhook")
    panel.get_by_test_id("node-alert-url").fill("http://127.0.0.1:9/hook")
    panel.get_by_test_id("node-alert-save").click()
    expect(panel.get_by_test_id("node-alert-problem")).to_contain_text("non-public address")
    expect(panel.get_by_test_id("node-alert")).to_have_count(1)

    page.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_test_id("node-alert-remove").click()
    expect(panel.get_by_test_id("node-alerts-none")).to_be_visible()
    with account.http() as http:
        assert http.get(alerts).json()["data"] == []


def test_change_alerts_told_to_pagerduty_are_made_and_edited_in_the_form(
    site: Site, page: Page
) -> None:
    account, alerts, panel = _alerts_tab(site, page, "Intake")
    panel.get_by_test_id("node-alert-name").fill("Jumpy intake")
    panel.get_by_test_id("node-alert-type").select_option("change")
    expect(panel.get_by_text("Change of more than (%)")).to_be_visible()
    panel.get_by_test_id("node-alert-count").fill("50")
    expect(panel.get_by_test_id("node-alert-routing-key")).to_be_hidden()
    panel.get_by_test_id("node-alert-service").select_option("pager_duty")
    expect(panel.get_by_test_id("node-alert-url")).to_be_hidden()
    panel.get_by_test_id("node-alert-routing-key").fill("R0UT1NGKEY")
    panel.get_by_test_id("node-alert-severity").select_option("CRITICAL")
    panel.get_by_test_id("node-alert-message").fill("{{name}}: {{count}} events")
    panel.get_by_test_id("node-alert-save").click()
    expect(panel.get_by_test_id("node-alert-what")).to_have_text(
        "change: a change of more than 50% in events in 5 min tumbling → PagerDuty"
    )
    with account.http() as http:
        [stored] = http.get(alerts).json()["data"]
    evaluation = stored["alert_config"]["evaluation"]
    assert (evaluation["alert_type"], evaluation["operation"]) == ("change", "SUM")
    assert evaluation["conditional"]["expressions"] == [
        {
            "field": ".event_count",
            "str_operator": "percent_change_greater",
            "value": 50,
            "negate": False,
        }
    ]
    assert stored["alert_config"]["alert_payload"]["service"] == {
        "name": "pager_duty",
        "routing_key": "R0UT1NGKEY",
        "summary": "{{name}}: {{count}} events",
        "severity": "CRITICAL",
        "source": "tidegate",
        "event_action": "trigger",
    }

    # Edited in place: the form shows it whole, and keeps what it does not show.
    with account.http() as http:
        sent = {key: stored[key] for key in ("inputs", "active", "alert_config")}
        sent["alert_config"]["alert_payload"]["service"]["source"] = "edge-1"
        response = http.put(f"{alerts}/{stored['id']}", json={**sent, "id": stored["id"]})
        assert response.status_code == 200, response.text
    page.reload()
    node(page, "Intake").click()
    panel.get_by_test_id("node-tab-alerts").click()
    panel.get_by_test_id("node-alert-edit").click()
    expect(panel.get_by_test_id("node-alert-type")).to_have_value("change")
    expect(panel.get_by_test_id("node-alert-count")).to_have_value("50")
    expect(panel.get_by_test_id("node-alert-routing-key")).to_have_value("R0UT1NGKEY")
    expect(panel.get_by_test_id("node-alert-severity")).to_have_value("CRITICAL")
    expect(panel.get_by_test_id("node-alert-message")).to_have_value("{{name}}: {{count}} events")
    panel.get_by_test_id("node-alert-count").fill("75")
    panel.get_by_test_id("node-alert-severity").select_option("ERROR")
    panel.get_by_test_id("node-alert-save").click()
    expect(panel.get_by_test_id("node-alert-what")).to_have_text(
        "change: a change of more than 75% in events in 5 min tumbling → PagerDuty"
    )
    with account.http() as http:
        [changed] = http.get(alerts).json()["data"]
    service = changed["alert_config"]["alert_payload"]["service"]
    assert (service["severity"], service["source"]) == ("ERROR", "edge-1")
    assert changed["alert_config"]["evaluation"]["conditional"]["expressions"][0]["value"] == 75
    # Saved: the form is a new alert's again, nothing of the one edited left in it.
    _expect_a_new_alerts_form(panel)

    # Opened for editing, then cancelled: the same.
    panel.get_by_test_id("node-alert-edit").click()
    expect(panel.get_by_test_id("node-alert-routing-key")).to_have_value("R0UT1NGKEY")
    panel.get_by_test_id("node-alert-cancel").click()
    _expect_a_new_alerts_form(panel)


def _expect_a_new_alerts_form(panel: Locator) -> None:
    for testid, value in (
        ("node-alert-name", ""),
        ("node-alert-type", "threshold"),
        ("node-alert-count", "100"),
        ("node-alert-window", "5"),
        ("node-alert-window-type", "tumbling"),
        ("node-alert-service", "log_analysis"),
        ("node-alert-message", ""),
        ("node-alert-severity", "WARNING"),
    ):
        expect(panel.get_by_test_id(testid)).to_have_value(value)
    expect(panel.get_by_test_id("node-alert-routing-key")).to_be_hidden()
    expect(panel.get_by_test_id("node-alert-routing-key")).to_have_value("")
    expect(panel.get_by_test_id("node-alert-url")).to_be_hidden()
    expect(panel.get_by_text("More than (events)")).to_be_visible()
    expect(panel.get_by_test_id("node-alert-cancel")).to_be_hidden()


def test_a_readonly_member_sees_the_graph_without_editing_controls(site: Site, page: Page) -> None:
    account = site.account()
    with account.http() as http:
        pipeline = http.post("/v3/pipeline", json={"title": "Edge"}).json()["data"]
        created = http.post(
            f"/v3/pipeline/{pipeline['id']}/source", json={"type": "http", "title": "Webhook"}
        )
        assert created.status_code == 201, created.text
        source_id = created.json()["data"]["id"]
        alert = http.post(
            f"/v3/pipeline/{pipeline['id']}/source/{source_id}/alert",
            json=alert_body("Quiet webhook", source_id),
        )
        assert alert.status_code == 201, alert.text
    email = make_person(account, name="reader")
    sign_in_as_person(page, site.base_url, email, next_path="/pipelines")
    expect(page.get_by_test_id("pipeline-row")).to_have_count(1)
    expect(page.get_by_test_id("pipeline-create")).to_have_count(0)
    page.get_by_test_id("pipeline-row").get_by_role("link", name="Edge").click()
    expect(node(page, "Webhook")).to_have_count(1)
    expect(node(page, "Webhook").get_by_test_id("node-rate")).to_have_text("no events / 5 min")
    for control in (
        "node-add",
        "pipeline-simulate",
        "pipeline-publish",
        "pipeline-delete",
        "node-port",
    ):
        expect(page.get_by_test_id(control)).to_have_count(0)
    node(page, "Webhook").click()
    panel = page.get_by_test_id("node-panel")
    expect(panel.get_by_test_id("node-config-json")).to_have_text("{}")
    for control in (
        "node-save",
        "node-remove",
        "tap-panel",
        "route-key-create",
        "route-signing-key-add",
    ):
        expect(panel.get_by_test_id(control)).to_have_count(0)
    # The node's alerts are listed, with nothing to add or remove them.
    expect(panel.get_by_test_id("node-alert")).to_have_text(
        "Quiet webhook absence: no events in 15 min tumbling → This account's logs"
    )
    for control in ("node-alert-save", "node-alert-edit", "node-alert-remove"):
        expect(panel.get_by_test_id(control)).to_have_count(0)


def test_a_configuration_the_form_cannot_show_whole_is_edited_as_json(
    site: Site, page: Page
) -> None:
    """A filter stored with the older name of its condition (``condition``, as the
    platform's clients may send it) has a field the generated form has no place for: it
    is shown and saved as JSON, as stored, rather than drawn without it."""
    account = site.account()
    condition = {"expressions": [{"field": ".app", "str_operator": "equal", "value": "api"}]}
    with account.http() as http:
        pipeline = http.post("/v3/pipeline", json={"title": "Legacy"}).json()["data"]
        base = f"/v3/pipeline/{pipeline['id']}"
        source = http.post(f"{base}/source", json={"type": "http", "title": "Webhook"}).json()[
            "data"
        ]
        created = http.post(
            f"{base}/transform",
            json={
                "type": "filter",
                "title": "Old filter",
                "inputs": [source["id"]],
                "user_config": {"condition": condition},
            },
        )
        assert created.status_code == 201, created.text
        filter_id = created.json()["data"]["id"]
    sign_in_with_key(
        page, site.base_url, account.service_key, next_path=f"/pipelines/{pipeline['id']}"
    )
    node(page, "Old filter").click()
    panel = page.get_by_test_id("node-panel")
    expect(panel.get_by_test_id("node-config-note")).to_have_text(
        "Shown as JSON: the form has no field for /condition."
    )
    area = panel.get_by_test_id("node-config-json")
    assert json.loads(area.input_value()) == {"condition": condition}
    changed = {
        "condition": {
            **condition,
            "expressions": [{**condition["expressions"][0], "value": "web"}],
        },
        "action": "drop",
    }
    area.fill(json.dumps(changed))
    panel.get_by_test_id("node-save").click()
    with account.http() as http:

        def saved() -> object:
            return (
                http.get(f"{base}/transform/{filter_id}").json()["data"]["user_config"] == changed
            )

        until(saved, what="the JSON saved as the filter's configuration")


def test_a_nodes_description_is_written_shown_changed_and_cleared(site: Site, page: Page) -> None:
    account = site.account()
    with account.http() as http:
        pipeline = http.post("/v3/pipeline", json={"title": "Described"}).json()["data"]
    base = f"/v3/pipeline/{pipeline['id']}"
    at = f"/pipelines/{pipeline['id']}"
    sign_in_with_key(page, site.base_url, account.service_key, next_path=at)

    # Written with the node (trimmed).
    panel = add_node(page, "source", "http", "Webhook")
    panel.get_by_test_id("node-description").fill("  Partner events, signed\nby the gateway  ")
    panel.get_by_test_id("node-save").click()
    expect(node(page, "Webhook")).to_have_count(1)
    assert _node_description(account, base) == "Partner events, signed\nby the gateway"

    # Shown in the node's panel and its form; changed there.
    node(page, "Webhook").click()
    panel = page.get_by_test_id("node-panel")
    expect(panel.get_by_test_id("node-description-text")).to_have_text(
        "Partner events, signed\nby the gateway"
    )
    expect(panel.get_by_test_id("node-description")).to_have_value(
        "Partner events, signed\nby the gateway"
    )
    panel.get_by_test_id("node-description").fill("Partner events")
    panel.get_by_test_id("node-save").click()
    until(lambda: _node_description(account, base) == "Partner events", what="the new description")

    # Emptied: cleared (null), and no longer shown.
    page.reload()
    node(page, "Webhook").click()
    panel = page.get_by_test_id("node-panel")
    expect(panel.get_by_test_id("node-description")).to_have_value("Partner events")
    panel.get_by_test_id("node-description").fill("   ")
    panel.get_by_test_id("node-save").click()
    until(lambda: _node_description(account, base) is None, what="the description cleared")
    page.reload()
    node(page, "Webhook").click()
    expect(page.get_by_test_id("node-panel").get_by_test_id("node-title")).to_have_value("Webhook")
    expect(page.get_by_test_id("node-panel").get_by_test_id("node-description-text")).to_have_count(
        0
    )

    # A reader sees one, with no form.
    with account.http() as http:
        [stored] = http.get(base).json()["data"]["nodes"]
        changed = http.patch(f"{base}/source/{stored['id']}", json={"description": "Read me"})
        assert changed.status_code == 200, changed.text
    sign_in_as_person(page, site.base_url, make_person(account, name="reader"), next_path=at)
    node(page, "Webhook").click()
    seen = page.get_by_test_id("node-panel")
    expect(seen.get_by_test_id("node-description-text")).to_have_text("Read me")
    expect(seen.get_by_test_id("node-description")).to_have_count(0)


def _node_description(account: Account, base: str) -> str | None:
    with account.http() as http:
        [stored] = http.get(base).json()["data"]["nodes"]
    description: str | None = stored["description"]
    return description


def open_webhook_source(site: Site, page: Page, account: Account) -> str:
    """A pipeline with one `http` source, "Webhook", made through the API and its panel
    opened in the editor; the source's gateway route."""
    with account.http() as http:
        pipeline = http.post("/v3/pipeline", json={"title": "Keys"}).json()["data"]
        source = http.post(
            f"/v3/pipeline/{pipeline['id']}/source", json={"type": "http", "title": "Webhook"}
        ).json()["data"]
    sign_in_with_key(
        page, site.base_url, account.service_key, next_path=f"/pipelines/{pipeline['id']}"
    )
    node(page, "Webhook").click()
    route: str = source["gateway_route_id"]
    return route


def test_a_routes_access_keys_are_listed_made_and_revoked(site: Site, page: Page) -> None:
    account = site.account()
    route = open_webhook_source(site, page, account)
    keys = f"/v3/pipeline/gateway-route/{route}/access-key"
    panel = page.get_by_test_id("node-panel")
    expect(panel.get_by_test_id("route-keys-none")).to_be_visible()

    # Two made: each shown once, both listed by title and last four characters.
    made = []
    for count in (1, 2):
        panel.get_by_test_id("route-key-create").click()
        expect(panel.get_by_test_id("route-key-item")).to_have_count(count)
        made.append(panel.get_by_test_id("route-key").inner_text().strip())
    assert made[0] != made[1]
    for secret in made:
        expect(panel.get_by_test_id("route-keys")).to_contain_text(
            f"Webhook (web app) · …{secret[-4:]}"
        )
    with account.http() as http:
        listed = http.get(keys).json()["data"]
    assert len(listed) == 2

    # The first revoked (after a confirmation): gone from the list and from the API,
    # refused by the gateway; the other still sends.
    first = panel.get_by_test_id("route-key-item").filter(has_text=f"…{made[0][-4:]}")
    page.once("dialog", lambda dialog: dialog.accept())
    first.get_by_test_id("route-key-revoke").click()
    expect(panel.get_by_test_id("route-key-item")).to_have_count(1)
    expect(panel.get_by_test_id("route-key-item")).to_contain_text(f"…{made[1][-4:]}")
    with account.http() as http:
        assert [key["hint"] for key in http.get(keys).json()["data"]] == [made[1][-4:]]
    with live_client(site.base_url) as http:
        for secret, status in ((made[0], 401), (made[1], 200)):
            sent = http.post(
                f"/gateway/{route}", headers={"Authorization": f"Token {secret}"}, json=[{"a": 1}]
            )
            assert sent.status_code == status, sent.text

    # A dialog dismissed revokes nothing.
    page.once("dialog", lambda dialog: dialog.dismiss())
    panel.get_by_test_id("route-key-revoke").click()
    expect(panel.get_by_test_id("route-key-item")).to_have_count(1)
    with account.http() as http:
        assert len(http.get(keys).json()["data"]) == 1


def test_a_routes_signing_keys_are_added_listed_and_removed(site: Site, page: Page) -> None:
    account = site.account()
    route = open_webhook_source(site, page, account)
    with account.http() as http:
        access_key = http.post(
            f"/v3/pipeline/gateway-route/{route}/access-key", json={"title": "sender"}
        ).json()["data"]["key"]
    signing = f"/v3/pipeline/gateway-route/{route}/signing-key"
    body = json.dumps([{"a": 1}]).encode()

    def send(key: str | None) -> int:
        headers = {"Authorization": f"Token {access_key}", "Content-Type": "application/json"}
        if key is not None:
            digest = hmac.new(key.encode(), body, hashlib.sha256).hexdigest()
            headers["X-Hub-Signature"] = f"sha256={digest}"
        with live_client(site.base_url) as http:
            return http.post(f"/gateway/{route}", headers=headers, content=body).status_code

    panel = page.get_by_test_id("node-panel")
    expect(panel.get_by_test_id("route-signing-keys-none")).to_be_visible()
    assert send(None) == 200

    # One made in the browser (shown once, 64 hex characters), one pasted (never shown).
    panel.get_by_test_id("route-signing-key-add").click()
    expect(panel.get_by_test_id("route-signing-key-item")).to_have_count(1)
    made = panel.get_by_test_id("route-signing-key").inner_text().strip()
    assert re.fullmatch(r"[0-9a-f]{64}", made), made
    own = "a key of my own, long enough to be hard to guess"
    panel.get_by_test_id("route-signing-key-input").fill(own)
    panel.get_by_test_id("route-signing-key-add").click()
    expect(panel.get_by_test_id("route-signing-key-item")).to_have_count(2)
    expect(panel.get_by_test_id("route-signing-key")).to_have_count(0)
    expect(panel.get_by_test_id("route-signing-key-input")).to_have_value("")
    with account.http() as http:
        listed = http.get(signing).json()["data"]
    assert [item["id"] for item in listed] == panel.get_by_test_id(
        "route-signing-key-item"
    ).evaluate_all("items => items.map(item => item.dataset.keyId)")
    for item in listed:
        expect(panel.get_by_test_id("route-signing-keys")).to_contain_text(
            f"fingerprint {item['fingerprint']}"
        )
    shown = panel.inner_text()
    assert made not in shown
    assert own not in shown
    assert (send(None), send(made), send(own), send("another key")) == (401, 200, 200, 401)

    # The same key pasted again: the route already holds it, nothing added.
    panel.get_by_test_id("route-signing-key-input").fill(own)
    panel.get_by_test_id("route-signing-key-add").click()
    expect(panel.get_by_test_id("route-signing-key-held")).to_contain_text(listed[1]["fingerprint"])
    expect(panel.get_by_test_id("route-signing-key-item")).to_have_count(2)

    # A dialog dismissed removes nothing; accepted, the made key goes and only the pasted
    # one signs; both gone, no signature is needed again.
    first = panel.get_by_test_id("route-signing-key-item").filter(has_text=listed[0]["fingerprint"])
    page.once("dialog", lambda dialog: dialog.dismiss())
    first.get_by_test_id("route-signing-key-remove").click()
    expect(panel.get_by_test_id("route-signing-key-item")).to_have_count(2)
    page.once("dialog", lambda dialog: dialog.accept())
    first.get_by_test_id("route-signing-key-remove").click()
    expect(panel.get_by_test_id("route-signing-key-item")).to_have_count(1)
    assert (send(made), send(own)) == (401, 200)
    page.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_test_id("route-signing-key-remove").click()
    expect(panel.get_by_test_id("route-signing-keys-none")).to_be_visible()
    with account.http() as http:
        assert http.get(signing).json()["data"] == []
    assert send(None) == 200


KEEP_ERRORS = {
    "conditional": {"expressions": [{"field": ".level", "str_operator": "equal", "value": "error"}]}
}


def open_filter_pipeline(site: Site, page: Page, account: Account) -> tuple[str, str]:
    """A draft "Tried" made through the API: an `http` source, then the filter "Keep
    errors" (KEEP_ERRORS), opened in the editor; the pipeline's path and the filter's."""
    with account.http() as http:
        pipeline = http.post("/v3/pipeline", json={"title": "Tried"}).json()["data"]
        base = f"/v3/pipeline/{pipeline['id']}"
        source = http.post(f"{base}/source", json={"type": "http", "title": "Webhook"})
        created = http.post(
            f"{base}/transform",
            json={
                "type": "filter",
                "title": "Keep errors",
                "inputs": [source.json()["data"]["id"]],
                "user_config": KEEP_ERRORS,
            },
        )
        assert created.status_code == 201, created.text
    sign_in_with_key(
        page, site.base_url, account.service_key, next_path=f"/pipelines/{pipeline['id']}"
    )
    return base, f"{base}/transform/{created.json()['data']['id']}"


def test_the_draft_is_simulated_on_sample_events(site: Site, page: Page) -> None:
    account = site.account()
    base, filter_path = open_filter_pipeline(site, page, account)
    with account.http() as http:
        hole = http.post(
            f"{base}/sink",
            json={"type": "blackhole", "title": "Hole", "inputs": [filter_path.rsplit("/", 1)[1]]},
        )
        assert hole.status_code == 201, hole.text
        draft = [node["id"] for node in http.get(base).json()["data"]["nodes"]]
    page.reload()
    page.get_by_test_id("pipeline-simulate").click()
    panel = page.get_by_test_id("simulate-panel")
    sample = json.loads(panel.get_by_test_id("simulate-events").input_value())
    assert [event["level"] for event in sample] == ["info", "error"]

    # The sample as it comes: each node in run order, with what it took and emitted.
    panel.get_by_test_id("simulate-run").click()
    results = panel.get_by_test_id("simulate-node")
    expect(results).to_have_count(3)
    assert sorted(
        results.evaluate_all("items => items.map(item => item.dataset.nodeId)")
    ) == sorted(draft)
    expect(results.get_by_test_id("simulate-node-counts")).to_have_text(
        ["2 events in", "received 2, emitted 1", "received 1, would store or send 1"]
    )
    # No throttle in the draft: nothing said of the throttle feature.
    expect(panel.get_by_test_id("simulate-results")).not_to_contain_text("Throttles")
    results.nth(2).get_by_test_id("simulate-output").locator("summary").click()
    shown = json.loads(results.nth(2).get_by_test_id("simulate-output").locator("pre").inner_text())
    assert shown == [sample[1]]

    # Events of one's own, checked against the API's answer for the same events.
    own = [{"level": "error", "n": n} for n in range(3)] + [{"level": "debug"}]
    panel.get_by_test_id("simulate-events").fill(json.dumps(own))
    panel.get_by_test_id("simulate-run").click()
    expect(results.get_by_test_id("simulate-node-counts")).to_have_text(
        ["4 events in", "received 4, emitted 3", "received 3, would store or send 3"]
    )
    with account.http() as http:
        answered = http.post(f"{base}/simulate", json={"events": own}).json()["data"]["nodes"]
    results.nth(1).get_by_test_id("simulate-output").locator("summary").click()
    assert (
        json.loads(results.nth(1).get_by_test_id("simulate-output").locator("pre").inner_text())
        == (answered[1]["output"])
    )

    # What is not a list of events is refused in the page, the last results cleared.
    for text, said in (
        ("[{", "not valid JSON"),
        ("[1, 2]", "a JSON object or an array of objects"),
    ):
        panel.get_by_test_id("simulate-events").fill(text)
        panel.get_by_test_id("simulate-run").click()
        expect(panel.get_by_test_id("simulate-error")).to_contain_text(said)
        expect(results).to_have_count(0)

    # One object is one event; closed and opened again, the last events run are kept.
    panel.get_by_test_id("simulate-events").fill(json.dumps({"level": "error"}))
    panel.get_by_test_id("simulate-run").click()
    expect(results.get_by_test_id("simulate-node-counts")).to_have_text(
        ["1 event in", "received 1, emitted 1", "received 1, would store or send 1"]
    )
    expect(panel.get_by_test_id("simulate-error")).to_have_count(0)
    panel.get_by_test_id("simulate-close").click()
    expect(page.get_by_test_id("simulate-panel")).to_have_count(0)
    page.get_by_test_id("pipeline-simulate").click()
    expect(page.get_by_test_id("simulate-events")).to_have_value(json.dumps({"level": "error"}))


def test_a_processors_configuration_is_tried_before_it_is_saved(site: Site, page: Page) -> None:
    account = site.account()
    keep = KEEP_ERRORS
    _base, filter_path = open_filter_pipeline(site, page, account)
    node(page, "Keep errors").click()
    panel = page.get_by_test_id("node-panel")
    panel.get_by_test_id("node-tab-try").click()
    trial = panel.get_by_test_id("node-try")
    sample = json.loads(trial.get_by_test_id("node-try-events").input_value())

    # The configuration as saved: the error line passes, the other is dropped.
    trial.get_by_test_id("node-try-run").click()
    expect(trial.get_by_test_id("node-try-counts")).to_have_text("received 2, emitted 1, dropped 1")
    trial.get_by_test_id("node-try-output").locator("summary").click()
    assert json.loads(trial.get_by_test_id("node-try-output").locator("pre").inner_text()) == [
        sample[1]
    ]

    # Changed in the form and not saved: tried as it stands, the saved one untouched.
    panel.get_by_test_id("node-tab-config").click()
    panel.get_by_test_id("node-config-json-toggle").click()
    changed = {
        "conditional": {"expressions": [{"field": ".app", "str_operator": "equal", "value": "web"}]}
    }
    panel.get_by_test_id("node-config-json").fill(json.dumps(changed))
    panel.get_by_test_id("node-tab-try").click()
    trial.get_by_test_id("node-try-run").click()
    expect(trial.get_by_test_id("node-try-counts")).to_have_text("received 2, emitted 1, dropped 1")
    trial.get_by_test_id("node-try-output").locator("summary").click()
    assert json.loads(trial.get_by_test_id("node-try-output").locator("pre").inner_text()) == [
        sample[0]
    ]
    with account.http() as http:
        assert http.get(filter_path).json()["data"]["user_config"] == keep

    # A configuration the server refuses: its reason, under the processor's pointer; one
    # that is not JSON is not sent.
    panel.get_by_test_id("node-tab-config").click()
    panel.get_by_test_id("node-config-json").fill(json.dumps({"conditional": {"expressions": []}}))
    panel.get_by_test_id("node-tab-try").click()
    trial.get_by_test_id("node-try-run").click()
    expect(trial.get_by_test_id("node-try-error")).to_contain_text("/processor/user_config")
    expect(trial.get_by_test_id("node-try-result")).to_have_count(0)
    panel.get_by_test_id("node-tab-config").click()
    panel.get_by_test_id("node-config-json").fill("{")
    panel.get_by_test_id("node-tab-try").click()
    trial.get_by_test_id("node-try-run").click()
    expect(trial.get_by_test_id("node-try-error")).to_contain_text("cannot be read")
    trial.get_by_test_id("node-try-events").fill("[1]")
    trial.get_by_test_id("node-try-run").click()
    expect(trial.get_by_test_id("node-try-error")).to_contain_text(
        "a JSON object or an array of objects"
    )


def test_a_new_processor_is_tried_before_it_is_added(site: Site, page: Page) -> None:
    """The Add node panel of a processor holds the same trial as a node's Try tab, run
    with the form as it stands; nothing is added until Add node; a source or a
    destination has no trial."""
    account = site.account()
    base, filter_path = open_filter_pipeline(site, page, account)
    panel = add_node(page, "source", "http", "Second")
    expect(panel.get_by_test_id("node-new-try")).to_have_count(0)
    panel.get_by_test_id("node-kind").select_option("destination")
    expect(panel.get_by_test_id("node-new-try")).to_have_count(0)

    panel.get_by_test_id("node-kind").select_option("processor")
    panel.get_by_test_id("node-type").select_option("filter")
    panel.get_by_test_id("node-title").fill("Web only")
    panel.get_by_test_id("node-config-json-toggle").click()
    web_only = {
        "conditional": {"expressions": [{"field": ".app", "str_operator": "equal", "value": "web"}]}
    }
    panel.get_by_test_id("node-config-json").fill(json.dumps(web_only))
    trial = panel.get_by_test_id("node-new-try")
    trial.locator("summary").click()
    events = [{"app": "web", "n": 1}, {"app": "db", "n": 2}, {"app": "web", "n": 3}]
    trial.get_by_test_id("node-try-events").fill(json.dumps(events))
    trial.get_by_test_id("node-try-run").click()
    expect(trial.get_by_test_id("node-try-counts")).to_have_text("received 3, emitted 2, dropped 1")
    trial.get_by_test_id("node-try-output").locator("summary").click()
    assert json.loads(trial.get_by_test_id("node-try-output").locator("pre").inner_text()) == [
        events[0],
        events[2],
    ]
    # Tried, not added: the draft still has its two nodes.
    with account.http() as http:
        assert len(http.get(base).json()["data"]["nodes"]) == 2

    # Another type starts a new trial, with that type's form.
    panel.get_by_test_id("node-type").select_option("dedupe")
    expect(trial.get_by_test_id("node-try-result")).to_have_count(0)
    panel.get_by_test_id("node-type").select_option("filter")
    panel.get_by_test_id("node-config-json-toggle").click()
    panel.get_by_test_id("node-config-json").fill(json.dumps(web_only))
    panel.get_by_test_id("node-input").filter(has_text="Keep errors").locator("input").check()
    panel.get_by_test_id("node-save").click()
    expect(node(page, "Web only")).to_have_count(1)
    with account.http() as http:
        nodes = http.get(base).json()["data"]["nodes"]
        added = [item for item in nodes if item.get("title") == "Web only"]
        assert [item["user_config"] for item in added] == [web_only]
        assert added[0]["inputs"] == [filter_path.rsplit("/", 1)[1]]


def test_the_nodes_counts_are_summed_over_the_window_chosen(site: Site, page: Page) -> None:
    """The counts on the graph are over the last 5 minutes at first, then the last hour
    or day as chosen: events counted 30 minutes and 3 hours ago (written into the
    server's usage metrics, as its workers write them) join as the window takes them."""
    account = site.account()
    base, filter_path = open_filter_pipeline(site, page, account)
    filter_id = filter_path.rsplit("/", 1)[1]
    with account.http() as http:
        pipeline_id = http.get(base).json()["data"]["id"]
    minute = now_ms() // 60_000 * 60_000
    with closing(sqlite3.connect(site.data_dir / "tidegate.sqlite3", timeout=60)) as db, db:
        db.executemany(
            "INSERT INTO pipeline_usage (pipeline_id, component_id, bucket_ms, account_id,"
            " ingress_events, ingress_bytes, egress_events, egress_bytes)"
            " VALUES (?, ?, ?, ?, ?, 0, ?, 0)",
            [
                (pipeline_id, filter_id, minute - 2 * 60_000, account.account_id, 4, 1),
                (pipeline_id, filter_id, minute - 30 * 60_000, account.account_id, 10, 5),
                (pipeline_id, filter_id, minute - 180 * 60_000, account.account_id, 100, 50),
            ],
        )
    page.reload()
    rate = node(page, "Keep errors").get_by_test_id("node-rate")
    window = page.get_by_test_id("pipeline-rate-window")
    expect(window).to_have_value("5m")
    expect(rate).to_have_text("4 in · 1 out / 5 min")
    window.select_option("1h")
    expect(rate).to_have_text("14 in · 6 out / 1 hour")
    window.select_option("24h")
    expect(rate).to_have_text("114 in · 56 out / 24 hours")
    expect(node(page, "Webhook").get_by_test_id("node-rate")).to_have_text("no events / 24 hours")
    window.select_option("5m")
    expect(rate).to_have_text("4 in · 1 out / 5 min")

    # The node's Events tab charts them per minute over the same window, summed in words.
    node(page, "Keep errors").click()
    panel = page.get_by_test_id("node-panel")
    panel.get_by_test_id("node-tab-events").click()
    summary = panel.get_by_test_id("node-events-summary")
    expect(summary).to_contain_text("4 in · 1 out over the last 5 min; busiest minute ")
    expect(summary).to_contain_text("(4 in)")
    expect(panel.get_by_test_id("node-events-chart").locator("canvas")).to_have_count(1)
    window.select_option("1h")
    expect(summary).to_contain_text("14 in · 6 out over the last 1 hour; busiest minute ")
    expect(summary).to_contain_text("(10 in)")
    window.select_option("24h")
    expect(summary).to_contain_text("114 in · 56 out over the last 24 hours")
    expect(summary).to_contain_text("(100 in)")
    node(page, "Webhook").click()
    page.get_by_test_id("node-panel").get_by_test_id("node-tab-events").click()
    expect(page.get_by_test_id("node-events-summary")).to_have_text(
        "No events over the last 24 hours."
    )


# A route's arm: the error events, on its output `errors`.
ERRORS_ARM = {
    "label": "Errors",
    "output_name": "errors",
    "logical_operation": "AND",
    "expressions": [{"field": ".level", "str_operator": "equal", "value": "error"}],
}


def test_one_output_of_a_route_is_tapped_wired_or_not(site: Site, page: Page) -> None:
    """A route's tap shows what it sends on (its wired arm) at first; its `_unmatched`
    output, wired to nothing, is tapped alone when chosen."""
    account = site.account()
    with account.http() as http:
        pipeline = http.post("/v3/pipeline", json={"title": "Routed"}).json()["data"]
        base = f"/v3/pipeline/{pipeline['id']}"
        source = http.post(f"{base}/source", json={"type": "http", "title": "Webhook"}).json()
        source_id = source["data"]["id"]
        route = http.post(
            f"{base}/processor",
            json={
                "type": "route",
                "title": "Split",
                "user_config": {"conditionals": [ERRORS_ARM]},
                "inputs": [source_id],
            },
        ).json()["data"]
        made = http.post(
            f"{base}/destination",
            json={"type": "blackhole", "title": "Void", "inputs": [f"{route['id']}.errors"]},
        )
        assert made.status_code == 201, made.text
        assert http.post(f"{base}/publish").status_code == 200
        key = http.post(
            f"/v3/pipeline/gateway-route/{source['data']['gateway_route_id']}/access-key",
            json={"type": "generated"},
        ).json()["data"]["key"]
    sign_in_with_key(
        page, site.base_url, account.service_key, next_path=f"/pipelines/{pipeline['id']}"
    )
    node(page, "Split").click()
    page.get_by_test_id("node-panel").get_by_test_id("node-tab-tap").click()
    tap = page.get_by_test_id("tap-panel")
    choice = tap.get_by_test_id("tap-output")
    expect(choice.locator("option")).to_have_text(
        ["all it sends on", "main output", "output errors", "output _unmatched"]
    )

    def send() -> None:
        with live_client(site.base_url) as http:
            response = http.post(
                f"/gateway/{source['data']['gateway_route_id']}",
                headers={"Authorization": f"Token {key}"},
                json=[{"level": "error", "n": 1}, {"level": "info", "n": 2}],
            )
            assert response.status_code == 200, response.text

    def caught() -> list[tuple[str, int]]:
        texts = tap.get_by_test_id("tap-event").all_inner_texts()
        return [(json.loads(text)["level"], json.loads(text)["n"]) for text in texts]

    tap.get_by_test_id("tap-start").click()
    expect(tap.get_by_test_id("tap-status")).to_contain_text("listening")
    expect(choice).to_be_disabled()
    send()
    expect(tap.get_by_test_id("tap-event")).to_have_count(1)
    assert caught() == [("error", 1)]
    tap.get_by_test_id("tap-stop").click()

    choice.select_option("_unmatched")
    tap.get_by_test_id("tap-start").click()
    expect(tap.get_by_test_id("tap-status")).to_contain_text("listening")
    send()
    expect(tap.get_by_test_id("tap-event")).to_have_count(1)
    assert caught() == [("info", 2)]
    tap.get_by_test_id("tap-stop").click()


def saved_inputs(account: Account, base: str, node_id: str) -> list[str]:
    """The inputs the API has for the processor or destination ``node_id`` of the
    pipeline at ``base``."""
    with account.http() as http:
        for kind in ("processor", "destination"):
            answer = http.get(f"{base}/{kind}/{node_id}")
            if answer.status_code == 200:
                found: list[str] = answer.json()["data"]["inputs"]
                return found
    raise AssertionError(node_id)


def unwired_pipeline(
    site: Site, page: Page, account: Account, *nodes: tuple[str, dict[str, object]]
) -> tuple[str, dict[str, str]]:
    """A pipeline of the account with ``nodes`` (kind, body), none an input of another,
    opened on the page signed in with the account's key: its API path and the nodes' ids
    by title."""
    with account.http() as http:
        pipeline = http.post("/v3/pipeline", json={"title": "Wired by hand"}).json()["data"]
        base = f"/v3/pipeline/{pipeline['id']}"
        made = {}
        for kind, body in nodes:
            answer = http.post(f"{base}/{kind}", json=body)
            assert answer.status_code == 201, answer.text
            made[str(body["title"])] = answer.json()["data"]["id"]
    sign_in_with_key(
        page, site.base_url, account.service_key, next_path=f"/pipelines/{pipeline['id']}"
    )
    return base, made


def _drag(page: Page, start: Locator, onto: Locator) -> None:
    """Press on ``start``'s middle, move over ``onto``'s in steps, release there."""
    a, b = start.bounding_box(), onto.bounding_box()
    assert a is not None
    assert b is not None
    page.mouse.move(a["x"] + a["width"] / 2, a["y"] + a["height"] / 2)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2, steps=8)
    page.mouse.up()


def test_nodes_are_connected_by_dragging_a_port_and_disconnected_by_a_click(
    site: Site, page: Page
) -> None:
    """A source's and a processor's dot dragged onto the next node makes it that node's
    input (saved through the API, drawn as an edge); onto a source it is refused with a
    reason; an edge clicked (and confirmed) is taken out."""
    account = site.account()
    base, made = unwired_pipeline(
        site,
        page,
        account,
        ("source", {"type": "http", "title": "In"}),
        ("processor", {"type": "filter", "title": "Errors", "user_config": KEEP_ERRORS}),
        ("destination", {"type": "blackhole", "title": "Out"}),
    )
    graph = page.get_by_test_id("pipeline-graph")
    expect(graph.locator("path.edge")).to_have_count(0)
    # A destination has no port: nothing leaves it.
    expect(node(page, "Out").get_by_test_id("node-port")).to_have_count(0)

    def inputs(title: str) -> list[str]:
        return saved_inputs(account, base, made[title])

    _drag(page, node(page, "In").get_by_test_id("node-port"), node(page, "Errors").locator("rect"))
    expect(graph.locator("path.edge")).to_have_count(1)
    assert inputs("Errors") == [made["In"]]
    _drag(page, node(page, "Errors").get_by_test_id("node-port"), node(page, "Out").locator("rect"))
    expect(graph.locator("path.edge")).to_have_count(2)
    assert inputs("Out") == [made["Errors"]]
    expect(page.get_by_test_id("edge-dragging")).to_have_count(0)

    # Onto a source: refused, said, nothing saved.
    _drag(page, node(page, "Errors").get_by_test_id("node-port"), node(page, "In").locator("rect"))
    expect(page.get_by_test_id("connect-problem")).to_contain_text(
        "is a source: it takes no inputs"
    )
    expect(graph.locator("path.edge")).to_have_count(2)

    # An edge clicked, the confirmation accepted: disconnected (dismissed: kept). (A
    # straight edge's box has no height, which Playwright takes for hidden: forced.)
    edge = graph.locator(f"[data-testid=pipeline-edge][data-to='{made['Errors']}']")
    page.once("dialog", lambda dialog: dialog.dismiss())
    edge.click(force=True)
    expect(graph.locator("path.edge")).to_have_count(2)
    page.once("dialog", lambda dialog: dialog.accept())
    edge.click(force=True)
    expect(graph.locator("path.edge")).to_have_count(1)
    assert inputs("Errors") == []
    assert inputs("Out") == [made["Errors"]]


def test_a_named_output_is_connected_by_dragging_its_own_port(site: Site, page: Page) -> None:
    """A node with named outputs (a route's arm and its `_unmatched`) has a port for each
    below its main one; dragged onto a node, that output becomes the node's input, and
    its edge leaves from that port. A node without named outputs has its main port only."""
    account = site.account()
    base, made = unwired_pipeline(
        site,
        page,
        account,
        ("source", {"type": "http", "title": "In"}),
        (
            "processor",
            {"type": "route", "title": "Split", "user_config": {"conditionals": [ERRORS_ARM]}},
        ),
        ("processor", {"type": "filter", "title": "Keep", "user_config": KEEP_ERRORS}),
        ("destination", {"type": "blackhole", "title": "Bad"}),
        ("destination", {"type": "blackhole", "title": "Rest"}),
    )
    split = node(page, "Split")
    named = split.get_by_test_id("node-output-port")
    expect(named).to_have_count(2)
    assert [port.get_attribute("data-output") for port in named.all()] == ["errors", "_unmatched"]
    expect(split.get_by_test_id("node-output-name")).to_have_text(["errors", "_unmatched"])
    expect(split.get_by_test_id("node-port")).to_have_count(1)
    expect(node(page, "Keep").get_by_test_id("node-output-port")).to_have_count(0)
    expect(node(page, "Keep").get_by_test_id("node-port")).to_have_count(1)

    errors = named.and_(page.locator("[data-output=errors]"))
    _drag(page, errors, node(page, "Bad").locator("rect"))
    edge = page.locator(f"path.edge.named[data-to='{made['Bad']}']")
    expect(edge).to_have_count(1)
    assert saved_inputs(account, base, made["Bad"]) == [f"{made['Split']}.errors"]
    # The edge leaves from the port it was dragged from.
    start = re.match(r"M([\d.]+),([\d.]+) ", edge.get_attribute("d") or "")
    assert start is not None
    port = named.and_(page.locator("[data-output=errors]"))
    assert (float(start[1]), float(start[2])) == (
        float(port.get_attribute("cx") or "nan"),
        float(port.get_attribute("cy") or "nan"),
    )

    unmatched = named.and_(page.locator("[data-output=_unmatched]"))
    _drag(page, unmatched, node(page, "Rest").locator("rect"))
    expect(page.locator(f"path.edge.named[data-to='{made['Rest']}']")).to_have_count(1)
    assert saved_inputs(account, base, made["Rest"]) == [f"{made['Split']}._unmatched"]
    # The main output, beside them, onto a processor.
    _drag(page, split.get_by_test_id("node-port"), node(page, "Keep").locator("rect"))
    expect(page.locator(f"path.edge[data-to='{made['Keep']}']:not(.named)")).to_have_count(1)
    assert saved_inputs(account, base, made["Keep"]) == [made["Split"]]
