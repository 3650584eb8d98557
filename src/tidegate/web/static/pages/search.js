// Search: query, time range, host/app/level filters with their top values, a histogram
// that zooms by brushing, lines newest first with endless scrolling backwards through
// export pages, and live tail of the same search. Query and range live in the URL.
import { ApiError, get } from "../api.js";
import { histogram } from "../chart.js";
import { attachCompletion } from "../completion.js";
import { clear, errorBox, formatCount, formatTime, h } from "../dom.js";
import { contextButton, contextParts } from "../context.js";
import { fieldFacet, fieldPaths } from "../field_facet.js";
import { markHits } from "../highlight.js";
import { queryHistory } from "../history.js";
import { currentEra, entryKey, keep, pushEntry, takeKept } from "../kept.js";
import { lineElement } from "../lines.js";
import { copyButtons, markLinked, revealLine } from "../linked.js";
import { LiveFacets } from "../live_facets.js";
import { FIRST_PAGE, filterParams, stateFromUrl, takeFirstPage } from "../search_start.js";
import { LiveTail } from "../tail.js";
import { timePicker } from "../time_picker.js";
import { rangeToParams, resolve } from "../timerange.js";
import { saveViewButton } from "../views.js";
import { VirtualList } from "../virtual.js";

const NEXT_PAGE = 500;
const EMPTY_PAGES_PER_SCROLL = 5; // a page may be empty without being the last
const FACETS = [
  ["host", "hosts"],
  ["app", "apps"],
  ["level", "levels"],
];

const LIVE_FACETS_EVERY_MS = 1000; // live facets redrawn at most this often

export function searchUrl(state) {
  const params = new URLSearchParams();
  if (state.q) params.set("q", state.q);
  rangeToParams(state.range, params);
  for (const [, list] of FACETS) if (state[list].length) params.set(list, state[list].join(","));
  for (const name of state.fields || []) params.append("field", name);
  return `/search?${params}`;
}

// The API's 400 names the column where the query stopped parsing: point at it.
function queryProblem(error, q) {
  const match = /\(column (\d+)\)/.exec(error.message);
  if (!match || !error.message.startsWith("query:")) return errorBox(error);
  const column = Number(match[1]);
  return h(
    "div",
    { class: "error query-error", role: "alert", testid: "query-error" },
    h("div", {}, error.message.replace(/^query:\s*/, "")),
    h("pre", {}, q, "\n", " ".repeat(Math.max(0, column - 1)), "^"),
  );
}

export async function render(main, { query }) {
  const state = stateFromUrl(query);
  let controller = null;
  let dropChart = null;
  let tail = null;
  let liveFacetTimer = 0; // a pending redraw of the stream's facets
  let cursor = null; // {bounds, pagination_id} of the search shown
  let loading = false;
  let shownAnswer = null; // the histogram's aggregation, drawn again when the zone changes
  let linkedLine = query.get("line"); // a link to one line (linked.js): shown once found
  let historyKey = entryKey(); // this history entry's (kept.js)
  let shownHref = location.pathname + location.search;
  let fieldsShown = []; // the picked fields' values drawn: [{name, rows, exact}]
  let liveCounts = null; // while live: the stream's counts (live_facets.js)
  const restored = takeKept(historyKey, shownHref);
  let early = takeFirstPage(shownHref); // asked as the app started (search_start.js)
  const era = currentEra();

  const input = h("input", {
    type: "search",
    class: "query",
    value: state.q,
    placeholder: "Search: error app:api -host:db-1 status:>=500",
    spellcheck: "false",
    testid: "search-input",
  });
  const times = timePicker(state, { onPreset: () => apply(), onZone: redrawTimes });
  const recent = queryHistory({
    input,
    onChoose: (entry) => {
      input.value = entry.query;
      // Kept before ranges and filters were: the query with the page's range and filters.
      if (!entry.range && entry.from == null) {
        form.requestSubmit();
        return;
      }
      // The range as it was chosen (a preset stays relative to now), the filters and
      // the field picker's fields.
      state.q = entry.query;
      state.range = entry.range ? { preset: entry.range } : { from: entry.from, to: entry.to };
      for (const [, name] of FACETS) state[name] = [...(entry[name] || [])];
      state.fields = [...(entry.fields || [])];
      times.show();
      apply();
    },
  });
  const liveToggle = h("button", { type: "button", class: "live", testid: "live-toggle", "aria-pressed": "false" }, "Live");
  const problem = h("div", { class: "problem" });
  const facets = h("aside", { class: "facets" });
  const chartBox = h("div", { class: "histogram", testid: "histogram" });
  const summary = h("div", { class: "summary-bar muted" });
  const tailStatus = h("div", { class: "tail-status", hidden: true });
  const list = h("div", { class: "lines", testid: "lines" });
  // Every loaded line is kept, a window of them drawn (virtual.js).
  const lines = new VirtualList(list, (entry, changed) => {
    const { newer, older } = contextParts(entry, changed);
    const el = lineElement(entry.record, {
      onPick,
      open: entry.open,
      onToggle: () => {
        entry.open = !entry.open;
        changed();
      },
      actions: () => [contextButton(entry, changed), copyButtons(entry.record)],
      newer,
      older,
    });
    markHits(el.querySelector(".summary .text"), entry.record._line, state.q);
    markLinked(el, entry);
    return el;
  });
  const picker = fieldFacet({
    records: () => lines.entries.slice(0, 500).map((entry) => entry.record),
    onFields: (names) => {
      const added = names.filter((name) => !state.fields.includes(name));
      state.fields = names;
      picker.choose(names);
      // One added: only its values are asked; one removed: nothing is.
      const target = searchUrl(state);
      if (target !== location.pathname + location.search) historyKey = pushEntry(target);
      shownHref = location.pathname + location.search;
      fieldsShown = fieldsShown.filter((shown) => names.includes(shown.name));
      if (tail) drawLiveFields();
      else if (added.length && cursor) countFields(added, cursor.bounds, controller.signal);
    },
    onPick: (term) => onPick(term),
  });
  const sentinel = h("div", { class: "sentinel muted" });

  const saveView = saveViewButton(() => state);
  const form = h(
    "form",
    { class: "search-bar" },
    input,
    recent.element,
    ...times.elements,
    h("button", { type: "submit", class: "primary" }, "Search"),
    liveToggle,
    saveView && saveView.element,
  );
  // Never in the way of the first lines: the views check is asked once they have come
  // (or failed), and the button (in its place, invisible) shows when the server says
  // views exist.
  let linesCame;
  new Promise((done) => (linesCame = done))
    .then(() => saveView && saveView.reveal())
    .catch(() => {});
  attachCompletion(input, {
    names: () => fieldPaths(lines.entries.slice(0, 500).map((entry) => entry.record)),
    range: () => resolve(state.range),
    rangeKey: () => JSON.stringify(state.range),
  });
  const results = h("section", { class: "results" }, chartBox, summary, tailStatus, list, sentinel);
  main.append(
    h("div", { class: "search-page" }, form, problem, h("div", { class: "search-body" }, facets, results)),
  );

  // The UTC switch: every time on the page drawn again in the zone now shown.
  function redrawTimes() {
    for (const entry of [...lines.drawn.keys()]) lines.redraw(entry);
    if (dropChart && shownAnswer && !tail) drawHistogram(shownAnswer);
  }

  function onPick(term) {
    state.q = state.q.trim() ? `${state.q.trim()} ${term}` : term;
    input.value = state.q;
    apply();
  }

  function apply({ push = true } = {}) {
    const target = searchUrl(state);
    if (push && target !== location.pathname + location.search) historyKey = pushEntry(target);
    shownHref = location.pathname + location.search;
    if (tail) startTail();
    else run();
  }

  // `top`: the aggregation's top values, or while live the stream's (liveFacets).
  function drawFacets(top, { empty = "none", note = null } = {}) {
    clear(facets);
    if (note) facets.append(h("p", { class: "muted facet-note" }, note));
    for (const [name, listName] of FACETS) {
      const chosen = state[listName];
      const rows = (top && top[name]) || [];
      const values = [...rows];
      for (const value of chosen) if (!rows.some((row) => row.value === value.toLowerCase())) values.push({ value, count: null });
      facets.append(
        h(
          "section",
          { class: "facet", testid: `facet-${name}` },
          h("h3", {}, name),
          values.length
            ? h(
                "ul",
                {},
                values.map((row) => {
                  const on = chosen.some((value) => value.toLowerCase() === row.value.toLowerCase());
                  return h(
                    "li",
                    {},
                    h(
                      "label",
                      {},
                      h("input", {
                        type: "checkbox",
                        checked: on,
                        onchange: () => {
                          state[listName] = on ? chosen.filter((value) => value.toLowerCase() !== row.value.toLowerCase()) : [...chosen, row.value];
                          apply();
                        },
                      }),
                      h("span", { class: "facet-value" }, row.value),
                      row.count === null ? null : h("span", { class: "count" }, formatCount(row.count)),
                    ),
                  );
                }),
              )
            : h("p", { class: "muted" }, empty),
        ),
      );
    }
    // Any other fields' top values (while live, counted in the stream's lines).
    facets.append(picker.element);
  }

  function drawHistogram(answer) {
    shownAnswer = answer;
    if (dropChart) dropChart();
    clear(chartBox);
    dropChart = histogram(chartBox, {
      times: answer.histogram.map((bucket) => bucket.ts),
      counts: answer.histogram.map((bucket) => bucket.count),
      bucketMs: answer.bucket_ms,
      onSelect: (from, to) => {
        state.range = { from: Math.max(from, answer.from), to: Math.min(to, answer.to) };
        times.show();
        apply();
      },
    });
    clear(summary).append(
      `${formatCount(answer.total)} matching lines`,
      answer.exact ? "" : ` (counted from ${formatTime(answer.counted_from)}: the query is too broad to count the whole range)`,
      ` · ${formatTime(answer.from)} – ${formatTime(answer.to)}`,
    );
  }

  async function page(signal) {
    if (!cursor || cursor.done || loading) return;
    loading = true;
    sentinel.textContent = "Loading older lines…";
    try {
      for (let tries = 0; tries < EMPTY_PAGES_PER_SCROLL; tries += 1) {
        const asked = cursor.first; // the first page, already asked (search_start.js)
        cursor.first = null;
        const answer = await (asked ||
          get(
            "/v2/export",
            {
              ...filterParams(state),
              ...cursor.bounds,
              size: cursor.pagination_id ? NEXT_PAGE : FIRST_PAGE,
              prefer: "tail",
              pagination_id: cursor.pagination_id,
            },
            signal,
          ));
        lines.append(answer.lines);
        cursor.pagination_id = answer.pagination_id;
        cursor.done = !answer.pagination_id;
        if (answer.lines.length || cursor.done) break;
      }
      sentinel.textContent = endText();
    } finally {
      loading = false;
    }
  }

  function endText() {
    return cursor.done ? (lines.length ? "No older lines in this range." : "No lines match.") : "";
  }

  // The page as it was left, on Back (kept.js): nothing is asked again.
  function resume(saved) {
    linesCame();
    controller = new AbortController();
    linkedLine = null; // found (and marked) when the page was first drawn
    cursor = saved.cursor;
    lines.adopt(saved.entries);
    sentinel.textContent = endText();
    if (saved.answer) {
      drawHistogram(saved.answer);
      drawFacets(saved.answer.top);
    }
    picker.choose(state.fields);
    for (const shown of saved.fields || []) showField(shown);
    results.setAttribute("aria-busy", "false");
    lines.scrollToY(saved.scrollY);
  }

  function showField(shown) {
    fieldsShown = [...fieldsShown.filter((item) => item.name !== shown.name), shown];
    picker.show(shown.name, shown.rows, shown.exact);
  }

  // The picked fields' top values: one request for them all, after the histogram (a
  // field outside host/app/level is counted by walking the matching lines). A field
  // the API refuses (a 400 for the request) is asked again alone, each, so the others
  // still show and the refused one says why.
  async function countFields(names, bounds, signal) {
    const ask = (list) => get("/v1/aggregate", { ...filterParams(state), ...bounds, buckets: 1, top: 10, fields: list.join(",") }, signal);
    for (const name of names) picker.loading(name);
    const show = (name, answer) => {
      if (!signal.aborted && state.fields.includes(name)) showField({ name, rows: answer.top.fields?.[name] || [], exact: answer.exact });
    };
    const failed = (name, error) => {
      if (!signal.aborted && state.fields.includes(name)) picker.failed(name, error);
    };
    try {
      const answer = await ask(names);
      for (const name of names) show(name, answer);
    } catch (error) {
      if (names.length === 1 || !(error instanceof ApiError) || error.status !== 400) {
        for (const name of names) failed(name, error);
        return;
      }
      for (const name of names) {
        await ask([name]).then((answer) => show(name, answer), (alone) => failed(name, alone));
      }
    }
  }

  // While live: the picked fields' top values in the lines received.
  function drawLiveFields() {
    if (!liveCounts) return;
    for (const name of state.fields) {
      if (!liveCounts.fields.has(name)) liveCounts.fields.set(name, new Map());
      picker.show(name, liveCounts.topOf(name), true);
    }
  }

  async function run() {
    if (controller) controller.abort();
    controller = new AbortController();
    const { signal } = controller;
    clear(problem);
    lines.clear();
    fieldsShown = [];
    picker.choose(state.fields);
    picker.live(false);
    sentinel.textContent = "Searching…";
    const first = early;
    early = null;
    if (first) signal.addEventListener("abort", first.abort);
    const bounds = first ? first.bounds : resolve(state.range);
    cursor = { bounds, pagination_id: null, done: false, first: first && first.answer };
    loading = false;
    const shown = (error) => {
      if (signal.aborted) return;
      sentinel.textContent = "";
      // The histogram, count and facets of the previous search do not describe this one.
      clearCounts();
      clear(problem).append(error instanceof ApiError && error.status === 400 ? queryProblem(error, state.q) : errorBox(error));
    };
    // The lines first, then the counts: both run in the server's export threads and the
    // database, and asked together the counts slowed the first lines down
    // (bench_web_first_line, docs/web.md).
    // The results say they are busy until both have come (or failed): until then the
    // histogram and the count still describe the previous search.
    results.setAttribute("aria-busy", "true");
    let failed = false;
    await page(signal).catch((error) => {
      failed = true;
      shown(error);
    });
    linesCame();
    if (linkedLine && !failed && !signal.aborted) {
      const id = linkedLine;
      linkedLine = null;
      await revealLine(lines, id, () => (cursor.done || signal.aborted ? false : page(signal).then(() => true))).catch(shown);
    }
    if (!failed && !signal.aborted) {
      recent.remember(state);
      await get("/v1/aggregate", { ...filterParams(state), ...bounds, buckets: 100, top: 10 }, signal)
        .then((answer) => {
          if (signal.aborted) return;
          drawHistogram(answer);
          drawFacets(answer.top);
        })
        .catch(shown);
    }
    if (!failed && !signal.aborted && state.fields.length) await countFields(state.fields, bounds, signal);
    if (!signal.aborted) results.setAttribute("aria-busy", "false");
  }

  function clearCounts() {
    if (dropChart) dropChart();
    dropChart = null;
    clear(chartBox);
    clear(summary);
    clear(facets);
  }

  function stopTail() {
    clearTimeout(liveFacetTimer);
    liveFacetTimer = 0;
    if (tail) tail.close();
    tail = null;
    liveCounts = null;
    tailStatus.hidden = true;
    chartBox.hidden = false;
    summary.hidden = false;
    liveToggle.setAttribute("aria-pressed", "false");
    liveToggle.classList.remove("on");
  }

  function startTail() {
    clearTimeout(liveFacetTimer);
    liveFacetTimer = 0;
    if (tail) tail.close();
    if (controller) controller.abort();
    clear(problem);
    lines.clear();
    sentinel.textContent = "";
    cursor = null;
    tailStatus.hidden = false;
    // The histogram and the count describe the searched range, not the stream.
    chartBox.hidden = true;
    summary.hidden = true;
    liveToggle.setAttribute("aria-pressed", "true");
    liveToggle.classList.add("on");
    const counts = new LiveFacets(state.fields);
    liveCounts = counts;
    picker.choose(state.fields);
    picker.live(true);
    const draw = () => {
      drawFacets(counts.top(), {
        empty: counts.lines ? "no values in the stream yet" : "waiting for lines…",
        note: "Live: the lines received since it started",
      });
      drawLiveFields();
    };
    // At most once a second: redrawn under the pointer at every frame, a facet's
    // checkbox could lose the click.
    let last = 0;
    const redraw = () => {
      if (liveFacetTimer) return;
      liveFacetTimer = setTimeout(() => {
        liveFacetTimer = 0;
        last = performance.now();
        draw();
      }, Math.max(0, last + LIVE_FACETS_EVERY_MS - performance.now()));
    };
    draw();
    tail = new LiveTail({
      status: tailStatus,
      params: filterParams(state),
      show: (records, cap) => {
        for (const record of records) counts.add(record);
        lines.prepend(records);
        lines.keep(cap);
      },
      onDrawn: redraw,
    });
  }

  liveToggle.addEventListener("click", () => {
    if (tail) {
      stopTail();
      run();
    } else startTail();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    state.q = input.value.trim();
    try {
      times.take();
    } catch (error) {
      clear(problem).append(errorBox(error));
      return;
    }
    apply();
  });
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting) && cursor && !tail) page(controller.signal).catch(() => {});
  });
  observer.observe(sentinel);
  input.focus();
  if (restored) resume(restored);
  else run();
  return () => {
    // Kept for Back when the search had finished (not live, nothing failed).
    if (!tail && cursor && results.getAttribute("aria-busy") === "false" && !problem.firstChild) {
      const fields = fieldsShown.filter((shown) => state.fields.includes(shown.name));
      keep({ key: historyKey, href: shownHref, era, entries: lines.entries, cursor, answer: shownAnswer, fields, scrollY: window.scrollY });
    }
    if (controller) controller.abort();
    stopTail();
    observer.disconnect();
    lines.close();
    if (dropChart) dropChart();
  };
}
