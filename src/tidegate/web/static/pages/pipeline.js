// One pipeline: its graph of nodes and, for a role that manages pipelines, the editor.
// Add a node (its configuration in a form generated from its type's schema), connect
// it (its inputs), change or remove it, publish the draft (what the server refuses is
// shown on the nodes it names), simulate the draft on sample events, tap any node
// live; every node shows its event counts over the last 5 minutes, hour or day (the
// page's choice) from the usage metrics.
// Everything through the public API.
import { ApiError, api, del, get } from "../api.js";
import { append, clear, errorBox, formatTime, h } from "../dom.js";
import { drawGraph, inputNode, showRates } from "../pipeline_graph.js";
import { SEGMENT, newNodePanel, nodePanel } from "../pipeline_node.js";
import { alertsPanel } from "../pipeline_alerts.js";
import { tapPanel } from "../pipeline_tap.js";
import { eventsPanel } from "../pipeline_events.js";
import { SAMPLE_EVENTS, simulatePanel } from "../pipeline_simulate.js";
import { session } from "../session.js";

// The windows a node's counts are summed over (minute buckets: exact to the minute,
// 1,440 at most, within the usage API's 10,000), the first one shown at first.
const RATE_WINDOWS = [
  { value: "5m", ms: 5 * 60_000, label: "5 min" },
  { value: "1h", ms: 60 * 60_000, label: "1 hour" },
  { value: "24h", ms: 24 * 60 * 60_000, label: "24 hours" },
];
const RATE_REFRESH_MS = 10_000;

// Which nodes a refused publish names, and what it says of each: `params.node_id` (a
// configuration), `params.nodes` (loose ends), `params.cycle`, `params.dependents`.
export function publishProblems(error, nodes) {
  const found = new Map();
  const add = (id, problem) => {
    if (!nodes.some((node) => node.id === id)) return;
    (found.get(id) || found.set(id, []).get(id)).push(problem);
  };
  const items = (error.body && Array.isArray(error.body.errors) && error.body.errors) || [];
  for (const item of items) {
    const params = item.params || {};
    if (params.node_id) {
      const where = (item.instance_path || "").replace(/^\/user_config/, "");
      const text = `${where ? `${where.slice(1)} ` : ""}${item.message}`;
      add(params.node_id, { short: text, message: text });
    }
    for (const id of params.nodes || []) {
      const node = nodes.find((each) => each.id === id);
      const none = node && node.kind !== "source" && !(node.inputs || []).length;
      add(id, {
        short: `unconnected: ${none ? "no inputs" : "output unused"}`,
        message: `Not connected: ${none ? "it has no inputs" : "no node takes its output"} (connect it, or publish with loose ends allowed)`,
      });
    }
    for (const id of new Set([...(params.cycle || []), ...(params.dependents || [])])) add(id, { short: item.keyword, message: item.message });
  }
  return found;
}

// What the page says of a refused publish: the nodes to fix (each says why on the
// graph and in its panel), or the server's message when it names none.
function publishSummary(error, problems, nodes) {
  if (!problems.size) return `Not published: ${error.message}`;
  const names = [...problems.keys()].map((id) => {
    const node = nodes.find((each) => each.id === id);
    return `“${node.title || node.type}”`;
  });
  return `Not published: ${names.join(", ")} ${names.length === 1 ? "needs" : "need"} fixing (marked on the graph).`;
}

// Events in and out of each node over the window: Map id -> {in, out}.
export function countsOf(points) {
  const counts = new Map();
  for (const point of points) {
    const count = counts.get(point.component_id) || { in: 0, out: 0 };
    count.in += point.ingress_events || 0;
    count.out += point.egress_events || 0;
    counts.set(point.component_id, count);
  }
  return counts;
}

function statusText(pipeline) {
  if (pipeline.published_revision === null || pipeline.published_revision === undefined) return `Draft revision ${pipeline.revision}, never published: nothing runs yet.`;
  const when = pipeline.published_at ? ` at ${formatTime(Date.parse(pipeline.published_at))}` : "";
  return pipeline.has_unpublished_changes
    ? `Draft revision ${pipeline.revision} has unpublished changes; revision ${pipeline.published_revision} runs (published${when}).`
    : `Revision ${pipeline.published_revision} runs (published${when}); the draft is the same.`;
}

export async function render(main, { params, navigate }) {
  const pipelineId = params.pipeline_id;
  const base = `/v3/pipeline/${encodeURIComponent(pipelineId)}`;
  const canEdit = session.can("manage");
  const state = { pipeline: null, types: [], routes: [], selected: null, adding: false, counts: null, usage: null, problems: new Map() };
  const graphBox = h("div", { class: "card scroll-x graph-card" });
  const panelBox = h("div", { class: "panel-box" });
  const status = h("p", { class: "muted", testid: "pipeline-status" });
  const result = h("div", { testid: "publish-result" });
  const connectProblem = h("div", { testid: "connect-problem" }); // a refused drag
  const allowLoose = h("input", { type: "checkbox", testid: "publish-allow-unconnected" });
  let tap = null;
  let events = null; // the open node panel's chart of its events
  let timer = null;
  let left = false;

  let pipeline;
  try {
    [pipeline, state.types, state.routes] = await Promise.all([
      get(base).then((answer) => answer.data),
      // The forms' schemas; routes for a new source's binding (editors only).
      canEdit ? get("/v3/pipeline/component-type").then((answer) => answer.data) : [],
      canEdit ? get("/v3/pipeline/gateway-route").then((answer) => answer.data) : [],
    ]);
  } catch (error) {
    main.append(errorBox(error));
    return null;
  }
  state.pipeline = pipeline;

  let rateWindow = RATE_WINDOWS[0];
  const windowSelect = h(
    "select",
    { testid: "pipeline-rate-window", "aria-label": "The window of the nodes' event counts" },
    RATE_WINDOWS.map((item) => h("option", { value: item.value }, item.label)),
  );
  windowSelect.addEventListener("change", () => {
    rateWindow = RATE_WINDOWS.find((item) => item.value === windowSelect.value) || RATE_WINDOWS[0];
    // The counts of the window before are not this one's: none until its answer.
    state.counts = null;
    drawGraphBox();
    refreshRates();
  });
  const publish = h("button", { type: "button", class: "primary", testid: "pipeline-publish" }, "Publish");
  const add = h("button", { type: "button", testid: "node-add" }, "Add node");
  const simulate = h("button", { type: "button", testid: "pipeline-simulate" }, "Simulate");
  const remove = h("button", { type: "button", class: "danger", testid: "pipeline-delete" }, "Delete pipeline");
  append(main, [
    h("p", {}, h("a", { href: "/pipelines" }, "← Pipelines")),
    h("div", { class: "page-head" }, h("h1", {}, pipeline.title), canEdit ? remove : null),
    pipeline.description ? h("p", {}, pipeline.description) : null,
    status,
    canEdit ? h("div", { class: "toolbar" }, add, simulate, publish, h("label", { class: "check" }, allowLoose, " allow loose ends (nodes not connected)")) : null,
    result,
    h("p", { class: "muted small" }, "Each node: the events into and out of it over the last ", h("label", {}, windowSelect), " (usage metrics, saved every few seconds).", canEdit ? " Drag a node's dot onto another node to connect them." : ""),
    connectProblem,
    h("div", { class: "editor" }, graphBox, panelBox),
  ]);

  function drawStatus() {
    status.textContent = statusText(state.pipeline);
  }

  function drawGraphBox() {
    clear(graphBox).append(
      drawGraph(state.pipeline.nodes, {
        selected: state.selected,
        counts: state.counts,
        window: rateWindow.label,
        problems: state.problems,
        onSelect: (node) => select(node.id),
        onConnect: canEdit ? connect : null,
        onDisconnect: canEdit ? disconnect : null,
      }),
    );
  }

  // A port dragged onto a node: that output (a node's main one or a named one) becomes
  // one of its inputs (saved at once; the API refuses what it would refuse from the
  // panel, a cycle included).
  // An edge clicked: after a confirmation, the input taken out of the node's inputs.
  async function disconnect(input, to) {
    clear(connectProblem);
    const from = state.pipeline.nodes.find((node) => node.id === inputNode(input));
    const output = input.includes(".") ? ` (output ${input.slice(input.indexOf(".") + 1)})` : "";
    if (!confirm(`Disconnect “${from ? from.title || from.type : input}”${output} from “${to.title || to.type}”?`)) return;
    await saveInputs(to, (to.inputs || []).filter((each) => each !== input));
  }

  async function saveInputs(to, inputs) {
    try {
      await api("PATCH", `${base}/${SEGMENT[to.kind]}/${encodeURIComponent(to.id)}`, { body: { inputs, generation_id: to.generation_id } });
    } catch (error) {
      connectProblem.append(errorBox(error));
      return;
    }
    await reload();
    // An open panel of the node shows its new inputs.
    if (state.selected === to.id) select(to.id);
  }

  async function connect(input, toId) {
    clear(connectProblem);
    const to = state.pipeline.nodes.find((node) => node.id === toId);
    if (!to) return;
    if (to.kind === "source") {
      connectProblem.append(h("p", { class: "error", role: "alert" }, `“${to.title || to.type}” is a source: it takes no inputs.`));
      return;
    }
    const inputs = to.inputs || [];
    if (inputs.includes(input)) return;
    await saveInputs(to, [...inputs, input]);
  }

  function closePanel() {
    if (tap) tap.stop();
    tap = null;
    if (events) events.stop();
    events = null;
    state.selected = null;
    state.adding = false;
    clear(panelBox);
    panelBox.classList.remove("open");
    drawGraphBox();
  }

  function openPanel(element) {
    if (tap) tap.stop();
    tap = null;
    clear(panelBox).append(element);
    panelBox.classList.add("open");
  }

  async function reload() {
    state.pipeline = (await get(base)).data;
    drawStatus();
    drawGraphBox();
  }

  function select(nodeId) {
    const node = state.pipeline.nodes.find((each) => each.id === nodeId);
    if (!node) return closePanel();
    state.selected = node.id;
    state.adding = false;
    const nextTap = canEdit ? tapPanel({ pipelineId, node, published: state.pipeline.published_revision !== null }) : null;
    const nextEvents = eventsPanel({ node });
    openPanel(
      nodePanel({
        pipelineId,
        node,
        nodes: state.pipeline.nodes,
        types: state.types,
        routes: state.routes,
        canEdit,
        problems: state.problems.get(node.id) || [],
        extra: nextTap ? nextTap.element : null,
        events: nextEvents.element,
        alerts: alertsPanel({ pipelineId, node, canEdit }),
        onClose: closePanel,
        onSaved: async (saved) => {
          state.problems.delete(saved.id);
          await reload();
          select(saved.id);
        },
        onRemoved: async (removed) => {
          state.problems.delete(removed.id);
          closePanel();
          await reload();
        },
      }),
    );
    tap = nextTap;
    if (events) events.stop();
    events = nextEvents;
    if (state.usage) events.update(state.usage.points, state.usage.window);
    drawGraphBox();
  }

  add.addEventListener("click", () => {
    state.selected = null;
    state.adding = true;
    openPanel(
      newNodePanel({
        pipelineId,
        nodes: state.pipeline.nodes,
        types: state.types,
        routes: state.routes,
        onCancel: closePanel,
        onSaved: async (node) => {
          // A source made with a route of its own: the route is new to the list.
          if (node.gateway_route_id && !state.routes.some((route) => route.id === node.gateway_route_id)) {
            state.routes = (await get("/v3/pipeline/gateway-route")).data;
          }
          await reload();
          select(node.id);
        },
      }),
    );
    drawGraphBox();
  });

  // The simulation takes the panel's place; the events last run are kept for the next.
  let simulated = SAMPLE_EVENTS;
  simulate.addEventListener("click", () => {
    state.selected = null;
    state.adding = false;
    openPanel(simulatePanel({ pipelineId, events: simulated, onClose: closePanel, onRun: (text) => (simulated = text) }));
    drawGraphBox();
  });

  publish.addEventListener("click", async () => {
    clear(result);
    publish.disabled = true;
    const before = state.selected && state.problems.has(state.selected);
    try {
      state.pipeline = (await api("POST", `${base}/publish`, { params: { allow_unconnected_edges: allowLoose.checked ? "true" : undefined }, body: {} })).data;
      state.problems = new Map();
      result.append(h("p", { class: "notice card", role: "status", testid: "publish-ok" }, `Published: revision ${state.pipeline.published_revision} runs now.`));
      drawStatus();
      refreshRates();
    } catch (error) {
      state.problems = error instanceof ApiError ? publishProblems(error, state.pipeline.nodes) : new Map();
      result.append(h("div", { class: "error", role: "alert", testid: "publish-error" }, publishSummary(error, state.problems, state.pipeline.nodes)));
    } finally {
      publish.disabled = false;
    }
    drawGraphBox();
    // The open panel lists its node's problems: drawn again only when they changed (a
    // running tap or a form being filled in is not thrown away for nothing).
    if (state.selected && (before || state.problems.has(state.selected))) select(state.selected);
  });

  remove.addEventListener("click", async () => {
    if (!confirm(`Delete the pipeline “${pipeline.title}” and all its nodes? It stops running at once.`)) return;
    try {
      await del(base);
      navigate("/pipelines");
    } catch (error) {
      result.append(errorBox(error));
    }
  });

  // Event counts per node, again every RATE_REFRESH_MS while the page is open.
  async function refreshRates() {
    try {
      const now = Date.now();
      const asked = rateWindow;
      const points = (await get("/v3/pipeline/metric/usage", { pipeline_id: pipelineId, from: now - asked.ms, to: now, bucket: "minute" })).data;
      const counts = countsOf(points);
      // An answer for a window no longer chosen is not shown.
      if (left || asked !== rateWindow) return;
      state.usage = { points, window: asked };
      if (events) events.update(points, asked);
      if (state.counts && JSON.stringify([...counts]) === JSON.stringify([...state.counts])) return;
      state.counts = counts;
      // Written into the graph drawn (not drawn again: a click landing meanwhile would
      // be lost, as would the keyboard's focus).
      const drawn = graphBox.querySelector("[data-testid=pipeline-graph]");
      if (drawn) showRates(drawn, counts, rateWindow.label);
      else drawGraphBox();
    } catch {
      /* the counts are a help: the next round tries again */
    }
  }

  drawStatus();
  drawGraphBox();
  refreshRates();
  timer = setInterval(refreshRates, RATE_REFRESH_MS);
  return () => {
    left = true;
    clearInterval(timer);
    if (tap) tap.stop();
    if (events) events.stop();
  };
}
