// A board's graphs, drawn from GET /v1/aggregate. A graph is stored in the board's
// `graphs` as {id, kind, title, query, split, field, width, height, range?}:
//   kind "count": lines matching `query` over time, one series, or one per top value
//                 of `split` (host, app or level; the 5 most frequent);
//   kind "top":   a table of the 10 most frequent values of `field` among those lines.
// width is 1-3 columns of the board, height "s", "m" or "l"; range a preset of
// timerange.js, the graph's own (absent: the board's; pages/board.js).
import { get } from "./api.js";
import { timeSeries } from "./chart.js";
import { formatCount, h } from "./dom.js";

export const SPLIT_LIMIT = 5;
export const HEIGHTS = { s: 140, m: 220, l: 340 };
const LIST_PARAM = { host: "hosts", app: "apps", level: "levels" };

function aggregate(bounds, params, signal) {
  return get("/v1/aggregate", { ...bounds, buckets: 60, ...params }, signal);
}

async function drawCount(box, graph, bounds, signal) {
  const base = { query: graph.query };
  const times = [];
  const series = [];
  let bucketMs = 0;
  if (graph.split && LIST_PARAM[graph.split]) {
    const overall = await aggregate(bounds, { ...base, top: SPLIT_LIMIT }, signal);
    const values = (overall.top[graph.split] || []).map((row) => row.value);
    const answers = await Promise.all(
      values.map((value) => aggregate(bounds, { ...base, top: 0, [LIST_PARAM[graph.split]]: value }, signal)),
    );
    times.push(...overall.histogram.map((bucket) => bucket.ts));
    bucketMs = overall.bucket_ms;
    answers.forEach((answer, i) => series.push({ label: values[i], values: answer.histogram.map((bucket) => bucket.count) }));
    if (!series.length) series.push({ label: "lines", values: overall.histogram.map((bucket) => bucket.count) });
  } else {
    const answer = await aggregate(bounds, { ...base, top: 0 }, signal);
    times.push(...answer.histogram.map((bucket) => bucket.ts));
    bucketMs = answer.bucket_ms;
    series.push({ label: "lines", values: answer.histogram.map((bucket) => bucket.count) });
  }
  if (signal.aborted) return () => {};
  return timeSeries(box, { times, series, bucketMs, height: HEIGHTS[graph.height] || HEIGHTS.m });
}

async function drawTop(box, graph, bounds, signal) {
  const answer = await aggregate(bounds, { query: graph.query, top: 10 }, signal);
  const rows = answer.top[graph.field || "host"] || [];
  const most = Math.max(1, ...rows.map((row) => row.count));
  box.append(
    rows.length
      ? h(
          "table",
          { class: "top-values" },
          h("thead", {}, h("tr", {}, h("th", {}, graph.field || "host"), h("th", {}, "lines"))),
          h(
            "tbody",
            {},
            rows.map((row) =>
              h(
                "tr",
                {},
                h("td", {}, row.value),
                h("td", { class: "bar-cell" }, h("span", { class: "bar", style: `width:${(100 * row.count) / most}%` }), formatCount(row.count)),
              ),
            ),
          ),
        )
      : h("p", { class: "muted" }, "No lines in this range."),
  );
  return () => {};
}

// Draws one graph into `box`; resolves to a function that removes it.
export function drawGraph(box, graph, bounds, signal) {
  return graph.kind === "top" ? drawTop(box, graph, bounds, signal) : drawCount(box, graph, bounds, signal);
}

export function newGraphId() {
  return `g${Math.random().toString(36).slice(2, 10)}`;
}
