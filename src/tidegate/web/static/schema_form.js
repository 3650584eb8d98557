// A form generated from a JSON Schema: a pipeline node's `user_config`, from the schema
// the server generates from the component's configuration model
// (GET /v3/pipeline/component-type). Objects become fieldsets, enums selects, booleans
// checkboxes, numbers and strings inputs, arrays lists with Add and Remove, a choice
// between shapes a select of them; anything else (a free-form object, a shape nested
// too deep) a JSON text area. Every field's box carries its JSON Pointer
// (`data-pointer`), so the server's validation errors land on the field they name.
//
// What is sent is what the person set: a field left empty (or a checkbox left at its
// default) is left out, as the API stores `user_config` exactly as sent and fills in
// the defaults itself; keys the form does not know (`_output_name`) are kept.
import { clear, h } from "./dom.js";

const MAX_DEPTH = 6;
let nextId = 0;

// `$ref`s (to `#/$defs/...`) and a single `allOf` resolved, the referring schema's
// own keywords (default, description) kept over the referred one's.
export function resolve(schema, root) {
  let found = schema || {};
  for (let hops = 0; hops < 20; hops += 1) {
    if (found.$ref) {
      const { $ref, ...rest } = found;
      const name = decodeURIComponent($ref.replace(/^#\/\$defs\//, ""));
      found = { ...((root.$defs || {})[name] || {}), ...rest };
    } else if (Array.isArray(found.allOf) && found.allOf.length === 1) {
      const { allOf, ...rest } = found;
      found = { ...allOf[0], ...rest };
    } else break;
  }
  return found;
}

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const SCALARS = new Set(["string", "number", "integer", "boolean"]);

function typesOf(schema) {
  if (Array.isArray(schema.type)) return schema.type;
  return schema.type ? [schema.type] : [];
}

function describe(schema) {
  const parts = [];
  if (schema.description) parts.push(schema.description.replace(/`/g, ""));
  const fallback = schema.default;
  if (fallback !== undefined && fallback !== null && fallback !== "" && typeof fallback !== "object") parts.push(`default ${JSON.stringify(fallback)}`);
  if (schema.minimum !== undefined || schema.maximum !== undefined) parts.push(`${schema.minimum ?? "…"} to ${schema.maximum ?? "…"}`);
  return parts.join("; ");
}

// A field: its label (the configuration's own field name), the control, a hint.
function fieldBox(ctx, control, { hint } = {}) {
  const id = `cfg-${(nextId += 1)}`;
  control.id = id;
  if (ctx.required) control.setAttribute("aria-required", "true");
  return h(
    "div",
    { class: "field", "data-pointer": ctx.pointer },
    h("span", { class: "label-row" }, h("label", { for: id }, ctx.label), ctx.required ? h("span", { class: "req", "aria-hidden": "true", title: "required" }, "*") : null),
    control,
    hint ? h("small", {}, hint) : null,
  );
}

function textEditor(schema, ctx) {
  // A text area for long texts (a script, a pattern), not for a token or a password.
  const long = (schema.maxLength || 0) >= 10_000;
  const present = ctx.present && typeof ctx.value === "string";
  const value = present ? ctx.value : "";
  const placeholder = typeof schema.default === "string" ? schema.default : "";
  const input = long ? h("textarea", { rows: 4, placeholder, spellcheck: "false" }, value) : h("input", { type: "text", value, placeholder, spellcheck: "false" });
  return {
    element: fieldBox(ctx, input, { hint: describe(schema) }),
    // Emptied, the field is left out (a stored "" stays "").
    read: () => (input.value === "" ? (present && ctx.value === "" ? "" : undefined) : input.value),
  };
}

function numberEditor(schema, ctx) {
  const integer = typesOf(schema).includes("integer") && !typesOf(schema).includes("number");
  const input = h("input", {
    type: "number",
    step: integer ? "1" : "any",
    min: schema.minimum,
    max: schema.maximum,
    value: typeof ctx.value === "number" ? String(ctx.value) : "",
    placeholder: typeof schema.default === "number" ? String(schema.default) : "",
  });
  return {
    element: fieldBox(ctx, input, { hint: describe(schema) }),
    read(problems) {
      if (input.value === "") return undefined;
      const number = Number(input.value);
      if (!Number.isFinite(number)) problems.push({ pointer: ctx.pointer, message: "is not a number" });
      return number;
    },
  };
}

// A value of several scalar types (a condition's `value`: a string or a number): typed
// as text; text that reads as a number is sent as one, unless it was a string before.
function scalarUnionEditor(schema, types, ctx) {
  const wasString = ctx.present && typeof ctx.value === "string";
  const input = h("input", { type: "text", value: ctx.present && ctx.value !== null ? String(ctx.value) : "", spellcheck: "false" });
  const numeric = types.includes("number") || types.includes("integer");
  return {
    element: fieldBox(ctx, input, { hint: [describe(schema), numeric && types.includes("string") ? "a number is sent as a number" : ""].filter(Boolean).join("; ") }),
    read() {
      const text = input.value;
      if (text === "") return ctx.present && ctx.value === "" ? "" : undefined;
      if (numeric && !wasString && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text.trim())) return Number(text);
      if (types.includes("boolean") && !types.includes("string") && (text === "true" || text === "false")) return text === "true";
      return text;
    },
  };
}

function enumEditor(schema, ctx) {
  const options = schema.enum;
  const index = ctx.present ? options.findIndex((option) => option === ctx.value) : -1;
  // A stored value the enum does not list (another spelling the server accepts).
  if (ctx.present && index < 0 && ctx.value !== null) ctx.misfits.push(ctx.pointer);
  const none = schema.default !== undefined ? `— default: ${schema.default} —` : ctx.required ? "— choose —" : "— none —";
  const select = h(
    "select",
    {},
    h("option", { value: "" }, none),
    options.map((option, i) => h("option", { value: String(i), selected: i === index }, String(option))),
  );
  return {
    element: fieldBox(ctx, select, { hint: schema.description ? schema.description.replace(/`/g, "") : "" }),
    read: () => (select.value === "" ? undefined : options[Number(select.value)]),
  };
}

function booleanEditor(schema, ctx) {
  const fallback = schema.default === true;
  const box = h("input", { type: "checkbox", checked: ctx.present ? ctx.value === true : fallback });
  const id = `cfg-${(nextId += 1)}`;
  box.id = id;
  return {
    element: h("div", { class: "field check", "data-pointer": ctx.pointer }, h("span", { class: "label-row" }, box, h("label", { for: id }, ctx.label)), schema.description ? h("small", {}, schema.description.replace(/`/g, "")) : null),
    read: () => (!ctx.present && box.checked === fallback ? undefined : box.checked),
  };
}

// A JSON text area: free-form objects, shapes too deep to draw, what nothing else reads.
function jsonEditor(schema, ctx) {
  const area = h("textarea", { rows: 3, class: "json", spellcheck: "false", placeholder: schema.default !== undefined ? JSON.stringify(schema.default) : "JSON" }, ctx.present ? JSON.stringify(ctx.value, null, 2) : "");
  return {
    element: fieldBox(ctx, area, { hint: [describe(schema), "JSON"].filter(Boolean).join("; ") }),
    read(problems) {
      if (area.value.trim() === "") return undefined;
      try {
        return JSON.parse(area.value);
      } catch {
        problems.push({ pointer: ctx.pointer, message: "is not valid JSON" });
        return undefined;
      }
    },
  };
}

function objectEditor(schema, ctx) {
  const properties = schema.properties || {};
  const required = new Set(schema.required || []);
  const value = isObject(ctx.value) ? ctx.value : {};
  const editors = Object.entries(properties).map(([name, property]) => [
    name,
    editorFor(property, {
      root: ctx.root,
      misfits: ctx.misfits,
      pointer: `${ctx.pointer}/${name}`,
      label: name,
      required: required.has(name),
      present: Object.hasOwn(value, name),
      value: value[name],
      depth: ctx.depth + 1,
    }),
  ]);
  // Keys the schema does not list go back as they were; where the schema allows none,
  // they are misfits (the form could not show the configuration whole).
  const kept = Object.fromEntries(Object.entries(value).filter(([name]) => !Object.hasOwn(properties, name)));
  if (schema.additionalProperties === false) ctx.misfits.push(...Object.keys(kept).map((name) => `${ctx.pointer}/${name}`));
  const body = editors.map(([, editor]) => editor.element);
  const element =
    ctx.depth === 0
      ? h("div", { class: "config-form", "data-pointer": ctx.pointer }, body.length ? body : h("p", { class: "muted" }, "Nothing to configure."))
      : h("fieldset", { class: "field", "data-pointer": ctx.pointer }, h("legend", {}, ctx.label, ctx.required ? h("span", { class: "req", title: "required" }, " *") : null), schema.description ? h("small", {}, schema.description.replace(/`/g, "")) : null, body);
  return {
    element,
    read(problems) {
      const out = { ...kept };
      for (const [name, editor] of editors) {
        const read = editor.read(problems);
        if (read !== undefined) out[name] = read;
      }
      if (ctx.depth > 0 && !ctx.required && !ctx.present && Object.keys(out).length === 0) return undefined;
      return out;
    },
  };
}

// A list: an editor per item, each with Remove; Add appends one. Removing redraws the
// items from their values, so each keeps the pointer of its place.
function arrayEditor(schema, ctx) {
  const itemSchema = schema.items || {};
  const list = h("div", { class: "items" });
  let editors = [];
  const draw = (values) => {
    clear(list);
    editors = values.map((item, index) => {
      const editor = editorFor(itemSchema, {
        root: ctx.root,
        misfits: ctx.misfits,
        pointer: `${ctx.pointer}/${index}`,
        label: `${ctx.label} ${index + 1}`,
        required: true,
        present: item !== undefined,
        value: item,
        depth: ctx.depth + 1,
      });
      list.append(
        h(
          "div",
          { class: "item" },
          editor.element,
          h("button", { type: "button", class: "remove-item", title: `Remove ${ctx.label} ${index + 1}`, onclick: () => draw(editors.filter((other) => other !== editor).map((other) => other.read([]))) }, "Remove"),
        ),
      );
      return editor;
    });
  };
  draw(Array.isArray(ctx.value) ? ctx.value : []);
  const add = h("button", { type: "button", class: "add-item", onclick: () => draw([...editors.map((editor) => editor.read([])), undefined]) }, `Add ${ctx.label}`);
  return {
    element: h("fieldset", { class: "field list-field", "data-pointer": ctx.pointer }, h("legend", {}, ctx.label, ctx.required ? h("span", { class: "req", title: "required" }, " *") : null), describe(schema) ? h("small", {}, describe(schema)) : null, list, add),
    read(problems) {
      const items = editors.map((editor) => editor.read(problems)).map((item) => (item === undefined ? (isObject(itemSchema) && resolve(itemSchema, ctx.root).type === "object" ? {} : null) : item));
      if (items.length === 0 && !ctx.required && !ctx.present) return undefined;
      return items;
    },
  };
}

// What a shape among several is called in the choice's select.
function branchLabel(branch, index) {
  if (branch.title) return branch.title;
  if (branch.properties) return Object.keys(branch.properties).slice(0, 3).join(", ") + (Object.keys(branch.properties).length > 3 ? ", …" : "");
  if (branch.type === "object") return "an object (JSON)";
  return typesOf(branch).join(" or ") || `shape ${index + 1}`;
}

// Which shape a value has: the first whose required fields it has and whose listed
// fields hold all of its own (or, for a scalar, whose type it is).
function branchOf(branches, value) {
  const found = branches.findIndex((branch) => {
    if (isObject(value)) {
      if (branch.type !== "object") return false;
      if (!branch.properties) return true;
      return (branch.required || []).every((name) => Object.hasOwn(value, name)) && (branch.additionalProperties !== false || Object.keys(value).every((name) => Object.hasOwn(branch.properties, name)));
    }
    if (Array.isArray(value)) return branch.type === "array";
    return typesOf(branch).includes(typeof value === "number" ? (Number.isInteger(value) ? "integer" : "number") : typeof value) || (typeof value === "number" && typesOf(branch).includes("number"));
  });
  return Math.max(0, found);
}

function choiceEditor(branches, ctx) {
  const chosen = ctx.present ? branchOf(branches, ctx.value) : 0;
  const holder = h("div", { class: "choice" });
  let editor = null;
  const show = (index, value, present) => {
    editor = editorFor({ ...branches[index], description: undefined }, { ...ctx, label: ctx.label, value, present, depth: ctx.depth + 1 });
    clear(holder).append(editor.element);
  };
  const select = h(
    "select",
    { "aria-label": `${ctx.label}: shape`, class: "choice-select", onchange: () => show(Number(select.value), undefined, false) },
    branches.map((branch, index) => h("option", { value: String(index), selected: index === chosen }, branchLabel(branch, index))),
  );
  show(chosen, ctx.value, ctx.present);
  return {
    element: h("div", { class: "field", "data-pointer": ctx.pointer }, h("span", { class: "label-row" }, h("span", {}, `${ctx.label}: `), select), holder),
    read: (problems) => editor.read(problems),
  };
}

// An optional object (`anyOf: [object, null]`): drawn only once asked for.
function optionalObjectEditor(schema, ctx) {
  const inner = editorFor(schema, { ...ctx, required: true, present: isObject(ctx.value), value: isObject(ctx.value) ? ctx.value : undefined });
  const on = h("input", { type: "checkbox", checked: isObject(ctx.value) });
  const id = `cfg-${(nextId += 1)}`;
  on.id = id;
  const toggle = () => {
    inner.element.hidden = !on.checked;
  };
  on.addEventListener("change", toggle);
  toggle();
  return {
    element: h("div", { class: "field optional", "data-pointer": ctx.pointer }, h("span", { class: "label-row" }, on, h("label", { for: id }, `Set ${ctx.label}`)), inner.element),
    read(problems) {
      if (!on.checked) return ctx.present && ctx.value === null ? null : undefined;
      return inner.read(problems);
    },
  };
}

export function editorFor(raw, ctx) {
  const schema = resolve(raw, ctx.root);
  if (ctx.depth > MAX_DEPTH) return jsonEditor(schema, ctx);
  const union = schema.anyOf || schema.oneOf;
  if (Array.isArray(union)) {
    const branches = union.map((branch) => resolve(branch, ctx.root));
    const nullable = branches.some((branch) => branch.type === "null");
    const rest = branches.filter((branch) => branch.type !== "null");
    const own = { default: schema.default, description: schema.description, title: schema.title };
    for (const key of Object.keys(own)) if (own[key] === undefined) delete own[key];
    if (rest.length === 1) {
      const only = { ...rest[0], ...own };
      if (nullable && only.type === "object" && only.properties) return optionalObjectEditor(only, ctx);
      return editorFor(only, { ...ctx, required: ctx.required && !nullable });
    }
    if (rest.every((branch) => typesOf(branch).every((type) => SCALARS.has(type)) && !branch.enum)) {
      return scalarUnionEditor({ ...own }, rest.flatMap(typesOf), ctx);
    }
    return choiceEditor(rest, ctx);
  }
  const types = typesOf(schema).filter((type) => type !== "null");
  if (schema.const !== undefined) return { element: h("span", {}), read: () => schema.const };
  if (Array.isArray(schema.enum)) return enumEditor(schema, ctx);
  if (types.length > 1 && types.every((type) => SCALARS.has(type))) return scalarUnionEditor(schema, types, ctx);
  if (types.length !== 1) return jsonEditor(schema, ctx);
  switch (types[0]) {
    case "boolean":
      return booleanEditor(schema, ctx);
    case "integer":
    case "number":
      return numberEditor(schema, ctx);
    case "string":
      return textEditor(schema, ctx);
    case "object":
      // The configuration itself is always a form (maybe "Nothing to configure").
      return ctx.depth === 0 || (schema.properties && Object.keys(schema.properties).length) ? objectEditor(schema, ctx) : jsonEditor(schema, ctx);
    case "array":
      return arrayEditor(schema, ctx);
    default:
      return jsonEditor(schema, ctx);
  }
}

// The whole configuration's form. `misfits`: the pointers of fields of `value` the
// schema has no place for. `read()` answers `{value, problems}` (problems: what
// the form itself could not read, by pointer); `showErrors(errors)` puts the server's
// v3 validation errors (instance paths under `/user_config`) on their fields and
// answers the ones that name no field of the form.
export function configForm(schema, value) {
  const root = schema || {};
  const misfits = [];
  const editor = editorFor(root, { root, pointer: "", label: "user_config", required: true, present: isObject(value), value: isObject(value) ? value : {}, depth: 0, misfits });
  const element = h("div", { class: "config" }, editor.element);
  return {
    element,
    // The pointers of stored fields the form has no place for.
    misfits,
    read() {
      const problems = [];
      const read = editor.read(problems);
      return { value: isObject(read) ? read : {}, problems };
    },
    showErrors(errors) {
      return showErrors(element, errors);
    },
  };
}

export function clearErrors(container) {
  for (const old of container.querySelectorAll(".field-error")) old.remove();
  for (const old of container.querySelectorAll(".invalid")) old.classList.remove("invalid");
}

// `errors`: `{pointer, message}` of the form's own, or the API's items (`instance_path`
// `/user_config/...`; a missing property named in `params.missingProperty`).
export function showErrors(container, errors) {
  clearErrors(container);
  const boxes = [...container.querySelectorAll("[data-pointer]")];
  const unplaced = [];
  for (const error of errors) {
    let pointer = error.pointer;
    if (pointer === undefined) {
      const path = error.instance_path || "";
      if (path !== "/user_config" && !path.startsWith("/user_config/")) {
        unplaced.push(error);
        continue;
      }
      pointer = path.slice("/user_config".length);
      if (error.keyword === "required" && error.params && error.params.missingProperty) pointer += `/${error.params.missingProperty}`;
    }
    let target = null;
    for (const box of boxes) {
      const at = box.dataset.pointer;
      if ((pointer === at || pointer.startsWith(`${at}/`) || at === "") && (!target || at.length > target.dataset.pointer.length) && !box.closest("[hidden]")) target = box;
    }
    if (!target) {
      unplaced.push(error);
      continue;
    }
    target.classList.add("invalid");
    target.append(h("p", { class: "field-error", role: "alert", testid: "config-error" }, error.message));
  }
  return unplaced;
}
