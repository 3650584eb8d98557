// A line's context: the lines just before and after it from the same host and app
// (GET /v1/export/context), shown in place around the line. The state lives on the
// list's entry (`entry.context`), so it is still shown when the row is drawn again.
import { get } from "./api.js";
import { h } from "./dom.js";
import { summaryRow } from "./lines.js";

export const CONTEXT_LINES = 20;

function block(records, side) {
  // The list is newest first: the context reads the same way.
  const rows = [...records].reverse().map((record) => summaryRow(record, "context-line", { testid: "context-line" }));
  return h(
    "div",
    { class: `context context-${side}`, testid: `context-${side}` },
    rows.length ? rows : h("div", { class: "muted context-note" }, side === "newer" ? "No newer lines from this host and app." : "No older lines from this host and app."),
  );
}

// The elements above (`newer`) and below (`older`) the line.
export function contextParts(entry) {
  const state = entry.context;
  if (!state) return { newer: null, older: null };
  if (state.answer) return { newer: block(state.answer.after, "newer"), older: block(state.answer.before, "older") };
  const note = state.error ? h("div", { class: "error", role: "alert" }, state.error) : h("div", { class: "muted" }, "Loading context…");
  return { newer: null, older: h("div", { class: "context context-older" }, note) };
}

// The expanded line's button that shows (or hides) its context; `changed()` redraws it.
export function contextButton(entry, changed) {
  const id = entry.record._id;
  if (!id) return null; // a live line without a stored id has no context to ask for
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
        const state = {};
        entry.context = state;
        changed();
        get("/v1/export/context", { line: id, before: CONTEXT_LINES, after: CONTEXT_LINES })
          .then((answer) => {
            state.answer = answer;
          })
          .catch((error) => {
            state.error = error.message || String(error);
          })
          .finally(() => {
            if (entry.context === state) changed();
          });
      },
    },
    shown ? "Hide context" : `Context (${CONTEXT_LINES} lines around, same host and app)`,
  );
}
