// Query history: the person's latest distinct queries, newest first, kept by the server
// with their preferences (preferences.js). The History button beside the search box
// (or Alt+Down in the box) opens the list; choosing a query runs it with the range,
// filters and picked fields it ran with (an entry kept before those were has none: the
// page's are used). The filter box narrows the list to the entries holding its words;
// each entry can be forgotten on its own (its remove button, or Delete). An entry's
// star keeps it among the starred searches, listed first, which the history's bound
// and its clearing never reach, until it is unstarred. A starred search can be named
// (its pencil, or F2 on it): the name is shown, the query under it.
import { clear, formatTime, h } from "./dom.js";
import { MAX_STARRED_NAME_LENGTH, historyEntry, keptEntry, preferences } from "./preferences.js";
import { presetLabel } from "./timerange.js";

// What an entry ran with besides its query, in words ("" for none kept).
export function entryRange(entry) {
  const parts = [];
  if (entry.range) parts.push(presetLabel(entry.range));
  else if (entry.from != null && entry.to != null) parts.push(`${formatTime(entry.from)} – ${formatTime(entry.to)}`);
  for (const name of ["hosts", "apps", "levels", "fields"]) if (entry[name] && entry[name].length) parts.push(`${name}: ${entry[name].join(", ")}`);
  return parts.join(" · ");
}

// Whether an entry holds every word of `text` (any case), in its query or in what it
// ran with (the history's filter box).
export function entryMatches(entry, text) {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  const haystack = `${entry.name || ""}\n${entry.query}\n${entryRange(entry)}`.toLowerCase();
  return words.every((word) => haystack.includes(word));
}

// `input`: the search box; `onChoose(entry)`: run that search ({query, range | from
// and to, hosts, apps, levels, fields}, as the server keeps it).
export function queryHistory({ input, onChoose }) {
  const list = h("div", { class: "query-history popover card", testid: "query-history", role: "dialog", "aria-label": "Recent queries", hidden: true });
  const filter = h("input", {
    type: "search",
    class: "history-filter",
    testid: "query-history-filter",
    placeholder: "Filter your queries",
    "aria-label": "Filter your queries",
    autocomplete: "off",
    spellcheck: "false",
  });
  const entries = h("div", { class: "history-entries", role: "list" });
  const toggle = h(
    "button",
    { type: "button", class: "history-toggle", testid: "query-history-toggle", "aria-haspopup": "dialog", "aria-expanded": "false", title: "Recent queries (Alt+Down)" },
    "History",
  );
  const element = h("span", { class: "history" }, toggle, list);

  const items = () => [...list.querySelectorAll("[data-testid=query-history-item]")];
  // Every search listed, starred ones first: where the keys move and Enter runs.
  const searches = () => [...list.querySelectorAll("[data-testid=query-history-starred-item], [data-testid=query-history-item]")];

  // Forgets one entry (its remove button, or Delete on it), then puts the focus on the
  // entry that took its place, else the filter box.
  async function forget(entry, at) {
    const saved = preferences.forgetQuery(entry.query);
    drawEntries();
    const focusAt = () => {
      const left = items();
      (left[Math.min(at, left.length - 1)] || (filter.isConnected ? filter : toggle)).focus();
    };
    focusAt();
    try {
      await saved;
    } catch (error) {
      entries.prepend(h("p", { class: "error", testid: "query-history-error" }, `Not forgotten: ${error.message || error}`));
      return;
    }
    if (!list.hidden) {
      const focused = items().indexOf(document.activeElement);
      drawEntries();
      if (focused >= 0) items()[Math.min(focused, items().length - 1)]?.focus();
    }
  }

  // Stars or unstars an entry (as it is: its range and filters), then draws the list
  // again with the focus back on that entry; a refusal is said above the list.
  async function toggleStar(entry, from) {
    const starred = preferences.isStarred(entry.query);
    let done = null;
    try {
      done = starred ? preferences.unstarQuery(entry.query) : preferences.starQuery(keptEntry(entry));
      drawEntries();
      // The focus back on the entry's line where it was acted on (an unstarred one's
      // starred line is gone: its line in the history, else the filter box).
      const lines = searches().filter((line) => line.dataset.query === entry.query);
      (lines.find((line) => line.dataset.testid === from) || lines[0] || (filter.isConnected ? filter : toggle)).focus();
      await done;
    } catch (error) {
      drawEntries();
      entries.prepend(h("p", { class: "error", testid: "query-history-error" }, `${starred ? "Not unstarred" : "Not starred"}: ${error.message || error}`));
      return;
    }
    // The answer drawn with the focus where it is now (the person may have moved on).
    if (!list.hidden) redrawKeepingFocus();
  }

  // Moves a starred search one place up (-1) or down (1) among all of them (the
  // filter box's choice aside), then draws the list again with the focus on it.
  function move(entry, by) {
    return moveTo(entry, starredAt(entry.query) + by);
  }

  const starredAt = (query) => preferences.current.starred.findIndex((item) => item.query === query);

  // Moves a starred search to `position` among all of them (as the server counts: in
  // the list without it), focused in its new place.
  async function moveTo(entry, position) {
    if (position < 0 || position >= preferences.current.starred.length || position === starredAt(entry.query)) return;
    const focusIt = () => searches().find((item) => item.dataset.query === entry.query && item.dataset.testid === "query-history-starred-item")?.focus();
    const saved = preferences.moveStarred(entry.query, position);
    drawEntries();
    focusIt();
    try {
      await saved;
    } catch (error) {
      entries.prepend(h("p", { class: "error", testid: "query-history-error" }, `Not moved: ${error.message || error}`));
      return;
    }
    // The answer (which may hold other browsers' changes) drawn with the focus where
    // it is now: the person may have moved on from the entry meanwhile.
    if (!list.hidden) redrawKeepingFocus();
  }

  // The entries drawn again, the focused line (if one is) focused again.
  function redrawKeepingFocus() {
    const was = list.contains(document.activeElement) ? document.activeElement.dataset : null;
    drawEntries();
    if (was && was.query !== undefined) searches().find((item) => item.dataset.testid === was.testid && item.dataset.query === was.query)?.focus();
  }

  // Names a starred search in place: its line becomes a box holding the name; Enter
  // keeps what it holds (blank: no name), Escape or leaving it keeps the name it had.
  // The box stays through the list's redraws (an answer, another browser's changes)
  // with what it holds and its focus: `naming` is {query, box, redrawing} meanwhile.
  let naming = null;
  function rename(entry, line) {
    const box = h("input", { type: "text", class: "history-name-box", testid: "query-history-name", maxlength: MAX_STARRED_NAME_LENGTH, value: entry.name || "", placeholder: "A name for this search", "aria-label": `Name ${entry.query}` });
    let done = false;
    const back = (focus) => {
      done = true;
      if (naming?.box === box) naming = null;
      drawEntries();
      if (focus) searches().find((item) => item.dataset.query === entry.query && item.dataset.testid === "query-history-starred-item")?.focus();
    };
    box.addEventListener("keydown", async (event) => {
      event.stopPropagation();
      if (event.key === "Escape") {
        event.preventDefault();
        back(true);
      } else if (event.key === "Enter") {
        event.preventDefault();
        const saved = preferences.nameStarred(entry.query, box.value.trim() || null);
        back(true);
        try {
          await saved;
        } catch (error) {
          entries.prepend(h("p", { class: "error", testid: "query-history-error" }, `Not named: ${error.message || error}`));
          return;
        }
        if (!list.hidden) back(true);
      }
    });
    box.addEventListener("blur", () => {
      if (!done && !(naming?.box === box && naming.redrawing)) back(false);
    });
    naming = { query: entry.query, box, redrawing: false };
    line.replaceWith(box);
    box.focus();
    box.select();
  }

  // One line of the list: the search (runs it), its star and, in the history, its
  // forget button; a starred one's name and its pencil.
  function row(entry, { testid, at = null }) {
    const ran = entryRange(entry);
    const item = h(
      "button",
      {
        type: "button",
        class: "history-item",
        testid,
        "data-query": entry.query,
        title: [entry.query, ran, at === null ? "Alt+Up or Alt+Down moves it among the starred" : null].filter(Boolean).join("\n"),
        onclick: () => {
          close();
          onChoose(entry);
        },
        onkeydown: (event) => {
          if (event.key === "Delete" && at !== null) {
            event.preventDefault();
            forget(entry, at);
          } else if (event.key === "*") {
            event.preventDefault();
            toggleStar(entry, testid);
          } else if (event.key === "F2" && at === null) {
            event.preventDefault();
            rename(entry, item);
          } else if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown") && at === null) {
            // Not the list's Up and Down: the starred search moves, the focus with it.
            event.preventDefault();
            event.stopPropagation();
            move(entry, event.key === "ArrowUp" ? -1 : 1);
          }
        },
      },
      entry.name ? h("span", { class: "history-name", testid: "query-history-name-text" }, entry.name) : null,
      h("span", { class: `history-query${entry.name ? " muted" : ""}`, testid: "query-history-query" }, entry.query),
      ran ? h("span", { class: "history-range muted", testid: "query-history-range" }, ran) : null,
    );
    const on = preferences.isStarred(entry.query);
    const star = h(
      "button",
      { type: "button", class: `history-star${on ? " on" : ""}`, testid: "query-history-star", "data-query": entry.query, "aria-pressed": String(on), title: on ? "Unstar this search (*)" : "Star this search: kept until unstarred (*)", "aria-label": `${on ? "Unstar" : "Star"} ${entry.query}`, tabindex: "-1", onclick: () => toggleStar(entry, testid) },
      on ? "\u2605" : "\u2606",
    );
    // A starred line has no forget button: its pencil names it, in the same room.
    // It is dragged by its handle onto another starred line: dropped on that line's
    // upper half it goes before it, on the lower half after it.
    const remove = at === null ? h("button", { type: "button", class: "history-remove history-rename", testid: "query-history-rename", title: "Name this search (F2)", "aria-label": `Name ${entry.query}`, tabindex: "-1", onclick: () => rename(entry, item) }, "\u270e") : h(
      "button",
      { type: "button", class: "history-remove", testid: "query-history-remove", title: "Forget this query (Delete)", "aria-label": `Forget ${entry.query}`, tabindex: "-1", onclick: () => forget(entry, at) },
      "\u00d7",
    );
    if (at !== null) return h("div", { class: "history-row", role: "listitem" }, item, star, remove);
    const handle = h("span", { class: "history-drag muted", testid: "query-history-drag", title: "Drag to reorder (or Alt+Up, Alt+Down)", "aria-hidden": "true" }, "\u2261");
    const line = h("div", { class: "history-row", role: "listitem", draggable: "true", "data-query": entry.query }, handle, item, star, remove);
    line.addEventListener("dragstart", (event) => {
      event.dataTransfer.setData("application/x-tidegate-starred", entry.query);
      event.dataTransfer.effectAllowed = "move";
      line.classList.add("dragging");
    });
    line.addEventListener("dragend", () => line.classList.remove("dragging"));
    const after = (event) => event.clientY > line.getBoundingClientRect().top + line.offsetHeight / 2;
    line.addEventListener("dragover", (event) => {
      if (!event.dataTransfer.types.includes("application/x-tidegate-starred")) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = "move";
      line.classList.toggle("drop-after", after(event));
      line.classList.toggle("drop-before", !after(event));
    });
    line.addEventListener("dragleave", () => line.classList.remove("drop-before", "drop-after"));
    line.addEventListener("drop", (event) => {
      line.classList.remove("drop-before", "drop-after");
      const query = event.dataTransfer.getData("application/x-tidegate-starred");
      const moving = preferences.current.starred.find((item) => item.query === query);
      if (!moving || query === entry.query) return;
      event.preventDefault();
      const from = starredAt(query);
      const target = starredAt(entry.query) + (after(event) ? 1 : 0);
      moveTo(moving, target > from ? target - 1 : target);
    });
    return line;
  }

  function drawEntries() {
    const kept = naming && entries.contains(naming.box) ? naming : null;
    const focused = kept && document.activeElement === kept.box;
    const selection = kept && [kept.box.selectionStart, kept.box.selectionEnd];
    if (kept) kept.redrawing = true;
    clear(entries);
    const history = preferences.current.searches;
    const starred = preferences.current.starred.filter((entry) => entryMatches(entry, filter.value));
    const shown = history.filter((entry) => entryMatches(entry, filter.value));
    if (starred.length) {
      entries.append(h("div", { class: "history-heading muted" }, "Starred"));
      for (const entry of starred) entries.append(row(entry, { testid: "query-history-starred-item" }));
      if (history.length) entries.append(h("div", { class: "history-heading muted" }, "Recent"));
    }
    if (!history.length && !preferences.current.starred.length) entries.append(h("p", { class: "muted" }, "No queries yet: each search you run is remembered here."));
    else if (!shown.length && !starred.length) entries.append(h("p", { class: "muted", testid: "query-history-none" }, "No remembered query matches."));
    shown.forEach((entry, at) => entries.append(row(entry, { testid: "query-history-item", at })));
    if (!kept) return;
    // The box back in its search's place (gone if it was unstarred meanwhile).
    const line = searches().find((item) => item.dataset.query === kept.query && item.dataset.testid === "query-history-starred-item");
    if (line) {
      line.replaceWith(kept.box);
      if (focused) {
        kept.box.focus();
        kept.box.setSelectionRange(...selection);
      }
    } else naming = null;
    kept.redrawing = false;
  }

  function draw() {
    clear(list);
    const history = preferences.current.searches;
    drawEntries();
    const forgetAll = h("button", { type: "button", testid: "query-history-clear", disabled: !history.length }, "Clear history");
    forgetAll.addEventListener("click", async () => {
      try {
        await preferences.forgetQueries();
      } catch (error) {
        forgetAll.replaceWith(h("span", { class: "error" }, error.message || String(error)));
        return;
      }
      draw();
    });
    list.append(
      history.length || preferences.current.starred.length ? filter : null,
      entries,
      h("div", { class: "history-foot muted" }, preferences.kept ? "Your latest 50 queries, newest first" : "This page's queries (a key has no person to keep them for)", forgetAll),
    );
  }

  filter.addEventListener("input", drawEntries);
  filter.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      // The first query the filter left: run it.
      event.preventDefault();
      searches()[0]?.click();
    }
  });

  const outside = (event) => {
    if (!element.contains(event.target)) close();
  };

  function open({ focus = false } = {}) {
    filter.value = "";
    draw();
    list.hidden = false;
    toggle.setAttribute("aria-expanded", "true");
    document.addEventListener("pointerdown", outside);
    if (focus) (searches()[0] || toggle).focus();
    // Drawn at once from what the page has; then what other browsers of the person
    // changed meanwhile, drawn in place.
    preferences.refresh().then((changed) => {
      if (changed && !list.hidden) redrawKeepingFocus();
    });
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
  // Up and Down move between the filter box and the queries, Escape goes back to the
  // search box (as Up from the top does).
  list.addEventListener("keydown", (event) => {
    const stops = [...(filter.isConnected ? [filter] : []), ...searches()];
    const at = stops.indexOf(document.activeElement);
    if (event.key === "Escape") {
      close();
      input.focus();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const next = at + (event.key === "ArrowDown" ? 1 : -1);
      if (next < 0) {
        close();
        input.focus();
      } else if (stops[Math.min(next, stops.length - 1)]) stops[Math.min(next, stops.length - 1)].focus();
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
