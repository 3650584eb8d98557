// A pipeline node's panel in the editor: add a node (kind, type, title, its route or
// inputs, its configuration in a form generated from the type's schema), or change,
// remove, try (a processor, on sample events) and tap one. Read-only for a role that
// may not manage pipelines.
import { ApiError, api, del, post } from "./api.js";
import { append, clear, errorBox, field, h } from "./dom.js";
import { inputNode } from "./pipeline_graph.js";
import { processorTrial } from "./pipeline_simulate.js";
import { routeAccess } from "./route_keys.js";
import { configForm } from "./schema_form.js";

export const KINDS = ["source", "processor", "destination"];
// The platform's path segment of each kind (docs/api-pipelines.md).
export const SEGMENT = { source: "source", processor: "transform", destination: "sink" };
const KIND_LABEL = { source: "Source", processor: "Processor", destination: "Destination" };

// What a node may take as input: every other source and processor, and their named
// outputs (a throttle's `dropped`, a route's arms).
function inputChoices(nodes, self) {
  const choices = [];
  for (const other of nodes) {
    if (other.id === self || other.kind === "destination") continue;
    choices.push({ id: other.id, label: other.title || other.type });
    for (const output of other.outputs || []) choices.push({ id: output.id, label: `${other.title || other.type} · ${output.label}` });
  }
  return choices;
}

function inputsField(nodes, node) {
  const chosen = new Set(node ? node.inputs || [] : []);
  const choices = inputChoices(nodes, node && node.id);
  // An input naming what is gone still shows (and can be unticked).
  for (const id of chosen) if (!choices.some((choice) => choice.id === id)) choices.push({ id, label: id });
  const boxes = choices.map((choice) => ({ id: choice.id, box: h("input", { type: "checkbox", value: choice.id, checked: chosen.has(choice.id) }), label: choice.label }));
  const element = h(
    "fieldset",
    { class: "field inputs", testid: "node-inputs" },
    h("legend", {}, "Inputs"),
    boxes.length
      ? boxes.map(({ box, label }) => h("label", { class: "check", testid: "node-input" }, box, ` ${label}`))
      : h("p", { class: "muted" }, "No node to take events from yet: add a source first."),
  );
  return { element, read: () => boxes.filter(({ box }) => box.checked).map(({ id }) => id) };
}

function routeField(routes, node) {
  const current = node ? node.gateway_route_id : null;
  const select = h(
    "select",
    { testid: "node-route" },
    node ? null : h("option", { value: "" }, "A new route of its own"),
    routes.map((route) => h("option", { value: route.id, selected: route.id === current }, `${route.title} (${route.type})`)),
  );
  return { element: field("Gateway route", select, "where the source receives events: POST /gateway/<route id> with one of the route's access keys"), read: () => select.value || null };
}

// The configuration: the generated form, or (a toggle) the same as JSON.
function configSection(schema, value) {
  let form = configForm(schema, value);
  const area = h("textarea", { class: "json", rows: 10, spellcheck: "false", testid: "node-config-json", hidden: true });
  const holder = h("div", { testid: "node-config" }, form.element);
  const toggle = h("button", { type: "button", class: "link", testid: "node-config-json-toggle" }, "Edit as JSON");
  const problem = h("div", {});
  const asJson = (text) => {
    area.value = text;
    area.hidden = false;
    form.element.hidden = true;
    toggle.textContent = "Edit as a form";
  };
  // Fields the form has no place for (an older alias: a filter's `condition`): the
  // configuration is shown as JSON, as stored, rather than drawn without them.
  if (form.misfits.length) {
    asJson(JSON.stringify(value, null, 2));
    problem.append(h("p", { class: "muted", testid: "node-config-note" }, `Shown as JSON: the form has no field for ${form.misfits.join(", ")}.`));
  }
  toggle.addEventListener("click", () => {
    clear(problem);
    if (area.hidden) {
      asJson(JSON.stringify(form.read().value, null, 2));
    } else {
      let parsed;
      try {
        parsed = JSON.parse(area.value || "{}");
      } catch {
        problem.append(errorBox(new Error("The configuration is not valid JSON")));
        return;
      }
      form = configForm(schema, parsed);
      clear(holder).append(form.element);
      area.hidden = true;
      toggle.textContent = "Edit as JSON";
    }
  });
  holder.append(area);
  return {
    element: h("div", { class: "config-section" }, h("div", { class: "config-head" }, h("h3", {}, "Configuration"), toggle), problem, holder),
    read() {
      if (area.hidden) return form.read();
      try {
        const value = JSON.parse(area.value || "{}");
        return { value, problems: [] };
      } catch {
        return { value: {}, problems: [{ pointer: "", message: "is not valid JSON" }] };
      }
    },
    // The server's errors on the form's fields (in JSON mode, all in the problem box).
    showErrors: (errors) => (area.hidden ? form.showErrors(errors) : errors),
  };
}

function describeError(error) {
  return `${error.instance_path || ""}${error.instance_path ? ": " : ""}${error.message}`;
}

// What went wrong with a save: the fields' errors on the fields, the others (inputs,
// route, type) in the box under the form.
function showSaveError(error, config, problem) {
  clear(problem);
  const items = error instanceof ApiError && error.body && Array.isArray(error.body.errors) ? error.body.errors : [];
  const rest = config.showErrors(items);
  problem.append(
    h(
      "div",
      { class: "error", role: "alert", testid: "node-problem" },
      error.message,
      rest.length ? h("ul", {}, rest.map((item) => h("li", {}, describeError(item)))) : null,
    ),
  );
}

// Reads the configuration and sends it (`send(value)`); what cannot be read, or what the
// server refuses, lands on the fields and in `problem`. Answers the server's error.
async function submitNode(config, problem, send) {
  const { value, problems } = config.read();
  if (problems.length) {
    config.showErrors(problems);
    clear(problem).append(h("div", { class: "error", role: "alert", testid: "node-problem" }, "Some fields cannot be read"));
    return null;
  }
  try {
    await send(value);
  } catch (error) {
    showSaveError(error, config, problem);
    return error;
  }
  return null;
}

// A node's description (optional; the API keeps up to 1,000 characters).
function descriptionInput(value) {
  const input = h("textarea", { rows: 2, maxlength: 1000, testid: "node-description", placeholder: "optional: what this node is for" });
  input.value = value;
  return input;
}

// The panel for a new node. `onSaved(node)` after the POST.
export function newNodePanel({ pipelineId, nodes, types, routes, onSaved, onCancel }) {
  const kind = h("select", { testid: "node-kind" }, KINDS.map((value) => h("option", { value }, KIND_LABEL[value])));
  const type = h("select", { testid: "node-type" });
  const about = h("small", { testid: "node-type-description" });
  const title = h("input", { maxlength: 250, testid: "node-title", placeholder: "optional" });
  const description = descriptionInput("");
  const variable = h("div", {});
  const problem = h("div", {});
  let config = null;
  let wiring = null;

  const typesOf = () => types.filter((item) => item.kind === kind.value);
  function fillTypes() {
    append(clear(type), typesOf().map((item) => h("option", { value: item.type, disabled: !item.enabled }, item.enabled ? item.type : `${item.type} (needs the ${item.feature} feature)`)));
    chooseType();
  }
  function chooseType() {
    const chosen = typesOf().find((item) => item.type === type.value);
    clear(problem);
    clear(variable);
    if (!chosen) return;
    about.textContent = chosen.description.replace(/`/g, "");
    wiring = kind.value === "source" ? (chosen.gateway_route ? routeField(routes, null) : null) : inputsField(nodes, null);
    config = configSection(chosen.user_config_schema, {});
    // A processor is tried on sample events with the form as it stands, before it is
    // added (a new type or kind starts a new trial).
    const trial =
      kind.value === "processor"
        ? h("details", { class: "node-new-try", testid: "node-new-try" }, h("summary", {}, "Try it before adding it"), processorTrial({ type: chosen.type, read: () => config.read() }))
        : null;
    append(variable, [wiring ? wiring.element : null, config.element, trial]);
  }
  kind.addEventListener("change", fillTypes);
  type.addEventListener("change", chooseType);
  fillTypes();

  const form = h(
    "form",
    { class: "card node-panel", testid: "node-panel" },
    h("h2", {}, "Add a node"),
    h("div", { class: "row-2" }, field("Kind", kind), field("Type", type)),
    about,
    field("Title", title),
    field("Description", description),
    variable,
    problem,
    h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary", testid: "node-save" }, "Add node"), h("button", { type: "button", testid: "node-cancel", onclick: onCancel }, "Cancel")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await submitNode(config, problem, async (value) => {
      const body = { type: type.value, title: title.value.trim() || null, description: description.value.trim() || null, user_config: value };
      if (kind.value === "source") {
        if (wiring && wiring.read()) body.gateway_route_id = wiring.read();
      } else body.inputs = wiring.read();
      await onSaved((await post(`/v3/pipeline/${encodeURIComponent(pipelineId)}/${SEGMENT[kind.value]}`, body)).data);
    });
  });
  return form;
}

// The panel of an existing node: its form (or, read-only, what it is), the publish
// problems found on it, Remove, and `extra` (the tap) below; `events`: its events over
// the page's window, charted.
export function nodePanel({ pipelineId, node, nodes, types, routes, canEdit, problems = [], onSaved, onRemoved, onClose, extra = null, alerts = null, events = null }) {
  const item = types.find((each) => each.kind === node.kind && (each.type === node.type || each.aliases.includes(node.type)));
  const head = h(
    "div",
    { class: "panel-head" },
    h("h2", {}, node.title || node.type),
    h("button", { type: "button", class: "link", title: "Close", testid: "node-close", onclick: onClose }, "×"),
  );
  const about = h("p", { class: "muted" }, `${node.kind} · ${node.type}`, h("br"), h("small", {}, `id ${node.id}`));
  const said = node.description ? h("p", { class: "node-description", testid: "node-description-text" }, node.description) : null;
  const found = problems.length ? h("div", { class: "error", role: "alert" }, h("strong", {}, "Not published: "), h("ul", {}, problems.map((problem) => h("li", { testid: "node-publish-error" }, problem.message)))) : null;
  if (!canEdit) {
    const from = (node.inputs || []).map((input) => {
      const other = nodes.find((each) => each.id === inputNode(input));
      return other ? other.title || other.type : input;
    });
    return h(
      "div",
      { class: "card node-panel", testid: "node-panel" },
      head,
      about,
      said,
      found,
      node.kind === "source" ? null : h("p", {}, "Inputs: ", from.length ? from.join(", ") : "none"),
      h("h3", {}, "Configuration"),
      h("pre", { class: "config-json", testid: "node-config-json" }, JSON.stringify(node.user_config || {}, null, 2)),
      extra,
      events ? [h("h3", {}, "Events"), events] : null,
      alerts ? [h("h3", {}, "Alerts"), alerts] : null,
    );
  }
  const title = h("input", { maxlength: 250, value: node.title || "", testid: "node-title", placeholder: "optional" });
  const description = descriptionInput(node.description || "");
  const wiring = node.kind === "source" ? (node.gateway_route_id ? routeField(routes, node) : null) : inputsField(nodes, node);
  const config = configSection(item ? item.user_config_schema : {}, node.user_config || {});
  const problem = h("div", {});
  const path = `/v3/pipeline/${encodeURIComponent(pipelineId)}/${SEGMENT[node.kind]}/${encodeURIComponent(node.id)}`;
  const remove = h("button", { type: "button", class: "danger", testid: "node-remove" }, "Remove node");
  remove.addEventListener("click", async () => {
    if (!confirm(`Remove “${node.title || node.type}” from the draft?`)) return;
    clear(problem);
    try {
      await del(path);
      onRemoved(node);
    } catch (error) {
      problem.append(h("div", { class: "error", role: "alert", testid: "node-problem" }, error.message));
    }
  });
  const form = h(
    "form",
    { class: "node-form" },
    field("Title", title),
    field("Description", description),
    wiring ? wiring.element : null,
    node.kind === "source" && node.gateway_route_id ? routeAccess(node.gateway_route_id, node.title || node.type) : null,
    config.element,
    problem,
    h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary", testid: "node-save" }, "Save node"), remove),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = await submitNode(config, problem, async (value) => {
      // generation_id: a node changed meanwhile (another tab, Terraform) is a 409, not lost.
      const body = { title: title.value.trim() || null, description: description.value.trim() || null, user_config: value, generation_id: node.generation_id };
      if (node.kind !== "source") body.inputs = wiring.read();
      else if (wiring && wiring.read() && wiring.read() !== node.gateway_route_id) body.gateway_route_id = wiring.read();
      await onSaved((await api("PATCH", path, { body })).data);
    });
    const first = error instanceof ApiError && error.status === 409 && error.body && (error.body.errors || [])[0];
    if (first && first.keyword === "generation_id") {
      problem.append(h("p", { class: "muted" }, "The node was changed elsewhere since this page read it: close the panel and open it again to see its current state."));
    }
  });
  const sections = [["Configure", "node-tab-config", form]];
  if (node.kind === "processor") sections.push(["Try", "node-tab-try", processorTrial({ type: node.type, read: () => config.read() })]);
  if (extra) sections.push(["Live tap", "node-tab-tap", extra]);
  if (events) sections.push(["Events", "node-tab-events", events]);
  if (alerts) sections.push(["Alerts", "node-tab-alerts", alerts]);
  return h("div", { class: "card node-panel", testid: "node-panel" }, head, about, said, found, sections.length > 1 ? tabs(sections) : form);
}

// Sections of a panel, one shown at a time (the others stay as they are: a tap keeps
// running while the configuration is shown).
function tabs(sections) {
  const buttons = sections.map(([label, testid], index) => h("button", { type: "button", role: "tab", testid, "aria-selected": String(index === 0) }, label));
  const bodies = sections.map(([, , body], index) => h("div", { role: "tabpanel", hidden: index !== 0 }, body));
  buttons.forEach((button, index) =>
    button.addEventListener("click", () => {
      buttons.forEach((other, at) => other.setAttribute("aria-selected", String(at === index)));
      bodies.forEach((body, at) => {
        body.hidden = at !== index;
      });
    }),
  );
  return [h("div", { class: "tabs", role: "tablist" }, buttons), bodies];
}
