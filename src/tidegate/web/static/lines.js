// One log line as shown: a summary row that expands to its fields, tags and meta as a
// tree. Clicking a value calls `onPick(term)` with a query term that selects it.
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

function pickable(name, value, onPick) {
  return h(
    "button",
    { type: "button", class: "value", title: `Add ${name}:==… to the query`, onclick: () => onPick(termFor(name, value)) },
    String(value),
  );
}

function metaTree(value, path, onPick) {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((item, i) => [String(i), item]) : Object.entries(value);
    return h(
      "ul",
      { class: "tree" },
      entries.map(([key, item]) => {
        const childPath = path ? `${path}.${key}` : key;
        if (item !== null && typeof item === "object") {
          return h("li", {}, h("details", { open: true }, h("summary", {}, key), metaTree(item, childPath, onPick)));
        }
        // Array items have no field path of their own in the syntax: shown, not pickable.
        const shown = Array.isArray(value) || item === null ? h("span", { class: "value plain" }, String(item)) : pickable(childPath, item, onPick);
        return h("li", {}, h("span", { class: "key" }, key), ": ", shown);
      }),
    );
  }
  return h("span", {}, String(value));
}

function detail(record, onPick) {
  const fields = BUILT_IN.filter(([key]) => record[key] !== undefined && record[key] !== "").map(([key, name]) =>
    h("tr", {}, h("th", {}, name), h("td", {}, pickable(name, record[key], onPick))),
  );
  const tags = record._tag || [];
  return h(
    "div",
    { class: "detail" },
    h("table", { class: "fields" }, h("tbody", {}, fields)),
    tags.length ? h("div", { class: "tags" }, h("strong", {}, "Tags "), tags.map((tag) => h("span", { class: "tag" }, tag))) : null,
    record._meta && Object.keys(record._meta).length
      ? h("div", { class: "meta" }, h("strong", {}, "Meta"), metaTree(record._meta, "", onPick))
      : null,
  );
}

export function lineElement(record, onPick) {
  const level = String(record.level || "").toLowerCase();
  const summary = h(
    "div",
    { class: "summary" },
    h("time", {}, formatTime(record._ts)),
    h("span", { class: "host" }, record._host || ""),
    h("span", { class: "app" }, record._app || ""),
    h("span", { class: `level level-${level.replace(/[^a-z]/g, "")}` }, record.level || ""),
    h("span", { class: "text" }, record._line),
  );
  const el = h("div", { class: "log-line", testid: "log-line" }, summary);
  if (record._id) el.dataset.id = record._id;
  summary.addEventListener("click", () => {
    const open = el.classList.toggle("open");
    if (open && !el.querySelector(".detail")) el.append(detail(record, onPick));
  });
  return el;
}
