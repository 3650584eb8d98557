// A live tap on one node (POST /v3/pipeline/{id}/tap/{node}): the events passing it in
// the published revision, newest first, as they run. The API answers one round (up to
// ROUND_LIMIT events, or what came within ROUND_S seconds); the tap asks round after
// round until stopped, the panel closed or the page left.
import { ApiError, api } from "./api.js";
import { clear, formatClock, h } from "./dom.js";

const ROUND_LIMIT = 50;
const ROUND_S = 3;
const KEPT = 100;

export function tapPanel({ pipelineId, node, published }) {
  const events = h("div", { class: "tap-events", testid: "tap-events" });
  const status = h("span", { class: "muted", testid: "tap-status" }, "stopped");
  const filter = h("input", { type: "text", testid: "tap-filter", placeholder: "only events containing… (optional)" });
  const start = h("button", { type: "button", testid: "tap-start" }, "Start tap");
  const stop = h("button", { type: "button", testid: "tap-stop", hidden: true }, "Stop");
  let controller = null;
  let count = 0;

  function show(caught) {
    for (const event of caught) {
      count += 1;
      events.prepend(h("pre", { class: "tap-event", testid: "tap-event" }, JSON.stringify(event, null, 2)));
    }
    while (events.childElementCount > KEPT) events.lastElementChild.remove();
  }

  async function run(signal) {
    const path = `/v3/pipeline/${encodeURIComponent(pipelineId)}/tap/${encodeURIComponent(node.id)}`;
    const body = { limit: ROUND_LIMIT, timeout: ROUND_S };
    if (filter.value.trim()) body.filter = filter.value.trim();
    while (!signal.aborted) {
      status.textContent = `listening… ${count} event${count === 1 ? "" : "s"} since ${formatClock(started)}`;
      status.classList.add("live");
      try {
        const answer = await api("POST", path, { body, signal });
        show(answer.data.events || []);
      } catch (error) {
        if (signal.aborted) return;
        status.classList.remove("live");
        status.textContent = `stopped: ${error instanceof ApiError ? error.message : String(error)}`;
        finish();
        return;
      }
    }
  }

  let started = 0;
  start.addEventListener("click", () => {
    if (controller) return;
    controller = new AbortController();
    started = Date.now();
    start.hidden = true;
    stop.hidden = false;
    filter.disabled = true;
    run(controller.signal);
  });
  function finish() {
    if (controller) controller.abort();
    controller = null;
    start.hidden = false;
    stop.hidden = true;
    filter.disabled = false;
  }
  stop.addEventListener("click", () => {
    finish();
    status.classList.remove("live");
    status.textContent = `stopped (${count} event${count === 1 ? "" : "s"})`;
  });
  const element = h(
    "section",
    { class: "tap", testid: "tap-panel" },
    h("p", { class: "muted" }, node.kind === "destination" ? "What this destination receives" : "What passes this node (its main output)", " in the published revision", published ? "" : " (not published yet: nothing runs)", "."),
    h("div", { class: "tap-controls" }, filter, start, stop, status),
    events,
  );
  return {
    element,
    // The panel closed or the page left: the round in flight is abandoned.
    stop() {
      finish();
      clear(events);
    },
  };
}
