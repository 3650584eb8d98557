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

// `records()`: the loaded lines (for the names suggested); `onField(name)`: a field was
// chosen ("" to close it); `onPick(term)`: a value was clicked.
export function fieldFacet({ records, onField, onPick }) {
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
  const body = h("div", { class: "facet-values" });
  const form = h("form", { class: "facet-field-form" }, input, h("button", { type: "submit", testid: "facet-field-show" }, "Show"), names);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    onField(input.value.trim());
  });
  const close = h("button", { type: "button", class: "link", title: "Close this field", onclick: () => onField("") }, "×");
  const element = h("section", { class: "facet facet-custom", testid: "facet-custom" }, h("h3", {}, "Field ", close), form, body);

  const heading = (name) => {
    input.value = name;
    close.hidden = !name;
  };
  heading("");
  return {
    element,
    loading(name) {
      heading(name);
      clear(body).append(h("p", { class: "muted" }, "Counting…"));
    },
    show(name, rows, exact) {
      heading(name);
      append(clear(body), [
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
      heading(name);
      clear(body).append(errorBox(error));
    },
  };
}
