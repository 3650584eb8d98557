// A pipeline's simulation panel: sample events (JSON) run through the draft by
// `POST /v3/pipeline/{id}/simulate`; each node, in run order, with what it received and
// emitted (a throttle's or route's other outputs too). And a processor's trial: the
// configuration in its form, saved or not, run on sample events by
// `POST /v3/pipeline/simulate-processor`. Nothing is stored or sent.
import { ApiError, api } from "./api.js";
import { clear, errorBox, h } from "./dom.js";

export const SAMPLE_EVENTS = JSON.stringify(
  [
    { message: "GET /health 200", level: "info", app: "web" },
    { message: "payment failed: card declined", level: "error", app: "billing" },
  ],
  null,
  2,
);

const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;

// The textarea's events: one JSON object or an array of them; an Error saying what is
// wrong otherwise.
export function readEvents(text) {
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`The sample events are not valid JSON: ${error.message}`);
  }
  const events = Array.isArray(parsed) ? parsed : [parsed];
  if (!events.length || events.some((event) => event === null || typeof event !== "object" || Array.isArray(event))) {
    throw new Error("The sample events must be a JSON object or an array of objects.");
  }
  return events;
}

function eventsBlock(label, events, testid) {
  return h(
    "details",
    { class: "simulate-events", testid },
    h("summary", {}, `${label} (${events.length})`),
    h("pre", { class: "config-json" }, JSON.stringify(events, null, 2)),
  );
}

function nodeResult(node) {
  const emitted = node.kind === "destination" ? "would store or send" : "emitted";
  const others = Object.entries(node.outputs || {}).filter(([name]) => !(name === "dropped" && node.dropped));
  return h(
    "li",
    { class: "simulate-node", testid: "simulate-node", "data-node-id": node.id },
    h("strong", {}, node.title || node.type),
    h("span", { class: "muted" }, ` ${node.kind} · ${node.type}`),
    h(
      "p",
      { testid: "simulate-node-counts" },
      node.kind === "source" ? `${plural(node.output.length, "event")} in` : `received ${node.received}, ${emitted} ${node.output.length}`,
      node.dropped ? `, dropped ${node.dropped.length}` : "",
      others.map(([name, events]) => `, ${name} ${events.length}`).join(""),
    ),
    node.output.length ? eventsBlock(node.kind === "destination" ? "What it would store or send" : "Output", node.output, "simulate-output") : null,
    node.dropped && node.dropped.length ? eventsBlock("Dropped", node.dropped, "simulate-dropped") : null,
    others.filter(([, events]) => events.length).map(([name, events]) => eventsBlock(`Output ${name}`, events, "simulate-named-output")),
  );
}

// `events`: the text the panel starts with (the last one run on this page).
export function simulatePanel({ pipelineId, events = SAMPLE_EVENTS, onClose, onRun = () => {} }) {
  const area = h("textarea", { class: "json", rows: 10, spellcheck: "false", testid: "simulate-events" });
  area.value = events;
  const run = h("button", { type: "submit", class: "primary", testid: "simulate-run" }, "Run");
  const problem = h("div", {});
  const results = h("div", {});
  const form = h("form", { class: "node-form" }, h("label", { class: "field" }, h("span", { class: "label-row" }, "Sample events"), area), h("div", { class: "buttons" }, run), problem);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(problem);
    let sample;
    try {
      sample = readEvents(area.value);
    } catch (error) {
      clear(results);
      problem.append(h("div", { class: "error", role: "alert", testid: "simulate-error" }, error.message));
      return;
    }
    onRun(area.value);
    run.disabled = true;
    try {
      const data = (await api("POST", `/v3/pipeline/${encodeURIComponent(pipelineId)}/simulate`, { body: { events: sample } })).data;
      clear(results).append(
        h(
          "div",
          { testid: "simulate-results" },
          h("p", { class: "muted" }, `Draft revision ${data.revision}, ${plural(sample.length, "sample event")}.`, data.throttle_enabled || !data.nodes.some((node) => node.type === "throttle") ? "" : " Throttles pass every event: the account has no throttle-processor feature."),
          h("ol", { class: "simulate-nodes" }, data.nodes.map(nodeResult)),
        ),
      );
    } catch (error) {
      clear(results);
      problem.append(h("div", { testid: "simulate-error" }, errorBox(error)));
    } finally {
      run.disabled = false;
    }
  });
  return h(
    "div",
    { class: "card node-panel", testid: "simulate-panel" },
    h("div", { class: "panel-head" }, h("h2", {}, "Simulate the draft"), h("button", { type: "button", class: "link", title: "Close", testid: "simulate-close", onclick: onClose }, "×")),
    h("p", { class: "muted" }, "Runs sample events through the draft's nodes and shows what each would emit. Nothing is stored or sent; throttles start from empty windows."),
    form,
    results,
  );
}

// A processor's "Try" tab: `read()` is its form's configuration as it stands
// ({value, problems}, as configSection reads it).
export function processorTrial({ type, read }) {
  const area = h("textarea", { class: "json", rows: 8, spellcheck: "false", testid: "node-try-events" });
  area.value = SAMPLE_EVENTS;
  const run = h("button", { type: "button", class: "primary", testid: "node-try-run" }, "Try this configuration");
  const result = h("div", {});
  const said = (message, items = []) =>
    clear(result).append(h("div", { class: "error", role: "alert", testid: "node-try-error" }, message, items.length ? h("ul", {}, items.map((item) => h("li", {}, `${item.instance_path || ""}${item.instance_path ? ": " : ""}${item.message}`))) : null));
  run.addEventListener("click", async () => {
    let events;
    try {
      events = readEvents(area.value);
    } catch (error) {
      said(error.message);
      return;
    }
    const { value, problems } = read();
    if (problems.length) {
      said("Some fields of the configuration cannot be read", problems.map((problem) => ({ instance_path: problem.pointer, message: problem.message })));
      return;
    }
    run.disabled = true;
    try {
      const data = (await api("POST", "/v3/pipeline/simulate-processor", { body: { processor: { type, user_config: value }, events } })).data;
      const named = Object.entries(data.outputs || {});
      clear(result).append(
        h(
          "div",
          { testid: "node-try-result" },
          h("p", { testid: "node-try-counts" }, `received ${data.received}, emitted ${data.output.length}, dropped ${data.dropped.length}`, named.map(([name, out]) => `, ${name} ${out.length}`).join("")),
          data.output.length ? eventsBlock("Output", data.output, "node-try-output") : null,
          data.dropped.length ? eventsBlock("Dropped", data.dropped, "node-try-dropped") : null,
          named.filter(([, out]) => out.length).map(([name, out]) => eventsBlock(`Output ${name}`, out, "node-try-named-output")),
        ),
      );
    } catch (error) {
      said(error.message, error instanceof ApiError && error.body && Array.isArray(error.body.errors) ? error.body.errors : []);
    } finally {
      run.disabled = false;
    }
  });
  return h(
    "section",
    { class: "node-try", testid: "node-try" },
    h("p", { class: "muted" }, "Runs sample events through this processor with the configuration in its form, saved or not. Nothing is stored or sent; a throttle starts from empty windows."),
    h("label", { class: "field" }, h("span", { class: "label-row" }, "Sample events"), area),
    h("div", { class: "buttons" }, run),
    result,
  );
}
