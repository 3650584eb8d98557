// A live tap on one node (POST /v3/pipeline/{id}/tap/{node}/stream): the events passing
// it in the published revision, newest first, as they run. One stream, open until
// stopped, the panel closed or the page left: nothing passes unseen between rounds. The
// server sends at most RATE events a second and counts those it did not send (over the
// rate, or while this page was behind); the status shows that count.
import { ApiError, stream } from "./api.js";
import { clear, formatClock, formatCount, h } from "./dom.js";

const RATE = 50;
const KEPT = 100;

export function tapPanel({ pipelineId, node, published }) {
  const events = h("div", { class: "tap-events", testid: "tap-events" });
  const status = h("span", { class: "muted", testid: "tap-status" }, "stopped");
  const filter = h("input", { type: "text", testid: "tap-filter", placeholder: "only events containing… (optional)" });
  // A node with named outputs (a route's arms, a throttle's `dropped`): one of them may
  // be tapped alone, wired to another node or not.
  const names = (node.outputs || []).map((output) => output.id.slice(node.id.length + 1));
  const output = names.length
    ? h(
        "select",
        { testid: "tap-output", title: "Which output to tap", "aria-label": "Output" },
        h("option", { value: "" }, "all it sends on"),
        h("option", { value: "main" }, "main output"),
        ...names.map((name) => h("option", { value: name }, `output ${name}`)),
      )
    : null;
  const start = h("button", { type: "button", testid: "tap-start" }, "Start tap");
  const stop = h("button", { type: "button", testid: "tap-stop", hidden: true }, "Stop");
  let controller = null;
  let count = 0;
  let skipped = 0;

  function counted() {
    const shown = `${formatCount(count)} event${count === 1 ? "" : "s"} since ${formatClock(started)}`;
    return skipped ? `${shown} · ${formatCount(skipped)} more not shown (over ${RATE}/s)` : shown;
  }

  function show(caught) {
    for (const event of caught) {
      count += 1;
      events.prepend(h("pre", { class: "tap-event", testid: "tap-event" }, JSON.stringify(event, null, 2)));
    }
    while (events.childElementCount > KEPT) events.lastElementChild.remove();
  }

  function arrive(batch) {
    const caught = [];
    let ended = null;
    for (const { event, data } of batch) {
      if (event === "message") caught.push(data);
      else if (event === "skipped") skipped += data.skipped || 0;
      else if (event === "ready") status.classList.add("live");
      else if (event === "error") ended = data.error || "the server ended the tap";
    }
    show(caught);
    if (ended) finish(`stopped: ${ended}`);
    else if (controller) status.textContent = `listening… ${counted()}`;
  }

  async function run(signal) {
    const path = `/v3/pipeline/${encodeURIComponent(pipelineId)}/tap/${encodeURIComponent(node.id)}/stream`;
    const body = { rate: RATE };
    if (filter.value.trim()) body.filter = filter.value.trim();
    if (output && output.value) body.output = output.value;
    status.classList.remove("live");
    status.textContent = "opening…";
    try {
      await stream("POST", path, { body, signal, onEvent: arrive });
    } catch (error) {
      if (signal.aborted) return;
      finish(`stopped: ${error instanceof ApiError ? error.message : String(error)}`);
      return;
    }
    if (!signal.aborted) finish(`stopped: the server ended the tap (${counted()})`);
  }

  let started = 0;
  start.addEventListener("click", () => {
    if (controller) return;
    controller = new AbortController();
    started = Date.now();
    count = 0;
    skipped = 0;
    clear(events);
    start.hidden = true;
    stop.hidden = false;
    filter.disabled = true;
    if (output) output.disabled = true;
    run(controller.signal);
  });
  function finish(text) {
    if (controller) controller.abort();
    controller = null;
    start.hidden = false;
    stop.hidden = true;
    filter.disabled = false;
    if (output) output.disabled = false;
    status.classList.remove("live");
    if (text) status.textContent = text;
  }
  stop.addEventListener("click", () => finish(`stopped (${counted()})`));
  const element = h(
    "section",
    { class: "tap", testid: "tap-panel" },
    h("p", { class: "muted" }, node.kind === "destination" ? "What this destination receives" : names.length ? "What this node sends on (its main output and the outputs other nodes read, or the one chosen)" : "What passes this node (its main output)", " in the published revision", published ? "" : " (not published yet: nothing runs)", "."),
    h("div", { class: "tap-controls" }, output, filter, start, stop, status),
    events,
  );
  return {
    element,
    // The panel closed or the page left: the stream is closed.
    stop() {
      finish();
      clear(events);
    },
  };
}
