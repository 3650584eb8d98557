// A line's context: the lines just before and after it from the same host and app, or
// as chosen the same host or the whole account (GET /v1/export/context, `around`),
// shown in place around the line. The state lives on the list's entry
// (`entry.context`), so it is still shown when the row is drawn again.
import { get } from "./api.js";
import { h } from "./dom.js";
import { summaryRow } from "./lines.js";

export const CONTEXT_LINES = 20;

// Whose lines the context holds, as the API's `around` names them.
const AROUND = [
  ["source", "same host and app"],
  ["host", "same host, any app"],
  ["account", "all lines of the account"],
];
const whose = (state) => AROUND.find(([value]) => value === state.around)[1];

// The context of the line `id` asked (again) with the state's `around`.
function load(entry, state, id, changed) {
  state.answer = null;
  state.error = null;
  state.loading = {};
  const asked = state.around;
  get("/v1/export/context", { line: id, before: CONTEXT_LINES, after: CONTEXT_LINES, around: asked })
    .then((answer) => {
      if (state.around === asked) state.answer = answer;
    })
    .catch((error) => {
      if (state.around === asked) state.error = error.message || String(error);
    })
    .finally(() => {
      if (entry.context === state && state.around === asked) changed();
    });
}

// The choice of whose lines, above the newer block.
function aroundChoice(entry, state, changed) {
  const select = h(
    "select",
    { testid: "context-around", "aria-label": "Whose lines the context shows", class: "context-around" },
    AROUND.map(([value, label]) => h("option", { value, selected: value === state.around ? true : undefined }, label)),
  );
  select.value = state.around;
  select.addEventListener("change", () => {
    state.around = select.value;
    load(entry, state, entry.record._id, changed);
    changed();
  });
  return h("div", { class: "context-choice muted" }, "Context: ", select);
}

// Further lines on one side: the context of the farthest line shown, on that side
// only (the same host and app, the API's order), joined to what is shown.
function more(state, side, changed) {
  if (state.loading[side]) return;
  const answer = state.answer;
  const edge = side === "newer" ? answer.after[answer.after.length - 1] : answer.before[0];
  state.loading[side] = true;
  state.moreError = null;
  changed();
  const counts = side === "newer" ? { before: 0, after: CONTEXT_LINES } : { before: CONTEXT_LINES, after: 0 };
  get("/v1/export/context", { line: edge._id, ...counts, around: state.around })
    .then((further) => {
      if (side === "newer") {
        answer.after = [...answer.after, ...further.after];
        answer.more_after = further.more_after;
      } else {
        answer.before = [...further.before, ...answer.before];
        answer.more_before = further.more_before;
      }
    })
    .catch((error) => {
      state.moreError = error.message || String(error);
    })
    .finally(() => {
      state.loading[side] = false;
      changed();
    });
}

function moreButton(state, side, changed) {
  const label = side === "newer" ? `${CONTEXT_LINES} newer lines` : `${CONTEXT_LINES} older lines`;
  return h(
    "button",
    {
      type: "button",
      class: "context-more",
      testid: `context-more-${side}`,
      disabled: state.loading[side] ? true : undefined,
      onclick: () => more(state, side, changed),
    },
    state.loading[side] ? "Loading…" : label,
  );
}

function block(state, side, changed) {
  const answer = state.answer;
  const records = side === "newer" ? answer.after : answer.before;
  const further = side === "newer" ? answer.more_after : answer.more_before;
  // The list is newest first: the context reads the same way.
  const rows = [...records].reverse().map((record) => summaryRow(record, "context-line", { testid: "context-line" }));
  const parts = rows.length ? rows : [h("div", { class: "muted context-note" }, `No ${side} lines (${whose(state)}).`)];
  if (further && records.length) {
    // Newer lines go on top of the newer block, older ones below the older block.
    if (side === "newer") parts.unshift(moreButton(state, side, changed));
    else parts.push(moreButton(state, side, changed));
  }
  if (state.moreError) parts.push(h("div", { class: "error", role: "alert" }, state.moreError));
  return h("div", { class: `context context-${side}`, testid: `context-${side}` }, parts);
}

// The elements above (`newer`) and below (`older`) the line; `changed()` redraws them.
export function contextParts(entry, changed) {
  const state = entry.context;
  if (!state) return { newer: null, older: null };
  const choice = aroundChoice(entry, state, changed);
  if (state.answer) {
    const newer = block(state, "newer", changed);
    newer.prepend(choice);
    return { newer, older: block(state, "older", changed) };
  }
  const note = state.error ? h("div", { class: "error", role: "alert" }, state.error) : h("div", { class: "muted" }, "Loading context…");
  return { newer: h("div", { class: "context context-newer" }, choice), older: h("div", { class: "context context-older" }, note) };
}

// The expanded line's button that shows (or hides) its context; `changed()` redraws it.
export function contextButton(entry, changed) {
  const id = entry.record._id;
  if (!id) return null; // a line never stored (indexonly, from live tail) has no context
  const shown = Boolean(entry.context);
  return h(
    "button",
    {
      type: "button",
      testid: "line-context",
      "aria-pressed": String(shown),
      onclick: () => {
        if (entry.context) {
          entry.context = null;
          changed();
          return;
        }
        const state = { loading: {}, around: "source" };
        entry.context = state;
        load(entry, state, id, changed);
        changed();
      },
    },
    shown ? "Hide context" : `Context (${CONTEXT_LINES} lines around, same host and app)`,
  );
}
