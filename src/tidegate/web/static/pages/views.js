// Saved views: open (as a search), rename, delete, grouped by category.
import { del, get, put } from "../api.js";
import { clear, errorBox, field, fillFrom, formatTime, h, listTable, onSubmit, splitList } from "../dom.js";
import { session } from "../session.js";
import { VIEWS, viewId, viewsAvailable } from "../views.js";
import { searchUrl } from "./search.js";

function categoriesOf(view) {
  const raw = view.category ?? view.categories ?? [];
  const list = Array.isArray(raw) ? raw : [raw];
  const names = list.map((item) => (typeof item === "string" ? item : item && item.name)).filter(Boolean);
  return names.length ? names : ["Uncategorized"];
}

function openUrl(view) {
  return searchUrl({
    q: view.query || "",
    range: { preset: "24h" },
    hosts: view.hosts || [],
    apps: view.apps || [],
    levels: view.levels || [],
  });
}

export async function render(main) {
  main.append(h("h1", {}, "Views"));
  if (!(await viewsAvailable())) {
    main.append(h("p", { class: "muted" }, "This server has no views API yet."));
    return;
  }
  const box = h("div", {});
  main.append(box);

  async function load() {
    clear(box);
    let views;
    try {
      views = await get(VIEWS);
    } catch (error) {
      box.append(errorBox(error));
      return;
    }
    if (!views.length) {
      box.append(h("p", { class: "muted" }, "No views yet: save a search from the search page."));
      return;
    }
    const groups = new Map();
    for (const view of views) for (const name of categoriesOf(view)) groups.set(name, [...(groups.get(name) || []), view]);
    for (const [name, members] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
      box.append(
        h("h2", {}, name),
        h(
          "ul",
          { class: "rows" },
          members.map((view) =>
            h(
              "li",
              { class: "row", testid: "view-row" },
              h("a", { href: openUrl(view), class: "grow" }, view.name),
              h("code", { class: "muted" }, view.query || ""),
              h("span", { class: "muted" }, `${(view.channels || []).length} alert channel(s)`),
              h("button", { type: "button", testid: "view-alerts", onclick: (event) => showAlerts(event.target.closest("li"), view, load) }, "Alerts"),
              session.can("content") ? [renameButton(view, load), deleteButton(view, load)] : null,
            ),
          ),
        ),
      );
    }
  }
  await load();
}

function renameButton(view, reload) {
  return h(
    "button",
    {
      type: "button",
      class: "edit",
      onclick: async (event) => {
        const name = prompt("New name", view.name);
        if (!name || name === view.name) return;
        try {
          await put(`${VIEWS}/${encodeURIComponent(viewId(view))}`, { ...view, name });
          reload();
        } catch (error) {
          event.target.after(errorBox(error));
        }
      },
    },
    "Rename",
  );
}

function deleteButton(view, reload) {
  return h(
    "button",
    {
      type: "button",
      class: "edit danger",
      onclick: async (event) => {
        if (!confirm(`Delete the view “${view.name}”?`)) return;
        try {
          await del(`${VIEWS}/${encodeURIComponent(viewId(view))}`);
          reload();
        } catch (error) {
          event.target.after(errorBox(error));
        }
      },
    },
    "Delete",
  );
}

// A view's alert channels (an alert fires on the view's lines: presence or absence of
// lines within an interval, or at once) and its delivery log.
function showAlerts(row, view, reload) {
  const old = row.nextElementSibling;
  if (old && old.classList.contains("alerts")) return old.remove();
  const log = h("div", {});
  const panel = h("li", { class: "alerts card" }, h("h3", {}, "Alert channels"), channelList(view), session.can("content") ? alertForm(view, reload) : null, h("h3", {}, "Delivery log"), log);
  row.after(panel);
  fillFrom(log, () => get(`${VIEWS}/${encodeURIComponent(viewId(view))}/alerts`), (entries) =>
    entries.length
      ? listTable(
          ["Fired", "Event", "Channel", "Status", "Attempts", "Lines", "Error"],
          entries.map((entry) =>
            h("tr", { testid: "delivery-row" }, h("td", {}, formatTime(entry.fired)), h("td", {}, entry.event), h("td", {}, `${entry.integration} #${entry.channel}`), h("td", {}, entry.status), h("td", {}, String(entry.attempts)), h("td", {}, String(entry.count)), h("td", {}, entry.last_error || "")),
          ),
        )
      : h("p", { class: "muted" }, "Nothing delivered yet."),
  );
}

function channelList(view) {
  const channels = view.channels || [];
  if (!channels.length) return h("p", { class: "muted" }, "No alerts on this view.");
  return h(
    "ul",
    {},
    channels.map((channel) =>
      h("li", {}, `${channel.integration}: ${channel.url || [].concat(channel.emails || []).join(", ") || ""} · ${channel.operator || "presence"}${channel.immediate ? ", at once" : ` of ${channel.triggerlimit || 1} line(s) in ${channel.triggerinterval || "15m"}`}`),
    ),
  );
}

function alertForm(view, reload) {
  const integration = h("select", { testid: "alert-integration" }, ["webhook", "email", "slack", "pagerduty"].map((name) => h("option", { value: name }, name)));
  const target = h("input", { placeholder: "https://… or a@example.com, b@example.com", testid: "alert-target" });
  const operator = h("select", {}, h("option", { value: "presence" }, "when lines appear"), h("option", { value: "absence" }, "when lines stop"));
  const limit = h("input", { type: "number", min: 1, value: 1 });
  const interval = h("select", {}, ["30", "1m", "5m", "15m", "30m", "1h", "6h", "12h", "24h"].map((v) => h("option", { value: v, selected: v === "15m" }, v)));
  const immediate = h("input", { type: "checkbox" });
  const problem = h("div", {});
  const form = h("form", { class: "inline-form edit" }, field("Send to", integration), field("Address", target), field("Fire", operator), field("Lines", limit), field("Within", interval), h("label", { class: "check" }, immediate, " at once"), h("button", { type: "submit", class: "primary", testid: "alert-add" }, "Add alert"), problem);
  onSubmit(form, problem, async () => {
    const channel = { integration: integration.value, operator: operator.value, triggerlimit: Number(limit.value), triggerinterval: interval.value, immediate: immediate.checked };
    if (integration.value === "email") channel.emails = splitList(target.value);
    else if (integration.value === "pagerduty") channel.key = target.value.trim();
    else channel.url = target.value.trim();
    await put(`${VIEWS}/${encodeURIComponent(viewId(view))}`, { ...view, channels: [...(view.channels || []), channel] });
    reload();
  });
  return form;
}
