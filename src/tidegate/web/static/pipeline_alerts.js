// A node's pipeline alerts (docs/api-pipelines.md, "Pipeline alerts"; the API the mezmo
// Terraform provider calls): each listed with what it watches and where it tells; an
// editor adds a threshold or absence alert on the node's event count, or removes one.
// Alerts the form cannot make (change alerts, PagerDuty, conditionals of several parts)
// are listed as they are; Terraform or the API make them.
import { del, get, post } from "./api.js";
import { clear, errorBox, field, h, onSubmit } from "./dom.js";

const SEGMENT = { source: "source", processor: "transform", destination: "sink" };
const SERVICES = [
  ["log_analysis", "This account's logs"],
  ["webhook", "Webhook"],
  ["slack", "Slack"],
];
const SERVICE_LABEL = { ...Object.fromEntries(SERVICES), pager_duty: "PagerDuty" };
const OPERATOR_TEXT = {
  greater: "more than",
  greater_or_equal: "at least",
  less: "fewer than",
  less_or_equal: "at most",
  equal: "exactly",
};

// "more than 100 events" for a one-part condition on the event count, else its parts.
function conditionText(conditional) {
  const parts = (conditional && conditional.expressions) || [];
  return parts
    .map((part) => {
      if (part.expressions) return "(…)";
      const what = part.field === ".event_count" ? "events" : part.field === ".byte_count" ? "bytes" : part.field;
      const op = OPERATOR_TEXT[part.str_operator] || part.str_operator.replaceAll("_", " ");
      return `${part.negate === true ? "not " : ""}${op} ${part.value} ${what}`;
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

function alertBody(node, form) {
  const kind = form.type.value;
  const minutes = Number(form.window.value);
  const evaluation = { alert_type: kind, event_type: "log", window_type: form.windowType.value, window_duration_minutes: minutes };
  if (kind === "threshold") {
    evaluation.operation = "SUM";
    evaluation.conditional = {
      expressions: [{ field: ".event_count", str_operator: "greater", value: Number(form.count.value) }],
      logical_operation: "AND",
    };
  }
  const name = form.name.value.trim();
  const text = form.message.value.trim();
  const service = { name: form.service.value };
  if (service.name === "log_analysis") {
    service.subject = text || name;
    service.severity = "WARNING";
  } else {
    service.uri = form.url.value.trim();
    if (text) service.message_text = text;
  }
  return { inputs: [node.id], active: true, alert_config: { general: { name }, evaluation, alert_payload: { service } } };
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
        h("li", { testid: "node-alert", "data-alert-id": alert.id }, h("strong", {}, alert.alert_config.general.name), " ", h("span", { class: "muted", testid: "node-alert-what" }, describeAlert(alert)), " ", remove),
      );
    }
  }

  const element = h("section", { class: "node-alerts", testid: "node-alerts-panel" }, h("p", { class: "muted" }, "Alerts count the events that reach this node (usage, flushed every few seconds)."), list, listProblem);
  if (canEdit) element.append(addForm(node, base, load));
  load();
  return element;
}

function addForm(node, base, load) {
  const form = {
    name: h("input", { required: true, maxlength: 200, testid: "node-alert-name" }),
    type: h("select", { testid: "node-alert-type" }, h("option", { value: "threshold" }, "Threshold: more than N events"), h("option", { value: "absence" }, "Absence: no events")),
    count: h("input", { type: "number", min: 0, value: 100, testid: "node-alert-count" }),
    window: h("input", { type: "number", min: 1, max: 1440, value: 5, required: true, testid: "node-alert-window" }),
    windowType: h("select", { testid: "node-alert-window-type" }, h("option", { value: "tumbling" }, "tumbling (judged at its end)"), h("option", { value: "sliding" }, "sliding (judged every minute)")),
    service: h("select", { testid: "node-alert-service" }, SERVICES.map(([value, label]) => h("option", { value }, label))),
    url: h("input", { type: "url", placeholder: "https://…", testid: "node-alert-url" }),
    message: h("input", { maxlength: 1000, placeholder: "optional; {{name}}, {{count}} are filled in", testid: "node-alert-message" }),
  };
  const countField = field("More than (events)", form.count);
  const urlField = field("URL", form.url);
  function shape() {
    countField.hidden = form.type.value !== "threshold";
    urlField.hidden = form.service.value === "log_analysis";
  }
  form.type.addEventListener("change", shape);
  form.service.addEventListener("change", shape);
  shape();
  const problem = h("div", { testid: "node-alert-problem" });
  const element = h(
    "form",
    { class: "node-alert-form" },
    h("h3", {}, "New alert"),
    field("Name", form.name),
    field("When", form.type),
    countField,
    field("Window (minutes)", form.window),
    field("Window", form.windowType),
    field("Tell", form.service),
    urlField,
    field("Message", form.message),
    problem,
    h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary", testid: "node-alert-save" }, "Add alert")),
  );
  onSubmit(element, problem, async () => {
    await post(base, alertBody(node, form));
    form.name.value = "";
    form.message.value = "";
    await load();
  });
  return element;
}
