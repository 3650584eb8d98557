// Query history: the person's latest distinct queries, newest first, kept by the server
// with their preferences (preferences.js). The History button beside the search box
// (or Alt+Down in the box) opens the list; choosing a query runs it with the range,
// filters and picked fields it ran with (an entry kept before those were has none: the
// page's are used).
import { clear, formatTime, h } from "./dom.js";
import { historyEntry, preferences } from "./preferences.js";
import { presetLabel } from "./timerange.js";

// What an entry ran with besides its query, in words ("" for none kept).
export function entryRange(entry) {
  const parts = [];
  if (entry.range) parts.push(presetLabel(entry.range));
  else if (entry.from != null && entry.to != null) parts.push(`${formatTime(entry.from)} – ${formatTime(entry.to)}`);
  for (const name of ["hosts", "apps", "levels", "fields"]) if (entry[name] && entry[name].length) parts.push(`${name}: ${entry[name].join(", ")}`);
  return parts.join(" · ");
}

// `input`: the search box; `onChoose(entry)`: run that search ({query, range | from
// and to, hosts, apps, levels, fields}, as the server keeps it).
export function queryHistory({ input, onChoose }) {
  const list = h("div", { class: "query-history popover card", testid: "query-history", role: "listbox", "aria-label": "Recent queries", hidden: true });
  const toggle = h(
    "button",
    { type: "button", class: "history-toggle", testid: "query-history-toggle", "aria-haspopup": "listbox", "aria-expanded": "false", title: "Recent queries (Alt+Down)" },
    "History",
  );
  const element = h("span", { class: "history" }, toggle, list);

  const items = () => [...list.querySelectorAll("[data-testid=query-history-item]")];

  function draw() {
    clear(list);
    const history = preferences.current.searches;
    if (!history.length) list.append(h("p", { class: "muted" }, "No queries yet: each search you run is remembered here."));
    for (const entry of history) {
      const ran = entryRange(entry);
      list.append(
        h(
          "button",
          {
            type: "button",
            class: "history-item",
            role: "option",
            testid: "query-history-item",
            title: ran ? `${entry.query}\n${ran}` : entry.query,
            onclick: () => {
              close();
              onChoose(entry);
            },
          },
          h("span", { class: "history-query", testid: "query-history-query" }, entry.query),
          ran ? h("span", { class: "history-range muted", testid: "query-history-range" }, ran) : null,
        ),
      );
    }
    const forget = h("button", { type: "button", testid: "query-history-clear", disabled: !history.length }, "Clear history");
    forget.addEventListener("click", async () => {
      try {
        await preferences.forgetQueries();
      } catch (error) {
        forget.replaceWith(h("span", { class: "error" }, error.message || String(error)));
        return;
      }
      draw();
    });
    list.append(h("div", { class: "history-foot muted" }, preferences.kept ? "Your latest 50 queries, newest first" : "This page's queries (a key has no person to keep them for)", forget));
  }

  const outside = (event) => {
    if (!element.contains(event.target)) close();
  };

  function open({ focus = false } = {}) {
    draw();
    list.hidden = false;
    toggle.setAttribute("aria-expanded", "true");
    document.addEventListener("pointerdown", outside);
    if (focus) (items()[0] || toggle).focus();
  }

  function close() {
    list.hidden = true;
    toggle.setAttribute("aria-expanded", "false");
    document.removeEventListener("pointerdown", outside);
  }

  toggle.addEventListener("click", () => (list.hidden ? open() : close()));
  // Attached before the box's completion (completion.js), which would take the Down
  // key as its own: Alt+Down is the history's alone.
  input.addEventListener("keydown", (event) => {
    if (event.altKey && event.key === "ArrowDown") {
      event.preventDefault();
      event.stopImmediatePropagation();
      open({ focus: true });
    }
  });
  // Up and Down move between the queries, Escape goes back to the box.
  list.addEventListener("keydown", (event) => {
    const all = items();
    const at = all.indexOf(document.activeElement);
    if (event.key === "Escape") {
      close();
      input.focus();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const next = at + (event.key === "ArrowDown" ? 1 : -1);
      if (next < 0) {
        close();
        input.focus();
      } else if (all[Math.min(next, all.length - 1)]) all[Math.min(next, all.length - 1)].focus();
    }
  });

  return {
    element,
    // A search that ran (its query parsed): remembered with its range and filters
    // and the field picker's fields (the page's state: q, range, hosts, apps, levels,
    // fields), never in the search's way.
    remember: (state) => preferences.rememberQuery(historyEntry(state)).catch(() => {}),
    close,
  };
}
