// Usage: lines and bytes stored per UTC day (GET /v1/usage), charted and listed.
import { get } from "../api.js";
import { timeSeries } from "../chart.js";
import { errorBox, formatBytes, formatCount, h } from "../dom.js";

const DAYS = [7, 30, 90];

export async function render(main, { query, navigate }) {
  const days = DAYS.includes(Number(query.get("days"))) ? Number(query.get("days")) : 30;
  const today = new Date();
  const first = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - (days - 1)));
  const select = h("select", { "aria-label": "Days", testid: "usage-days" }, DAYS.map((n) => h("option", { value: n, selected: n === days }, `Last ${n} days`)));
  select.addEventListener("change", () => navigate(`/usage?days=${select.value}`, { replace: true }));
  main.append(h("div", { class: "page-head" }, h("h1", {}, "Usage"), select));
  let usage;
  try {
    usage = await get("/v1/usage", { from: first.toISOString().slice(0, 10), to: today.toISOString().slice(0, 10) });
  } catch (error) {
    main.append(errorBox(error));
    return;
  }
  const rows = usage.days || [];
  const chartBox = h("div", { class: "card usage-chart", testid: "usage-chart" });
  const totals = usage.totals || {};
  main.append(
    h("p", {}, `${formatCount(totals.lines_stored || 0)} lines and ${formatBytes(totals.bytes_stored || 0)} stored; ${formatCount(totals.lines_excluded || 0)} lines excluded by rules.`),
    chartBox,
  );
  const drop = timeSeries(chartBox, {
    times: rows.map((row) => Date.parse(`${row.day}T00:00:00Z`)),
    series: [
      { label: "lines stored", values: rows.map((row) => row.lines_stored), scale: "lines" },
      { label: "bytes stored", values: rows.map((row) => row.bytes_stored), scale: "bytes", format: formatBytes },
    ],
    height: 260,
    bucketMs: 86400e3,
    axes: [
      { stroke: "#667" },
      { scale: "lines", stroke: "#2f6fde", size: 70, values: (u, ticks) => ticks.map((t) => formatCount(t)) },
      { scale: "bytes", side: 1, stroke: "#e0663a", size: 70, grid: { show: false }, values: (u, ticks) => ticks.map((t) => formatBytes(t)) },
    ],
  });
  main.append(
    h(
      "table",
      { class: "list" },
      h("thead", {}, h("tr", {}, ["Day (UTC)", "Lines stored", "Bytes stored", "Lines excluded", "Bytes excluded"].map((t) => h("th", {}, t)))),
      h(
        "tbody",
        {},
        [...rows].reverse().map((row) =>
          h("tr", {}, h("td", {}, row.day), h("td", {}, formatCount(row.lines_stored)), h("td", {}, formatBytes(row.bytes_stored)), h("td", {}, formatCount(row.lines_excluded)), h("td", {}, formatBytes(row.bytes_excluded))),
        ),
      ),
    ),
  );
  return drop;
}
