"""The account's gateway routes on the pipelines page, in a real browser (docs/web.md,
"Gateway routes"): listed with their type and the pipelines whose sources use them; a
route made, renamed, given keys and deleted, every step checked against the public API;
a route still used refused with the server's reason; a readonly member sees the list
and no control."""

from __future__ import annotations

from playwright.sync_api import Page, expect
from tests.live import live_client
from tests.web.conftest import Site
from tests.web.harness import make_person, sign_in_as_person, sign_in_with_key

ROUTES = "/v3/pipeline/gateway-route"


def test_routes_are_listed_made_renamed_keyed_and_deleted(site: Site, page: Page) -> None:
    account = site.account()
    with account.http() as http:
        pipeline = http.post("/v3/pipeline", json={"title": "Edge"}).json()["data"]
        source = http.post(
            f"/v3/pipeline/{pipeline['id']}/source", json={"type": "http", "title": "Webhook"}
        ).json()["data"]
        spare = http.post(ROUTES, json={"title": "From Terraform", "type": "splunk-hec"})
        assert spare.status_code == 201, spare.text
        route_types = http.get("/openapi.json").json()["components"]["schemas"][
            "GatewayRouteCreate"
        ]["properties"]["type"]["enum"]
    bound = source["gateway_route_id"]
    catalogue: list[str] = []
    page.on(
        "request",
        lambda request: (
            catalogue.append(request.url) if "/v3/pipeline/component-type" in request.url else None
        ),
    )
    sign_in_with_key(page, site.base_url, account.service_key, next_path="/pipelines")
    routes = page.get_by_test_id("routes")
    rows = routes.get_by_test_id("route-row")
    expect(rows).to_have_count(2)
    used = routes.locator(f'[data-testid="route-row"][data-route-id="{bound}"]')
    expect(used.get_by_test_id("route-used-by")).to_have_text("Edge")
    expect(used.get_by_role("link", name="Edge")).to_have_attribute(
        "href", f"/pipelines/{pipeline['id']}"
    )
    unused = routes.locator(
        f'[data-testid="route-row"][data-route-id="{spare.json()["data"]["id"]}"]'
    )
    expect(unused).to_contain_text("From Terraform")
    expect(unused).to_contain_text("splunk-hec")
    expect(unused.get_by_test_id("route-used-by")).to_have_text("no source")

    # A new route: every type the API takes is offered, http first chosen.
    type_select = routes.get_by_test_id("route-new-type")
    expect(type_select.locator("option")).to_have_count(len(route_types))
    assert sorted(type_select.locator("option").all_inner_texts()) == sorted(route_types)
    expect(type_select).to_have_value("http")
    routes.get_by_test_id("route-new-title").fill("Fluent in")
    type_select.select_option("fluent")
    routes.get_by_test_id("route-create").click()
    expect(rows).to_have_count(3)
    with account.http() as http:
        [made] = [r for r in http.get(ROUTES).json()["data"] if r["title"] == "Fluent in"]
    assert (made["type"], made["sources"]) == ("fluent", [])
    detail = routes.get_by_test_id("route-detail")
    expect(detail).to_have_count(1)
    expect(detail.get_by_test_id("route-title")).to_have_value("Fluent in")

    # Renamed, described and given a consumer id (shown as the API answers it, "" at
    # first): the type kept.
    consumer = detail.get_by_test_id("route-consumer-id")
    expect(consumer).to_have_value(made["consumer_id"])
    detail.get_by_test_id("route-title").fill("Fluent Bit")
    detail.get_by_test_id("route-description").fill("from the edge nodes")
    consumer.fill(" edge-consumer ")
    detail.get_by_test_id("route-save").click()
    row = routes.locator(f'[data-testid="route-row"][data-route-id="{made["id"]}"]')
    expect(row).to_contain_text("Fluent Bit")
    expect(row).to_contain_text("from the edge nodes")
    with account.http() as http:
        changed = http.get(f"{ROUTES}/{made['id']}").json()["data"]
    assert (changed["title"], changed["description"], changed["type"]) == (
        "Fluent Bit",
        "from the edge nodes",
        "fluent",
    )
    assert (made["consumer_id"], changed["consumer_id"]) == ("", "edge-consumer")
    expect(routes.get_by_test_id("route-consumer-id")).to_have_value("edge-consumer")

    # Its keys: an access key made (shown once), a signing key pasted.
    detail = routes.get_by_test_id("route-detail")
    detail.get_by_test_id("route-key-create").click()
    expect(detail.get_by_test_id("route-key-item")).to_have_count(1)
    secret = detail.get_by_test_id("route-key").inner_text().strip()
    detail.get_by_test_id("route-signing-key-input").fill("a signing key from the edge")
    detail.get_by_test_id("route-signing-key-add").click()
    expect(detail.get_by_test_id("route-signing-key-item")).to_have_count(1)
    with account.http() as http:
        [access] = http.get(f"{ROUTES}/{made['id']}/access-key").json()["data"]
        assert access["hint"] == secret[-4:]
        assert access["title"] == "Fluent Bit (web app)"
        assert len(http.get(f"{ROUTES}/{made['id']}/signing-key").json()["data"]) == 1

    # Deleted after a confirmation (dismissed first: nothing happens); its key then opens
    # nothing.
    page.once("dialog", lambda dialog: dialog.dismiss())
    detail.get_by_test_id("route-delete").click()
    expect(rows).to_have_count(3)
    page.once("dialog", lambda dialog: dialog.accept())
    detail.get_by_test_id("route-delete").click()
    expect(rows).to_have_count(2)
    with account.http() as http:
        assert http.get(f"{ROUTES}/{made['id']}").status_code == 404
    with live_client(site.base_url) as http:
        sent = http.post(
            f"/gateway/{made['id']}", headers={"Authorization": f"Token {secret}"}, json={}
        )
        assert sent.status_code in (401, 404), sent.text

    # The route a source uses is not deleted: the server's reason is shown.
    used.get_by_test_id("route-manage").click()
    page.once("dialog", lambda dialog: dialog.accept())
    routes.get_by_test_id("route-detail").get_by_test_id("route-delete").click()
    problem = routes.get_by_test_id("route-problem")
    expect(problem).to_contain_text("Not deleted")
    expect(problem).to_contain_text(pipeline["id"])
    expect(rows).to_have_count(2)
    with account.http() as http:
        assert http.get(f"{ROUTES}/{bound}").status_code == 200
    # The types were asked once, however often the list was drawn again.
    assert len(catalogue) == 1, catalogue

    # A reader sees the routes, nothing to change them with.
    sign_in_as_person(
        page, site.base_url, make_person(account, name="reader"), next_path="/pipelines"
    )
    expect(page.get_by_test_id("route-row")).to_have_count(2)
    for control in ("route-manage", "route-create", "route-new-title"):
        expect(page.get_by_test_id(control)).to_have_count(0)
