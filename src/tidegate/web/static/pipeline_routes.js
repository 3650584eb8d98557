// The account's gateway routes on the pipelines page: each with its type and the
// sources (of which pipelines) bound to it; for a role that manages pipelines, a new
// route, and each route's title and description changed, its access and signing keys
// (route_keys.js), and the route deleted (refused while sources are bound to it: the
// server names them).
import { ApiError, del, get, post, put } from "./api.js";
import { clear, createForm, errorBox, field, formatTime, h } from "./dom.js";
import { routeAccess } from "./route_keys.js";

function usedBy(route, pipelines) {
  if (!route.sources.length) return h("span", { class: "muted" }, "no source");
  const counts = new Map();
  for (const source of route.sources) counts.set(source.pipeline_id, (counts.get(source.pipeline_id) || 0) + 1);
  return [...counts].map(([id, count], index) => [
    index ? ", " : "",
    h("a", { href: `/pipelines/${encodeURIComponent(id)}` }, pipelines.get(id) || id),
    count > 1 ? ` (${count} sources)` : "",
  ]);
}

// Title, description and consumer id (the route is replaced whole: its type as it is),
// the keys, and Delete.
function routeDetail(route, { onChanged }) {
  const title = h("input", { required: true, maxlength: 250, value: route.title, testid: "route-title" });
  const description = h("input", { maxlength: 1000, value: route.description || "", testid: "route-description" });
  // Stored and answered as it is (the platform's clients send "" on create).
  const consumer = h("input", { maxlength: 250, value: route.consumer_id || "", testid: "route-consumer-id", placeholder: "optional" });
  const problem = h("div", {});
  const path = `/v3/pipeline/gateway-route/${encodeURIComponent(route.id)}`;
  const form = h(
    "form",
    { class: "inline-form edit" },
    field("Title", title),
    field("Description", description),
    field("Consumer id", consumer),
    h("button", { type: "submit", class: "primary", testid: "route-save" }, "Save route"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(problem);
    try {
      await put(path, { title: title.value.trim(), description: description.value.trim() || null, type: route.type, consumer_id: consumer.value.trim() });
    } catch (error) {
      problem.append(h("div", { testid: "route-problem" }, errorBox(error)));
      return;
    }
    await onChanged(route.id);
  });
  const remove = h("button", { type: "button", class: "danger", testid: "route-delete" }, "Delete route");
  remove.addEventListener("click", async () => {
    if (!confirm(`Delete the route “${route.title}” with its access and signing keys? Senders using it are refused from then on.`)) return;
    clear(problem);
    try {
      await del(path);
    } catch (error) {
      const said = error instanceof ApiError && error.status === 409 ? `Not deleted: ${error.message}` : error.message;
      problem.append(h("div", { class: "error", role: "alert", testid: "route-problem" }, said));
      return;
    }
    await onChanged(null);
  });
  return h("div", { class: "route-detail", testid: "route-detail" }, form, routeAccess(route.id, route.title), h("div", { class: "buttons" }, remove), problem);
}

export async function routesSection({ canEdit, pipelines }) {
  const section = h("section", { class: "routes", testid: "routes" });
  const names = new Map(pipelines.map((pipeline) => [pipeline.id, pipeline.title]));
  let open = null;
  // The push source types, from the components' catalogue (those a route serves): asked
  // once, for the new route's form, however often the list is drawn again.
  const types = canEdit
    ? get("/v3/pipeline/component-type")
        .then((answer) => answer.data.filter((each) => each.kind === "source" && each.gateway_route).map((each) => each.type))
        .catch(() => ["http"])
    : null;

  async function draw() {
    let routes;
    try {
      routes = (await get("/v3/pipeline/gateway-route")).data || [];
    } catch (error) {
      clear(section).append(h("h2", {}, "Gateway routes"), errorBox(error));
      return;
    }
    const rows = [];
    for (const route of routes) {
      const manage = canEdit ? h("button", { type: "button", class: "link", testid: "route-manage", "aria-expanded": String(open === route.id) }, open === route.id ? "Close" : "Manage") : null;
      rows.push(
        h(
          "tr",
          { testid: "route-row", "data-route-id": route.id },
          h("td", {}, h("strong", {}, route.title), route.description ? h("div", { class: "muted small" }, route.description) : null),
          h("td", {}, route.type),
          h("td", { testid: "route-used-by" }, usedBy(route, names)),
          h("td", {}, formatTime(Date.parse(route.created_at)).slice(0, 16)),
          canEdit ? h("td", {}, manage) : null,
        ),
      );
      if (manage) {
        manage.addEventListener("click", () => {
          open = open === route.id ? null : route.id;
          draw();
        });
      }
      if (open === route.id) {
        rows.push(h("tr", { class: "detail" }, h("td", { colspan: 5 }, routeDetail(route, { onChanged: (id) => ((open = id), draw()) }))));
      }
    }
    clear(section).append(
      h("h2", {}, "Gateway routes"),
      h("p", { class: "muted" }, "Where push sources receive events (POST /gateway/<route id> with one of its access keys). Several sources, of several pipelines, may share one."),
      canEdit ? newRouteForm(draw) : null,
      routes.length
        ? h(
            "table",
            { class: "list" },
            h("thead", {}, h("tr", {}, ["Title", "Type", "Used by", "Made", canEdit ? "" : null].filter((t) => t !== null).map((t) => h("th", {}, t)))),
            h("tbody", {}, rows),
          )
        : h("p", { class: "muted", testid: "routes-none" }, "No gateway route yet: one is made with each new push source, or here."),
    );
  }

  function newRouteForm(onMade) {
    const type = h("select", { testid: "route-new-type" });
    types.then((found) => type.append(...found.map((name) => h("option", { value: name, selected: name === "http" }, name))));
    const title = h("input", { required: true, maxlength: 250, placeholder: "Route title", testid: "route-new-title" });
    const form = createForm({
      label: "New route",
      input: title,
      button: "Create route",
      buttonTestid: "route-create",
      create: async (text) => {
        open = (await post("/v3/pipeline/gateway-route", { title: text, type: type.value })).data.id;
        await onMade();
      },
    });
    form.insertBefore(field("Type", type), form.querySelector("button"));
    return form;
  }

  await draw();
  return section;
}
