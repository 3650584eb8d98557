// Completion in the search box: field names (the built-in ones, the meta and parsed
// fields of the loaded lines, and those of the range's newest lines whatever the query:
// GET /v1/aggregate/fields, asked once per range) and, after `name:`, the field's top values over the
// search's range (GET /v1/aggregate, asked once per field and range, never while a
// key is being typed: a pause first). A list under the box; arrows move, Enter or Tab
// accept, Escape closes; a click accepts too. Accepting replaces the token being typed
// at the cursor.
import { get } from "./api.js";
import { formatCount, h } from "./dom.js";
import { literal, metaField } from "./lines.js";

// `source` and `namespace` are built in too, but stored lines never have them.
const BUILT_IN = ["host", "app", "level", "file"];
const COUNTED = ["host", "app", "level"]; // the aggregation's own top values
const NO_VALUES = new Set(["file", "_line", "_file", "_account"]); // no top values (fields= refuses them)
const TOP = 20; // values asked per field, before the typed prefix narrows them
const SHOWN = 12; // items in the list at most
const PAUSE_MS = 120; // typing pauses this long before the list is worked out

// What is being typed at `cursor`: a field name (`{kind: "name", start, end, prefix}`)
// or a field's value (`{kind: "value", name, start, end, prefix}`), `start`..`end` the
// text an accepted item replaces; null when there is nothing to complete there.
export function tokenAt(text, cursor) {
  let start = cursor;
  while (start > 0 && !/[\s()]/.test(text[start - 1])) start -= 1;
  while (text[start] === "-" && start < cursor) start += 1;
  const token = text.slice(start, cursor);
  const colon = token.indexOf(":");
  if (colon < 0) {
    if (!token || token.startsWith('"')) return null;
    let end = cursor;
    while (end < text.length && !/[\s()":]/.test(text[end])) end += 1;
    return { kind: "name", start, end, prefix: token, colonAfter: text[end] === ":" };
  }
  const name = token.slice(0, colon);
  let at = start + colon + 1;
  while (text[at] === "=" && at < cursor) at += 1;
  let prefix = text.slice(at, cursor);
  // A list, a group or a comparison is not one value to complete.
  if (!name || /^[[(<>]/.test(prefix)) return null;
  if (prefix.startsWith('"')) {
    if (prefix.length > 1 && prefix.endsWith('"')) return null;
    prefix = prefix.slice(1);
  }
  let end = cursor;
  while (end < text.length && !/[\s()]/.test(text[end])) end += 1;
  return { kind: "value", name, start: at, end, prefix };
}

const startsWith = (value, prefix) => value.toLowerCase().startsWith(prefix.toLowerCase());

// `input`: the search box; `names()`: the loaded lines' field names; `range()`: the
// search's `{from, to}`; `rangeKey()`: what identifies that range (a new one empties the
// cache of values).
export function attachCompletion(input, { names, range, rangeKey }) {
  const list = h("ul", { class: "completion", id: "search-completion", role: "listbox", testid: "completion", hidden: true });
  input.setAttribute("role", "combobox");
  input.setAttribute("aria-autocomplete", "list");
  input.setAttribute("aria-controls", list.id);
  input.setAttribute("aria-expanded", "false");
  input.setAttribute("autocomplete", "off");
  input.after(list);

  let values = new Map(); // field name -> {rows: [{value, count}] | null}
  let rangeNames = []; // the range's field names, as the query names them
  let namesKey = null;
  let valuesKey = null;
  let items = []; // [{label, count, insert, token}]
  let active = -1;
  let timer = 0;

  function close() {
    clearTimeout(timer);
    timer = 0;
    list.hidden = true;
    list.replaceChildren();
    items = [];
    active = -1;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
  }

  // The top values of `name`: asked once (per range); `done()` when they have come.
  function topValues(name, done) {
    const key = rangeKey();
    if (key !== valuesKey) {
      values = new Map();
      valuesKey = key;
    }
    if (values.has(name)) return values.get(name).rows;
    // host, app and level come in one answer: one request for the three.
    const fields = COUNTED.includes(name) ? COUNTED : [name];
    const slot = { rows: null };
    for (const field of fields) if (!values.has(field)) values.set(field, slot);
    const counted = fields.length > 1;
    const store = values; // a new range meanwhile has a map of its own
    get("/v1/aggregate", { ...range(), buckets: 1, top: TOP, fields: counted ? undefined : name })
      .then((answer) => {
        for (const field of fields) store.set(field, { rows: (counted ? answer.top[field] : answer.top.fields?.[field]) || [] });
      })
      .catch(() => {
        // A field without top values (a 400), or the server busy: no suggestions.
        for (const field of fields) store.set(field, { rows: [] });
      })
      .finally(() => {
        if (valuesKey === key) done();
      });
    return null;
  }

  // The field names of the range's newest lines (the server reads a sample of them):
  // asked once per range; `done()` when they have come.
  function namesOfRange(done) {
    const key = rangeKey();
    if (key === namesKey) return rangeNames;
    namesKey = key;
    rangeNames = [];
    get("/v1/aggregate/fields", range())
      .then((answer) => {
        if (namesKey !== key) return;
        rangeNames = answer.paths.map((item) => metaField(item.path)).filter((name) => name !== null);
        done();
      })
      .catch(() => {
        /* none: the loaded lines' names only */
      });
    return rangeNames;
  }

  function suggestions(token) {
    if (token.kind === "name") {
      const seen = new Set();
      const found = [];
      const again = () => {
        const now = tokenAt(input.value, input.selectionStart ?? input.value.length);
        if (document.activeElement === input && now && now.kind === "name" && now.prefix) show(now);
      };
      for (const name of [...BUILT_IN, ...names(), ...namesOfRange(again)]) {
        if (seen.has(name) || !startsWith(name, token.prefix)) continue;
        seen.add(name);
        found.push({ label: `${name}:`, insert: token.colonAfter ? name : `${name}:`, token, reopen: !token.colonAfter });
      }
      return { found };
    }
    if (NO_VALUES.has(token.name)) return { found: [] };
    const rows = topValues(token.name, () => {
      const now = tokenAt(input.value, input.selectionStart ?? input.value.length);
      if (document.activeElement === input && now && now.kind === "value") show(now);
    });
    if (rows === null) return { found: [], waiting: true };
    const found = rows
      .filter((row) => row.value !== null && startsWith(String(row.value), token.prefix))
      .map((row) => ({ label: String(row.value), count: row.count, insert: literal(row.value), token, space: true }));
    return { found };
  }

  function show(token) {
    const { found, waiting } = suggestions(token);
    items = found.slice(0, SHOWN);
    // The value already typed in full is no suggestion.
    if (items.length === 1 && items[0].insert === input.value.slice(token.start, token.end)) items = [];
    active = -1;
    list.replaceChildren(
      ...items.map((item, i) =>
        h(
          "li",
          {
            id: `search-completion-${i}`,
            role: "option",
            "aria-selected": "false",
            testid: "completion-item",
            // mousedown, not click: the box keeps the focus (a blur closes the list).
            onmousedown: (event) => {
              event.preventDefault();
              accept(i);
            },
          },
          h("span", { class: "completion-text" }, item.label),
          item.count === undefined ? null : h("span", { class: "count" }, formatCount(item.count)),
        ),
      ),
    );
    if (waiting) list.append(h("li", { class: "muted completion-note", role: "presentation" }, `values of ${token.name}…`));
    const open = items.length > 0 || Boolean(waiting);
    list.hidden = !open;
    input.setAttribute("aria-expanded", String(open));
    input.removeAttribute("aria-activedescendant");
    if (open) {
      list.style.left = `${input.offsetLeft}px`;
      list.style.top = `${input.offsetTop + input.offsetHeight}px`;
      list.style.minWidth = `${Math.min(input.offsetWidth, 420)}px`;
    }
  }

  function refresh() {
    timer = 0;
    const token = tokenAt(input.value, input.selectionStart ?? input.value.length);
    if (!token || (token.kind === "name" && !token.prefix)) close();
    else show(token);
  }

  function move(by) {
    if (!items.length) return;
    active = (active + by + items.length) % items.length;
    list.querySelectorAll("[role=option]").forEach((el, i) => el.setAttribute("aria-selected", String(i === active)));
    input.setAttribute("aria-activedescendant", `search-completion-${active}`);
    list.children[active].scrollIntoView({ block: "nearest" });
  }

  function accept(i) {
    const item = items[i];
    if (!item) return;
    const { start, end } = item.token;
    const text = input.value;
    const after = text.slice(end);
    const space = item.space && !/^\s/.test(after) ? " " : "";
    input.value = text.slice(0, start) + item.insert + space + after;
    const cursor = start + item.insert.length + space.length;
    input.setSelectionRange(cursor, cursor);
    close();
    // A field name accepted: its values next.
    if (item.reopen) refresh();
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, PAUSE_MS);
  });
  input.addEventListener("keydown", (event) => {
    if (event.isComposing) return; // the keys belong to the input method
    const open = !list.hidden;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (!open) refresh();
      else move(event.key === "ArrowDown" ? 1 : -1);
    } else if (event.key === "Escape" && open) {
      event.preventDefault(); // a search box would also clear itself
      close();
    } else if (event.key === "Enter" && open && active >= 0) {
      event.preventDefault(); // the form would run the search
      accept(active);
    } else if (event.key === "Tab" && open && items.length) {
      event.preventDefault();
      accept(Math.max(active, 0));
    } else if (event.key === "Enter") close();
  });
  input.addEventListener("blur", close);
  return { close };
}
