// One log line as shown: a summary row that expands to its fields, tags and meta as a
// tree. Clicking a value calls `onPick(term)` with a query term that selects it; the
// button beside it, with the term that leaves it out (`-name:==value`).
import { formatTime, h } from "./dom.js";

const BUILT_IN = [
  ["_host", "host"],
  ["_app", "app"],
  ["level", "level"],
  ["_env", "env"],
  ["_file", "file"],
  ["_ip", "ip"],
  ["_mac", "mac"],
];

// A value as a search literal: quoted when it holds anything the syntax reads.
export function literal(value) {
  const text = String(value);
  if (text !== "" && /^[^\s"():\[\],\\*<>=-][^\s"():\[\],\\]*$/.test(text) && !/^(AND|OR)$/.test(text)) return text;
  return `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

// `name:==value` (whole value, any case): the narrowest test a click can mean.
export function termFor(name, value) {
  return `${name}:==${literal(value)}`;
}

// A value that adds `name:==value` to the query, and beside it a button that adds
// `-name:==value` (leave it out).
export function pickable(name, value, onPick) {
  const term = termFor(name, value);
  return h(
    "span",
    { class: "pick" },
    h("button", { type: "button", class: "value", testid: "value-include", title: `Add ${term} to the query`, onclick: () => onPick(term) }, String(value)),
    h(
      "button",
      { type: "button", class: "exclude", testid: "value-exclude", title: `Add -${term} to the query`, "aria-label": `Exclude ${name} ${value}`, onclick: () => onPick(`-${term}`) },
      "\u2212",
    ),
  );
}

// Names the query reads as something other than a meta key (search/compiler.py's
// BUILTIN_FIELDS, and `meta` itself): a meta key of one of these names is `meta.<key>`.
const QUERY_NAMES = new Set(["host", "app", "level", "source", "file", "namespace", "_account", "_host", "_app", "_file", "_line", "meta", "AND", "OR"]);
// A key the syntax can name as one part of a field path.
const PATH_PART = /^[^\s()":.]+$/;

// The field name a query reaches a meta value by (`keys` the path into meta), or null
// when the syntax has none (a key with a space, a colon, a dot...).
export function metaField(keys) {
  if (!keys.every((key) => PATH_PART.test(key))) return null;
  const name = keys.join(".");
  return QUERY_NAMES.has(keys[0]) || keys[0].startsWith("-") ? `meta.${name}` : name;
}

function metaTree(value, keys, onPick) {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((item, i) => [String(i), item]) : Object.entries(value);
    return h(
      "ul",
      { class: "tree" },
      entries.map(([key, item]) => {
        const childKeys = [...keys, key];
        if (item !== null && typeof item === "object") {
          return h("li", {}, h("details", { open: true }, h("summary", {}, key), metaTree(item, childKeys, onPick)));
        }
        // Array items have no field path of their own in the syntax, nor has a key the
        // syntax cannot name: shown, not pickable.
        const name = Array.isArray(value) || item === null ? null : metaField(childKeys);
        const shown = name === null ? h("span", { class: "value plain" }, String(item)) : pickable(name, item, onPick);
        return h("li", {}, h("span", { class: "key" }, key), ": ", shown);
      }),
    );
  }
  return h("span", {}, String(value));
}

function detail(record, onPick, actions) {
  const fields = BUILT_IN.filter(([key]) => record[key] !== undefined && record[key] !== "").map(([key, name]) =>
    h("tr", {}, h("th", {}, name), h("td", {}, pickable(name, record[key], onPick))),
  );
  const tags = record._tag || [];
  return h(
    "div",
    { class: "detail" },
    actions && actions.length ? h("div", { class: "line-actions" }, actions) : null,
    h("table", { class: "fields" }, h("tbody", {}, fields)),
    tags.length ? h("div", { class: "tags" }, h("strong", {}, "Tags "), tags.map((tag) => h("span", { class: "tag" }, tag))) : null,
    record._meta && Object.keys(record._meta).length
      ? h("div", { class: "meta" }, h("strong", {}, "Meta"), metaTree(record._meta, [], onPick))
      : null,
  );
}

// The one-row form of a line: time, host, app, level, text.
export function summaryRow(record, className, attrs = {}) {
  const level = String(record.level || "").toLowerCase();
  return h(
    "div",
    { class: className, ...attrs },
    h("time", {}, formatTime(record._ts)),
    h("span", { class: "host" }, record._host || ""),
    h("span", { class: "app" }, record._app || ""),
    h("span", { class: `level level-${level.replace(/[^a-z]/g, "")}` }, record.level || ""),
    h("span", { class: "text" }, record._line),
  );
}

// `open`/`onToggle`: the expanded state kept by the caller (a virtualised list draws a
// row again when it comes back into view); without `onToggle` the row keeps it itself.
// `actions`: () => elements for the expanded part; `newer`/`older`: elements drawn
// above and below the summary (the line's context).
export function lineElement(record, { onPick = () => {}, open = false, onToggle = null, actions = null, newer = null, older = null } = {}) {
  const summary = summaryRow(record, "summary");
  const el = h("div", { class: open ? "log-line open" : "log-line", testid: "log-line" }, newer, summary, older);
  if (record._id) el.dataset.id = record._id;
  const expand = () => el.append(detail(record, onPick, actions ? actions() : null));
  if (open) expand();
  summary.addEventListener("click", () => {
    if (onToggle) return onToggle();
    const now = el.classList.toggle("open");
    if (now && !el.querySelector(".detail")) expand();
  });
  return el;
}
