// Charts drawn with the vendored uPlot (window.uPlot, loaded by the shell).
import { formatCount, formatTime } from "./dom.js";
import { showsUtc } from "./zone.js";

const PALETTE = ["#2f6fde", "#e0663a", "#2a9d6f", "#9b59b6", "#c9a227", "#d6457a", "#4aa3b5", "#7f8c8d"];

export const color = (i) => PALETTE[i % PALETTE.length];

// The time axis in the zone shown (zone.js): uPlot reads it from `tzDate`.
function zoned() {
  return showsUtc() ? { tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1e3), "UTC") } : {};
}

function sizeOf(el, height) {
  return { width: Math.max(200, el.clientWidth || 600), height };
}

// Keeps a chart as wide as its box.
function fit(el, chart, height) {
  const observer = new ResizeObserver(() => chart.setSize(sizeOf(el, height)));
  observer.observe(el);
  return () => {
    observer.disconnect();
    chart.destroy();
  };
}

// Counts per time bucket as bars. `onSelect(fromMs, toMs)`: a range brushed with the
// mouse (uPlot's drag-select on the x axis).
export function histogram(el, { times, counts, bucketMs, height = 150, onSelect }) {
  const bars = window.uPlot.paths.bars({ size: [0.9, 100], align: 1 });
  const options = {
    ...sizeOf(el, height),
    ...zoned(),
    legend: { show: false },
    cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
    select: { show: true },
    scales: {
      x: { time: true, range: (u, min, max) => [min, max + bucketMs / 1000] },
      y: { range: (u, min, max) => [0, Math.max(1, max) * 1.05] },
    },
    axes: [{ stroke: "#667" }, { stroke: "#667", size: 50, space: 20 }],
    series: [{}, { label: "lines", fill: "#2f6fde88", stroke: "#2f6fde", paths: bars, points: { show: false } }],
    hooks: {
      setSelect: [
        (u) => {
          if (u.select.width < 3 || !onSelect) return;
          const from = u.posToVal(u.select.left, "x") * 1000;
          const to = u.posToVal(u.select.left + u.select.width, "x") * 1000;
          u.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
          onSelect(Math.floor(from), Math.ceil(to));
        },
      ],
    },
  };
  const chart = new window.uPlot(options, [times.map((t) => t / 1000), counts], el);
  return fit(el, chart, height);
}

// The legend's value of a series: under the cursor, the hovered bucket's; otherwise
// (uPlot asks with no index) the series' total over the range, so a legend is never a
// row of "--" until hovered. `format`: how a value reads (counts by default).
function legendValue(values, format) {
  const total = values.reduce((sum, value) => sum + (value || 0), 0);
  return (u, value, seriesIndex, index) => {
    if (index === null || index === undefined) return `${format(total)} in all`;
    return value === null || value === undefined ? "--" : format(value);
  };
}

// Lines over time: `series` is [{label, values, format}], `times` in ms.
// `bucketMs`: each value covers [t, t + bucketMs), so the last one is drawn to its end.
export function timeSeries(el, { times, series, height = 200, axes, stepped = true, bucketMs = 0 }) {
  const paths = stepped ? window.uPlot.paths.stepped({ align: 1 }) : undefined;
  const options = {
    ...sizeOf(el, height),
    ...zoned(),
    legend: { show: series.length > 1 },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true, range: (u, min, max) => [min, max + bucketMs / 1000] } },
    axes: axes || [{ stroke: "#667" }, { stroke: "#667", size: 60 }],
    series: [
      { value: (u, value, seriesIndex, index) => (index === null || index === undefined ? "whole range" : formatTime(value * 1000)) },
      ...series.map((item, i) => ({
        label: item.label,
        value: legendValue(item.values, item.format || formatCount),
        stroke: color(i),
        fill: series.length === 1 ? `${color(i)}33` : undefined,
        width: 1.5,
        ...(item.scale ? { scale: item.scale } : {}),
        paths,
        points: { show: false },
      })),
    ],
  };
  const data = [times.map((t) => t / 1000), ...series.map((item) => item.values)];
  const chart = new window.uPlot(options, data, el);
  return fit(el, chart, height);
}
