// A node's events over the window the page shows counts for (5 min, 1 hour, 24 hours):
// events in and out per minute, drawn with uPlot from the usage points the page already
// asked for (GET /v3/pipeline/metric/usage, minute buckets), and summed in words.
import { timeSeries } from "./chart.js";
import { clear, formatClock, formatCount, h } from "./dom.js";

const MINUTE_MS = 60_000;

// `points` (the usage API's, every node's) as this node's in and out per minute of
// the window ending at `now`: a value for every minute, zero where nothing ran.
export function perMinute(points, nodeId, windowMs, now) {
  const last = Math.floor(now / MINUTE_MS) * MINUTE_MS;
  const first = last - windowMs + MINUTE_MS;
  const times = [];
  for (let t = first; t <= last; t += MINUTE_MS) times.push(t);
  const into = new Array(times.length).fill(0);
  const out = new Array(times.length).fill(0);
  for (const point of points) {
    if (point.component_id !== nodeId) continue;
    const at = Math.round((point.bucket_ms - first) / MINUTE_MS);
    if (at < 0 || at >= times.length) continue;
    into[at] += point.ingress_events || 0;
    out[at] += point.egress_events || 0;
  }
  return { times, into, out };
}

export function eventsPanel({ node }) {
  const summary = h("p", { class: "muted", testid: "node-events-summary" }, "Counting…");
  const chart = h("div", { class: "node-events-chart", testid: "node-events-chart" });
  let destroy = null;
  let drawnKey = null;
  const element = h("section", { class: "node-events", testid: "node-events" }, summary, chart);
  return {
    element,
    // New points (every node's) for `window` ({ms, label}); drawn again only when this
    // node's minutes changed.
    update(points, window, now = Date.now()) {
      const { times, into, out } = perMinute(points, node.id, window.ms, now);
      const key = JSON.stringify([times[0], into, out]);
      if (key === drawnKey) return;
      drawnKey = key;
      const total = (values) => values.reduce((sum, value) => sum + value, 0);
      const busiest = into.reduce((best, value, at) => (value > into[best] ? at : best), 0);
      summary.textContent = total(into) || total(out)
        ? `${formatCount(total(into))} in · ${formatCount(total(out))} out over the last ${window.label}; busiest minute ${formatClock(times[busiest])} (${formatCount(into[busiest])} in)`
        : `No events over the last ${window.label}.`;
      if (destroy) destroy();
      clear(chart);
      destroy = timeSeries(chart, {
        times,
        series: [
          { label: "in / min", values: into },
          { label: "out / min", values: out },
        ],
        height: 160,
        bucketMs: MINUTE_MS,
      });
    },
    stop() {
      if (destroy) destroy();
      destroy = null;
    },
  };
}
