// One board: its graphs drawn from the aggregation endpoint, refreshed every minute,
// over the board's range (a preset, or typed: relative or absolute, kept in the address)
// or a graph's own (`range`, kept in the graph: relative, a preset key or one like
// `90m`, or absolute bounds `{from, to}` in ms);
// add, move, resize, give a range to and remove graphs (saved with PATCH
// /v1/config/board/{id}).
import { del, get, patch } from "../api.js";
import { clear, errorBox, field, formatTime, h } from "../dom.js";
import { drawGraph, newGraphId } from "../graphs.js";
import { session } from "../session.js";
import { DEFAULT_PRESET, PRESETS, parseTyped, presetLabel, presetSpan, rangeFromParams, rangeToParams, resolve } from "../timerange.js";

const REFRESH_MS = 60_000;

// A graph's own range as timerange.js has ranges: {preset} when it names a relative
// one (a preset, or one like `90m`), {from, to} for absolute bounds (ms, from not after
// to); anything else: null, the board's.
function ownRange(graph) {
  const own = graph.range;
  if (typeof own === "string") return presetSpan(own) ? { preset: own } : null;
  const bounded = own && typeof own === "object" && Number.isSafeInteger(own.from) && Number.isSafeInteger(own.to) && own.from <= own.to;
  return bounded ? { from: own.from, to: own.to } : null;
}

// A graph's range in words: "Last 7 days", or its bounds.
const rangeWords = (range) => (range.preset ? presetLabel(range.preset) : `${formatTime(range.from)} – ${formatTime(range.to)}`);

// A graph's range as the board keeps it: a preset key, or {from, to}.
const keptRange = (range) => range.preset || { from: range.from, to: range.to };

// The choice of a graph's range: a select of the presets after "Board's range" (the
// empty value), a relative range that is not a preset an option of its own, and
// "Custom range…" (named by the bounds when the graph has them), which shows a box to
// type a range in as on the search page: `-3d`, `2026-11-27 01:00 .. 2026-11-27 03:00`;
// Enter applies it, a typo is said and changes nothing. `onChoose(range or null)` on
// each choice; `.chosen()` the range chosen.
function rangeChoice({ value = null, testid = null, onChoose = () => {} }) {
  let chosen = value;
  const select = h("select", { "aria-label": "Range", testid });
  const box = h("input", { type: "text", class: "typed-range", placeholder: "-3d, 2026-11-27 01:00 .. 2026-11-27 03:00", spellcheck: "false", "aria-label": "Type this graph's time span", testid: "graph-time-input", hidden: true });
  const problem = h("span", { class: "error small", role: "alert", testid: "graph-time-error" });
  function show() {
    const typed = chosen?.preset && !PRESETS.some(([key]) => key === chosen.preset) ? chosen.preset : null;
    const options = [
      h("option", { value: "" }, "Board's range"),
      typed ? h("option", { value: typed }, presetLabel(typed)) : null,
      ...PRESETS.map(([key, text]) => h("option", { value: key }, text)),
      h("option", { value: "custom" }, chosen && !chosen.preset ? rangeWords(chosen) : "Custom range…"),
    ];
    clear(select).append(...options.filter(Boolean));
    select.value = chosen ? chosen.preset || "custom" : "";
  }
  function choose(range) {
    chosen = range;
    box.hidden = true;
    box.value = "";
    problem.textContent = "";
    show();
    onChoose(range);
  }
  select.addEventListener("change", () => {
    if (select.value !== "custom") return choose(select.value ? { preset: select.value } : null);
    // The bounds are typed: the box says how.
    box.hidden = false;
    box.focus();
  });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      box.hidden = true;
      problem.textContent = "";
      show();
    }
    if (event.key !== "Enter") return;
    event.preventDefault();
    try {
      choose(parseTyped(box.value));
    } catch (error) {
      problem.textContent = error.message;
    }
  });
  show();
  const element = h("span", { class: "graph-range" }, select, box, problem);
  element.chosen = () => chosen;
  return element;
}

export async function render(main, { params, query, navigate }) {
  const path = `/v1/config/board/${encodeURIComponent(params.boardid)}`;
  let board;
  try {
    board = await get(path);
  } catch (error) {
    main.append(errorBox(error));
    return;
  }
  const canEdit = session.can("content");
  // The board's range from the address (`?range=7d`, `?range=90m`, or `?from=&to=`, so
  // a link shares it), else 24 hours.
  let range = query ? rangeFromParams(query) : { preset: DEFAULT_PRESET };
  let controller = new AbortController();
  let drawn = [];
  const grid = h("div", { class: "board-grid" });
  const problem = h("div", {});
  const rangeSelect = h(
    "select",
    { "aria-label": "Time range", testid: "board-range" },
    PRESETS.map(([key, label]) => h("option", { value: key }, label)),
    h("option", { value: "custom" }, "Custom range…"),
  );
  // A range typed as on the search page (timerange.parseTyped): `-3d`, `now-90m`,
  // `2026-11-27 01:00 .. now`; Enter applies it.
  const typedRange = h("input", { type: "text", class: "typed-range", placeholder: "-3d, now-90m, 2026-11-27 01:00 .. now", spellcheck: "false", "aria-label": "Type a time range", testid: "board-time-input" });
  const typedError = h("span", { class: "error small", role: "alert", testid: "board-time-error" });
  // The select shows the range: a preset, a typed relative one (an option of its own),
  // or absolute bounds (the custom option, labelled with them).
  function showRange() {
    let typedOption = rangeSelect.querySelector("option[data-typed]");
    if (range.preset && !PRESETS.some(([key]) => key === range.preset)) {
      if (!typedOption) {
        typedOption = h("option", { "data-typed": "" });
        rangeSelect.prepend(typedOption);
      }
      typedOption.value = range.preset;
      typedOption.textContent = presetLabel(range.preset);
    } else if (typedOption) typedOption.remove();
    rangeSelect.querySelector("option[value=custom]").textContent = range.preset ? "Custom range…" : `${formatTime(range.from)} – ${formatTime(range.to)}`;
    rangeSelect.value = range.preset || "custom";
  }
  function useRange(next) {
    range = next;
    showRange();
    // In the address, in place: a reload or a shared link draws the same range.
    const address = new URL(location.href);
    rangeToParams(range, address.searchParams);
    if (range.preset === DEFAULT_PRESET) address.searchParams.delete("range");
    history.replaceState(history.state, "", address.pathname + address.search);
    draw();
  }
  rangeSelect.addEventListener("change", () => {
    if (rangeSelect.value === "custom") {
      // The bounds are typed: the box says how.
      showRange();
      typedRange.focus();
      return;
    }
    useRange({ preset: rangeSelect.value });
  });
  typedRange.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    try {
      const typed = parseTyped(typedRange.value);
      typedError.textContent = "";
      typedRange.value = "";
      useRange(typed);
    } catch (error) {
      typedError.textContent = error.message;
    }
  });
  showRange();

  // Changes apply to the page at once and are saved one after another, so a quick
  // second change (resize, then move) builds on the first instead of racing it.
  let saving = Promise.resolve();
  let pending = 0;
  const saved = h("span", { class: "muted", role: "status", testid: "board-saved" });
  function save(changes) {
    clear(problem);
    board = { ...board, ...changes };
    draw();
    pending += 1;
    saved.textContent = "Saving…";
    saving = saving
      .then(() => patch(path, changes))
      .catch(async (error) => {
        problem.append(errorBox(error));
        board = await get(path).catch(() => board);
        draw();
      })
      .finally(() => {
        pending -= 1;
        if (!pending) saved.textContent = "All changes saved";
      });
    return saving;
  }

  function moveGraph(index, step) {
    const graphs = [...board.graphs];
    const [graph] = graphs.splice(index, 1);
    graphs.splice(Math.max(0, Math.min(graphs.length, index + step)), 0, graph);
    save({ graphs });
  }

  function changeGraph(index, changes) {
    const graphs = board.graphs.map((graph, i) => (i === index ? { ...graph, ...changes } : graph));
    save({ graphs });
  }

  // A graph's own range, or (null) the board's: the key is then left out of the graph.
  function rangeGraph(index, own) {
    const graphs = board.graphs.map((graph, i) => {
      if (i !== index) return graph;
      const { range: _board, ...rest } = graph;
      return own ? { ...rest, range: keptRange(own) } : rest;
    });
    save({ graphs });
  }

  function controls(graph, index) {
    if (!canEdit) return null;
    const width = h("select", { "aria-label": "Width", onchange: (e) => changeGraph(index, { width: Number(e.target.value) }) }, [1, 2, 3].map((n) => h("option", { value: n, selected: (graph.width || 1) === n }, `${n}/3 wide`)));
    const height = h("select", { "aria-label": "Height", onchange: (e) => changeGraph(index, { height: e.target.value }) }, [["s", "short"], ["m", "medium"], ["l", "tall"]].map(([v, l]) => h("option", { value: v, selected: (graph.height || "m") === v }, l)));
    return h(
      "span",
      { class: "graph-controls edit" },
      h("button", { type: "button", title: "Move left", onclick: () => moveGraph(index, -1), disabled: index === 0 }, "←"),
      h("button", { type: "button", title: "Move right", onclick: () => moveGraph(index, 1), disabled: index === board.graphs.length - 1 }, "→"),
      width,
      height,
      rangeChoice({ value: ownRange(graph), onChoose: (own) => rangeGraph(index, own) }),
      h("button", { type: "button", class: "danger", title: "Remove", onclick: () => save({ graphs: board.graphs.filter((_, i) => i !== index) }) }, "✕"),
    );
  }

  function draw() {
    controller.abort();
    controller = new AbortController();
    const { signal } = controller;
    for (const drop of drawn) drop();
    drawn = [];
    clear(grid);
    const bounds = resolve(range);
    const graphs = board.graphs || [];
    if (!graphs.length) grid.append(h("p", { class: "muted" }, canEdit ? "No graphs yet: add one below." : "No graphs yet."));
    graphs.forEach((graph, index) => {
      const box = h("div", { class: "graph-body" });
      const own = ownRange(graph);
      const card = h(
        "div",
        { class: `card graph w${graph.width || 1}` },
        h(
          "div",
          { class: "graph-head" },
          h("h3", {}, graph.title || graph.query || "All lines"),
          own ? h("span", { class: "muted small", testid: "board-graph-range" }, rangeWords(own)) : null,
          controls(graph, index),
        ),
        box,
      );
      grid.append(card);
      drawGraph(box, graph, own ? resolve(own) : bounds, signal)
        .then((drop) => {
          if (signal.aborted) return drop();
          drawn.push(drop);
          card.dataset.testid = "board-graph";
        })
        .catch((error) => {
          if (!signal.aborted) box.append(errorBox(error));
        });
    });
  }

  const title = h("h1", {}, board.title);
  main.append(
    h(
      "div",
      { class: "board-head" },
      title,
      saved,
      rangeSelect,
      typedRange,
      typedError,
      h("button", { type: "button", onclick: () => draw(), testid: "board-refresh" }, "Refresh"),
      canEdit
        ? [
            h("button", { type: "button", class: "edit", onclick: () => { const name = prompt("Board title", board.title); if (name) save({ title: name }).then(() => { title.textContent = board.title; }); } }, "Rename"),
            h("button", { type: "button", class: "edit danger", onclick: async () => { if (confirm(`Delete the board “${board.title}”?`)) { await del(path); navigate("/boards"); } } }, "Delete board"),
          ]
        : null,
    ),
    problem,
    grid,
    canEdit ? addGraphForm((graph) => save({ graphs: [...(board.graphs || []), graph] })) : null,
  );
  draw();
  // Not while a graph's controls are in use (a range half typed, a select open): the
  // next minute's turn draws them.
  const timer = setInterval(() => {
    if (!document.activeElement?.closest?.(".graph-controls")) draw();
  }, REFRESH_MS);
  return () => {
    clearInterval(timer);
    controller.abort();
    for (const drop of drawn) drop();
  };
}

function addGraphForm(add) {
  const kind = h("select", { testid: "graph-kind" }, h("option", { value: "count" }, "Count of lines over time"), h("option", { value: "top" }, "Top values table"));
  const title = h("input", { maxlength: 120, placeholder: "optional", testid: "graph-title" });
  const query = h("input", { placeholder: "all lines", testid: "graph-query" });
  const split = h("select", { testid: "graph-split" }, h("option", { value: "" }, "no split"), ["host", "app", "level"].map((name) => h("option", { value: name }, `split by ${name}`)));
  const fieldSelect = h("select", { testid: "graph-field" }, ["host", "app", "level"].map((name) => h("option", { value: name }, name)));
  const splitLabel = field("Split", split);
  const fieldLabel = field("Field", fieldSelect);
  const range = rangeChoice({ testid: "graph-range" });
  const sync = () => {
    splitLabel.hidden = kind.value !== "count";
    fieldLabel.hidden = kind.value !== "top";
  };
  kind.addEventListener("change", sync);
  sync();
  const form = h(
    "form",
    { class: "card inline-form edit" },
    h("h2", {}, "Add a graph"),
    field("Kind", kind),
    field("Title", title),
    field("Query", query),
    splitLabel,
    fieldLabel,
    field("Range", range),
    h("button", { type: "submit", class: "primary", testid: "graph-add" }, "Add graph"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const graph = { id: newGraphId(), kind: kind.value, title: title.value.trim(), query: query.value.trim(), width: 1, height: "m" };
    if (kind.value === "count") graph.split = split.value;
    else graph.field = fieldSelect.value;
    if (range.chosen()) graph.range = keptRange(range.chosen());
    add(graph);
    title.value = "";
    query.value = "";
  });
  return form;
}
