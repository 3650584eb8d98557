// The facet panel's field picker: the top values of any field (parsed from the lines or
// sent in meta, named as a query names them: `status`, `user.id`), counted by
// GET /v1/aggregate's `fields=`. Each value adds `field:==value` to the query, or with
// the button beside it `-field:==value`.
import { append, clear, errorBox, formatCount, h } from "./dom.js";
import { metaField, pickable } from "./lines.js";

const MAX_NAMES = 200; // suggested field names, from the loaded lines' meta

// The dotted paths of the scalar values in the records' meta (arrays have no path).
export function fieldPaths(records) {
  const names = new Set();
  const walk = (value, keys) => {
    for (const [key, item] of Object.entries(value)) {
      if (names.size >= MAX_NAMES) return;
      if (item !== null && typeof item === "object") {
        if (!Array.isArray(item)) walk(item, [...keys, key]);
        continue;
      }
      // As the query names it (a key the syntax cannot name is left out).
      const name = metaField([...keys, key]);
      if (name !== null) names.add(name);
    }
  };
  for (const record of records) if (record._meta && typeof record._meta === "object") walk(record._meta, []);
  return [...names].sort();
}

export const MAX_FIELDS = 5; // as GET /v1/aggregate counts at most (`fields=`)

// Names a field parsed from a line's text is stored under with a `_` in front (`status`
// as `_status`); a query of the plain name tests both spellings, and so does a live
// count (tidegate.search.compiler.PREFIXED_FIELDS, docs/line-parsing.md).
const PREFIXED = new Set(["status", "_source", "_type", "_index", "_id", "_account", "_app", "_env", "_file", "_host", "_ip", "_lid", "_line", "_logtype", "_mac", "_meta", "_tag", "_ts"]);

function metaAt(meta, keys) {
  let value = meta;
  for (const key of keys) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
    value = value[key];
  }
  return value === null || typeof value === "object" ? undefined : value;
}

// A field's value in a line as the stream gives it (live tail): host, app and level are
// the line's own; any other name is a path into its meta (`meta.` names a meta key
// that would read as a built-in field). Undefined where the line has none.
export function valueOf(record, name) {
  if (name === "host") return record._host;
  if (name === "app") return record._app;
  if (name === "level") return record.level;
  const keys = name.replace(/^meta\./, "").split(".");
  const value = metaAt(record._meta, keys);
  if (value !== undefined || !PREFIXED.has(keys[0])) return value;
  return metaAt(record._meta, [`_${keys[0]}`, ...keys.slice(1)]);
}

// `records()`: the loaded lines (for the names suggested); `onFields(names)`: the
// fields chosen changed (one added, or one removed); `onPick(term)`: a value was
// clicked. Several fields are shown at once, each with its top values and a `×` that
// removes it.
export function fieldFacet({ records, onFields, onPick }) {
  const names = h("datalist", { id: "facet-field-names" });
  const input = h("input", {
    type: "text",
    list: "facet-field-names",
    placeholder: "any field: status, user.id",
    spellcheck: "false",
    "aria-label": "Field whose top values to show",
    testid: "facet-field",
  });
  input.addEventListener("focus", () => clear(names).append(...fieldPaths(records()).map((name) => h("option", { value: name }))));
  const note = h("p", { class: "muted facet-note", hidden: true });
  const body = h("div", { class: "facet-fields" });
  const form = h("form", { class: "facet-field-form" }, input, h("button", { type: "submit", testid: "facet-field-show" }, "Show"), names);
  let chosen = [];
  const sections = new Map(); // field name -> its section's values element
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = input.value.trim();
    input.value = "";
    if (!name || chosen.includes(name)) return;
    // The oldest field makes way past MAX_FIELDS.
    onFields([...chosen, name].slice(-MAX_FIELDS));
  });
  const element = h("section", { class: "facet facet-custom", testid: "facet-custom" }, h("h3", {}, "Fields"), form, note, body);

  // The fields shown, in the order chosen: a section each (kept when still chosen).
  function choose(list) {
    chosen = [...list];
    for (const name of [...sections.keys()]) if (!chosen.includes(name)) sections.delete(name);
    clear(body);
    for (const name of chosen) {
      if (!sections.has(name)) sections.set(name, h("div", { class: "facet-values" }));
      const remove = h(
        "button",
        { type: "button", class: "link", title: `Remove ${name}`, "aria-label": `Remove ${name}`, testid: "facet-field-remove", onclick: () => onFields(chosen.filter((item) => item !== name)) },
        "×",
      );
      body.append(h("div", { class: "facet-field", testid: "facet-custom-field", "data-field": name }, h("h4", {}, h("span", { class: "facet-field-name" }, name), " ", remove), sections.get(name)));
    }
  }
  const values = (name) => sections.get(name) || h("div");
  return {
    element,
    choose,
    // Live, or not: the note says where the counts come from.
    live(on) {
      note.hidden = !on;
      note.textContent = on ? "Live: counted in the lines received since it started" : "";
    },
    loading(name) {
      clear(values(name)).append(h("p", { class: "muted" }, "Counting…"));
    },
    show(name, rows, exact) {
      append(clear(values(name)), [
        rows.length
          ? h(
              "ul",
              {},
              rows.map((row) => h("li", { testid: "facet-custom-value" }, pickable(name, row.value, onPick), h("span", { class: "count" }, formatCount(row.count)))),
            )
          : h("p", { class: "muted" }, `no values of ${name} in the matching lines`),
        exact ? null : h("p", { class: "muted" }, "(counted over part of the range)"),
      ]);
    },
    failed(name, error) {
      clear(values(name)).append(errorBox(error));
    },
  };
}
