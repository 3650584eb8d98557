// A node's pipeline alerts (docs/api-pipelines.md, "Pipeline alerts"; the API the mezmo
// Terraform provider calls): each listed with what it watches and where it tells; an
// editor adds a threshold, change or absence alert on the node's event count, told to
// the account's logs, a webhook, Slack or PagerDuty, changes one the form can show
// whole, or removes one.
// Alerts the form cannot make (conditions on other fields or of several parts, scripts)
// are listed as they are; Terraform or the API make them.
import { del, get, post, put } from "./api.js";
import { clear, errorBox, field, h, onSubmit } from "./dom.js";

const SEGMENT = { source: "source", processor: "transform", destination: "sink" };
const SERVICES = [
  ["log_analysis", "This account's logs"],
  ["webhook", "Webhook"],
  ["slack", "Slack"],
  ["pager_duty", "PagerDuty"],
];
const SERVICE_LABEL = Object.fromEntries(SERVICES);
const SEVERITIES = ["INFO", "WARNING", "ERROR", "CRITICAL"];
// The one condition each kind the form makes is judged by, on the event count.
const FORM_OPERATOR = { threshold: "greater", change: "percent_change_greater" };
const OPERATOR_TEXT = {
  greater: "more than",
  greater_or_equal: "at least",
  less: "fewer than",
  less_or_equal: "at most",
  equal: "exactly",
  percent_change_greater: "a change of more than",
  percent_change_less: "a change of less than",
  value_change_greater: "a change of more than",
  value_change_less: "a change of less than",
};

// "more than 100 events" for a one-part condition on the event count, else its parts.
function conditionText(conditional) {
  const parts = (conditional && conditional.expressions) || [];
  return parts
    .map((part) => {
      if (part.expressions) return "(…)";
      const what = part.field === ".event_count" ? "events" : part.field === ".byte_count" ? "bytes" : part.field;
      const op = OPERATOR_TEXT[part.str_operator] || part.str_operator.replaceAll("_", " ");
      const amount = part.str_operator.startsWith("percent_change_") ? `${part.value}% in` : part.value;
      return `${part.negate === true ? "not " : ""}${op} ${amount} ${what}`;
    })
    .join(conditional.logical_operation === "OR" ? " or " : " and ");
}

export function describeAlert(alert) {
  const { evaluation, alert_payload: payload } = alert.alert_config;
  const window = `${evaluation.window_duration_minutes} min ${evaluation.window_type}`;
  const when = evaluation.alert_type === "absence" ? "no events" : conditionText(evaluation.conditional);
  const service = SERVICE_LABEL[payload.service.name] || payload.service.name;
  return `${evaluation.alert_type}: ${when} in ${window} → ${service}${alert.active ? "" : " (inactive)"}`;
}

// Whether the form can show an alert whole: a threshold "more than N events", a change
// "of more than N% in events" or an absence, told to one of the form's services. Others
// are changed through the API.
export function formable(alert) {
  const { evaluation, alert_payload: payload } = alert.alert_config;
  if (!SERVICES.some(([name]) => name === payload.service.name)) return false;
  if (evaluation.alert_type === "absence") return true;
  const parts = (evaluation.conditional && evaluation.conditional.expressions) || [];
  const [part] = parts;
  const operator = FORM_OPERATOR[evaluation.alert_type];
  return Boolean(operator) && parts.length === 1 && !part.expressions && part.field === ".event_count" && part.str_operator === operator && part.negate !== true && typeof part.value === "number" && !evaluation.script;
}

// The body of a new alert, or of `editing` changed: what the form does not show (its
// throttling, description, group_by, a script and the service's other settings when
// the service stays the same) is kept.
function alertBody(node, form, editing) {
  const kind = form.type.value;
  const minutes = Number(form.window.value);
  const before = editing ? editing.alert_config : null;
  const kept = before ? { ...before.evaluation } : { event_type: "log" };
  delete kept.conditional;
  if (kind === "absence") {
    delete kept.operation;
    delete kept.script;
  }
  const evaluation = { ...kept, alert_type: kind, window_type: form.windowType.value, window_duration_minutes: minutes };
  if (kind !== "absence") {
    evaluation.operation = kept.operation || "SUM";
    evaluation.conditional = {
      expressions: [{ field: ".event_count", str_operator: FORM_OPERATOR[kind], value: Number(form.count.value) }],
      logical_operation: "AND",
    };
  }
  const name = form.name.value.trim();
  const text = form.message.value.trim();
  const same = before && before.alert_payload.service.name === form.service.value;
  const service = same ? { ...before.alert_payload.service } : { name: form.service.value };
  if (service.name === "log_analysis") {
    service.subject = text || name;
    service.severity = form.severity.value;
  } else if (service.name === "pager_duty") {
    service.routing_key = form.routingKey.value.trim();
    service.summary = text || name;
    service.severity = form.severity.value;
    service.source = service.source || "tidegate";
    service.event_action = service.event_action || "trigger";
  } else {
    service.uri = form.url.value.trim();
    if (text) service.message_text = text;
    else delete service.message_text;
  }
  const payload = { service };
  if (before) payload.throttling = before.alert_payload.throttling;
  const general = before ? { ...before.general, name } : { name };
  return { inputs: editing ? editing.inputs : [node.id], active: editing ? editing.active : true, alert_config: { general, evaluation, alert_payload: payload } };
}

export function alertsPanel({ pipelineId, node, canEdit }) {
  const base = `/v3/pipeline/${encodeURIComponent(pipelineId)}/${SEGMENT[node.kind]}/${encodeURIComponent(node.id)}/alert`;
  const list = h("ul", { class: "plain", testid: "node-alerts" });
  const listProblem = h("div", {});

  async function load() {
    clear(listProblem);
    let alerts;
    try {
      alerts = (await get(base)).data;
    } catch (error) {
      listProblem.append(errorBox(error));
      return;
    }
    clear(list);
    if (!alerts.length) list.append(h("li", { class: "muted", testid: "node-alerts-none" }, "No alerts on this node."));
    for (const alert of alerts) {
      const edit = canEdit && formable(alert) ? h("button", { type: "button", class: "link", testid: "node-alert-edit", onclick: () => form.edit(alert) }, "Edit") : null;
      const remove = canEdit ? h("button", { type: "button", class: "link danger", testid: "node-alert-remove" }, "Remove") : null;
      if (remove) {
        remove.addEventListener("click", async () => {
          if (!confirm(`Remove the alert “${alert.alert_config.general.name}”?`)) return;
          try {
            await del(`${base}/${encodeURIComponent(alert.id)}`);
          } catch (error) {
            listProblem.append(errorBox(error));
            return;
          }
          await load();
        });
      }
      list.append(
        h("li", { testid: "node-alert", "data-alert-id": alert.id }, h("strong", {}, alert.alert_config.general.name), " ", h("span", { class: "muted", testid: "node-alert-what" }, describeAlert(alert)), " ", edit, " ", remove),
      );
    }
  }

  const element = h("section", { class: "node-alerts", testid: "node-alerts-panel" }, h("p", { class: "muted" }, "Alerts count the events that reach this node (usage, flushed every few seconds)."), list, listProblem);
  const form = canEdit ? alertForm(node, base, load) : null;
  if (form) element.append(form.element);
  load();
  return element;
}

// What the form holds for a new alert.
const NEW_ALERT = {
  name: "",
  type: "threshold",
  count: "100",
  window: "5",
  windowType: "tumbling",
  service: SERVICES[0][0],
  url: "",
  routingKey: "",
  severity: "WARNING",
  message: "",
};

// The form that adds an alert, or changes the one `edit(alert)` put in it.
function alertForm(node, base, load) {
  let editing = null;
  const form = {
    name: h("input", { required: true, maxlength: 200, testid: "node-alert-name" }),
    type: h("select", { testid: "node-alert-type" }, h("option", { value: "threshold" }, "Threshold: more than N events"), h("option", { value: "change" }, "Change: the event count moves by more than N% from the window before"), h("option", { value: "absence" }, "Absence: no events")),
    count: h("input", { type: "number", min: 0, testid: "node-alert-count" }),
    window: h("input", { type: "number", min: 1, max: 1440, required: true, testid: "node-alert-window" }),
    windowType: h("select", { testid: "node-alert-window-type" }, h("option", { value: "tumbling" }, "tumbling (judged at its end)"), h("option", { value: "sliding" }, "sliding (judged every minute)")),
    service: h("select", { testid: "node-alert-service" }, SERVICES.map(([value, label]) => h("option", { value }, label))),
    url: h("input", { type: "url", placeholder: "https://…", testid: "node-alert-url" }),
    routingKey: h("input", { type: "password", autocomplete: "off", maxlength: 256, testid: "node-alert-routing-key" }),
    severity: h("select", { testid: "node-alert-severity" }, SEVERITIES.map((value) => h("option", { value }, value.toLowerCase()))),
    message: h("input", { maxlength: 1000, placeholder: "optional; {{name}}, {{count}} are filled in", testid: "node-alert-message" }),
  };
  const countLabel = h("span", {}, "More than (events)");
  const countField = field(countLabel, form.count);
  const urlField = field("URL", form.url);
  const keyField = field("Routing key", form.routingKey);
  const severityField = field("Severity", form.severity);
  function shape() {
    const kind = form.type.value;
    const service = form.service.value;
    countField.hidden = kind === "absence";
    countLabel.textContent = kind === "change" ? "Change of more than (%)" : "More than (events)";
    urlField.hidden = service === "log_analysis" || service === "pager_duty";
    form.url.required = !urlField.hidden;
    keyField.hidden = service !== "pager_duty";
    form.routingKey.required = !keyField.hidden;
    severityField.hidden = service !== "pager_duty" && service !== "log_analysis";
  }
  form.type.addEventListener("change", shape);
  form.service.addEventListener("change", shape);
  // A new alert starts from these, and the form goes back to them after each save and
  // on cancel: nothing of the alert added or edited before is left in it.
  function fresh() {
    for (const [name, value] of Object.entries(NEW_ALERT)) form[name].value = value;
    shape();
  }
  fresh();
  const problem = h("div", { testid: "node-alert-problem" });
  const heading = h("h3", {}, "New alert");
  const save = h("button", { type: "submit", class: "primary", testid: "node-alert-save" }, "Add alert");
  const cancel = h("button", { type: "button", testid: "node-alert-cancel", hidden: true }, "Cancel");
  function reset() {
    editing = null;
    fresh();
    heading.textContent = "New alert";
    save.textContent = "Add alert";
    cancel.hidden = true;
    clear(problem);
  }
  cancel.addEventListener("click", reset);
  const element = h(
    "form",
    { class: "node-alert-form" },
    heading,
    field("Name", form.name),
    field("When", form.type),
    countField,
    field("Window (minutes)", form.window),
    field("Window", form.windowType),
    field("Tell", form.service),
    urlField,
    keyField,
    severityField,
    field("Message", form.message),
    problem,
    h("div", { class: "buttons" }, save, cancel),
  );
  onSubmit(element, problem, async () => {
    if (editing) await put(`${base}/${encodeURIComponent(editing.id)}`, alertBody(node, form, editing));
    else await post(base, alertBody(node, form, null));
    reset();
    await load();
  });
  function edit(alert) {
    const { general, evaluation, alert_payload: payload } = alert.alert_config;
    editing = alert;
    form.name.value = general.name;
    form.type.value = evaluation.alert_type;
    if (evaluation.alert_type !== "absence") form.count.value = evaluation.conditional.expressions[0].value;
    form.window.value = evaluation.window_duration_minutes;
    form.windowType.value = evaluation.window_type;
    form.service.value = payload.service.name;
    form.url.value = payload.service.uri || "";
    form.routingKey.value = payload.service.routing_key || "";
    form.severity.value = payload.service.severity || "WARNING";
    const told = { log_analysis: payload.service.subject, pager_duty: payload.service.summary };
    form.message.value = (payload.service.name in told ? told[payload.service.name] : payload.service.message_text) || "";
    heading.textContent = `Edit “${general.name}”`;
    save.textContent = "Save alert";
    cancel.hidden = false;
    clear(problem);
    shape();
    form.name.focus();
  }
  return { element, edit };
}
