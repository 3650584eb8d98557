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

// The view as a search: over the last 24 hours, or `range` (an alert's window).
export function openUrl(view, range = { preset: "24h" }) {
  return searchUrl({
    q: view.query || "",
    range,
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
  const panel = h("li", { class: "alerts card" }, h("h3", {}, "Alert channels"), channelList(view, reload), session.can("content") ? alertForm(view, reload) : null, h("h3", {}, "Delivery log"), log);
  row.after(panel);
  fillFrom(log, () => get(`${VIEWS}/${encodeURIComponent(viewId(view))}/alerts`), (entries) =>
    entries.length
      ? listTable(
          ["Fired", "Event", "Channel", "Status", "Attempts", "Lines", "Error"],
          entries.map((entry) =>
            h("tr", { testid: "delivery-row" }, h("td", {}, formatTime(entry.fired)), h("td", {}, entry.event), h("td", {}, `${entry.integration} #${entry.channel}`), h("td", {}, entry.status), h("td", {}, String(entry.attempts)), h("td", {}, firedLines(entry)), h("td", {}, entry.last_error || "")),
          ),
        )
      : h("p", { class: "muted" }, "Nothing delivered yet."),
  );
}

// The count, and the lines that made it fire (the server keeps up to ten, and shows a
// person in groups those of their scope) behind it.
function firedLines(entry) {
  const lines = entry.lines || [];
  if (!lines.length) return String(entry.count);
  return h(
    "details",
    { testid: "delivery-lines" },
    h("summary", {}, String(entry.count)),
    h("ul", { class: "fired-lines" }, lines.map((line) => h("li", { testid: "delivery-line" }, h("span", { class: "muted" }, [line._host, line._app].filter(Boolean).join(" / ")), " ", line._line || ""))),
  );
}

const putChannels = (view, channels) => put(`${VIEWS}/${encodeURIComponent(viewId(view))}`, { ...view, channels });

function describe(channel) {
  const target = channel.url || [].concat(channel.emails || []).join(", ") || "";
  const when = channel.immediate ? ", at once" : ` of ${channel.triggerlimit || 1} line(s) in ${channel.triggerinterval || "15m"}`;
  return `${channel.integration}: ${target} · ${channel.operator || "presence"}${when}`;
}

// Each channel with Edit (the form below, filled in, saves it in place) and Remove.
function channelList(view, reload) {
  const channels = view.channels || [];
  if (!channels.length) return h("p", { class: "muted" }, "No alerts on this view.");
  return h(
    "ul",
    { class: "channels" },
    channels.map((channel, index) => {
      const item = h("li", { testid: "alert-channel" }, h("span", { class: "grow" }, describe(channel)));
      if (session.can("content")) {
        item.append(
          h("button", { type: "button", class: "edit", testid: "alert-edit", onclick: () => {
            const old = item.querySelector("form");
            if (old) return old.remove();
            item.append(alertForm(view, reload, index));
          } }, "Edit"),
          h("button", { type: "button", class: "edit danger", testid: "alert-remove", onclick: async (event) => {
            if (!confirm(`Remove the alert “${describe(channel)}”?`)) return;
            try {
              await putChannels(view, channels.filter((_, at) => at !== index));
              reload();
            } catch (error) {
              event.target.after(errorBox(error));
            }
          } }, "Remove"),
        );
      }
      return item;
    }),
  );
}

const INTERVALS = ["30", "1m", "5m", "15m", "30m", "1h", "6h", "12h", "24h"];

// A new channel, or (with `index`) the view's channel at that index, edited in place.
function alertForm(view, reload, index) {
  const editing = index !== undefined;
  const was = editing ? view.channels[index] : {};
  const integration = h("select", { testid: "alert-integration" }, ["webhook", "email", "slack", "pagerduty"].map((name) => h("option", { value: name, selected: name === was.integration }, name)));
  const shownTarget = was.url || [].concat(was.emails || []).join(", ") || was.key || "";
  const target = h("input", { placeholder: "https://… or a@example.com, b@example.com", testid: "alert-target", value: shownTarget });
  const operator = h("select", { testid: "alert-operator" }, h("option", { value: "presence" }, "when lines appear"), h("option", { value: "absence", selected: was.operator === "absence" }, "when lines stop"));
  const limit = h("input", { type: "number", min: 1, value: was.triggerlimit || 1, testid: "alert-limit" });
  const chosen = was.triggerinterval || "15m";
  const interval = h("select", { testid: "alert-interval" }, INTERVALS.map((v) => h("option", { value: v, selected: v === chosen }, v)));
  const immediate = h("input", { type: "checkbox", checked: was.immediate === true || was.immediate === "true", testid: "alert-immediate" });
  const problem = h("div", {});
  const submit = editing
    ? h("button", { type: "submit", class: "primary", testid: "alert-save" }, "Save alert")
    : h("button", { type: "submit", class: "primary", testid: "alert-add" }, "Add alert");
  const form = h("form", { class: "inline-form edit" }, field("Send to", integration), field("Address", target), field("Fire", operator), field("Lines", limit), field("Within", interval), h("label", { class: "check" }, immediate, " at once"), submit, problem);
  onSubmit(form, problem, async () => {
    // Editing keeps what the form does not show (a webhook's headers and body template).
    const channel = { ...(editing && integration.value === was.integration ? was : {}), integration: integration.value, operator: operator.value, triggerlimit: Number(limit.value), triggerinterval: interval.value, immediate: immediate.checked };
    for (const name of ["url", "emails", "key"]) delete channel[name];
    if (integration.value === "email") channel.emails = splitList(target.value);
    else if (integration.value === "pagerduty") channel.key = target.value.trim();
    else channel.url = target.value.trim();
    const channels = [...(view.channels || [])];
    if (editing) channels[index] = channel;
    else channels.push(channel);
    await putChannels(view, channels);
    reload();
  });
  return form;
}
