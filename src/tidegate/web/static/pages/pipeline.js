// One pipeline's graph of nodes, drawn read-only: a column per depth (sources first,
// each node one column right of its deepest input), edges from inputs to nodes.
import { get } from "../api.js";
import { append, errorBox, h } from "../dom.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 190;
const H = 56;
const GAP_X = 90;
const GAP_Y = 22;
const PAD = 16;

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  for (const child of children) el.append(child);
  return el;
}

// Depth of every node: 0 for a node without (known) inputs, else 1 + its deepest
// input's. Bounded by the node count, so a cycle cannot loop forever.
export function depths(nodes) {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const depth = new Map(nodes.map((node) => [node.id, 0]));
  for (let round = 0; round < nodes.length; round += 1) {
    let changed = false;
    for (const node of nodes) {
      for (const input of node.inputs || []) {
        if (!byId.has(input)) continue;
        const wanted = Math.min(nodes.length, depth.get(input) + 1);
        if (wanted > depth.get(node.id)) {
          depth.set(node.id, wanted);
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return depth;
}

function drawGraph(nodes) {
  const depth = depths(nodes);
  const columns = [];
  for (const node of nodes) (columns[depth.get(node.id)] ||= []).push(node);
  const place = new Map();
  columns.forEach((column, x) => (column || []).forEach((node, y) => place.set(node.id, { x: PAD + x * (W + GAP_X), y: PAD + y * (H + GAP_Y) })));
  const width = PAD * 2 + columns.length * (W + GAP_X) - GAP_X;
  const height = PAD * 2 + Math.max(1, ...columns.map((c) => (c || []).length)) * (H + GAP_Y) - GAP_Y;
  const root = svg("svg", { class: "pipeline-graph", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "data-testid": "pipeline-graph" });
  for (const node of nodes) {
    const to = place.get(node.id);
    for (const input of node.inputs || []) {
      const from = place.get(input);
      if (!from) continue;
      const x1 = from.x + W;
      const y1 = from.y + H / 2;
      const x2 = to.x;
      const y2 = to.y + H / 2;
      const bend = Math.max(30, (x2 - x1) / 2);
      root.append(svg("path", { class: "edge", d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}` }));
    }
  }
  for (const node of nodes) {
    const { x, y } = place.get(node.id);
    const title = svg("title", {});
    title.textContent = JSON.stringify(node.user_config || {}, null, 2);
    const name = svg("text", { x: x + 10, y: y + 22, class: "node-title" });
    name.textContent = (node.title || node.type).slice(0, 26);
    const kind = svg("text", { x: x + 10, y: y + 42, class: "node-kind" });
    kind.textContent = `${node.kind} · ${node.type}`.slice(0, 30);
    root.append(svg("g", { class: `node node-${node.kind}`, "data-testid": "pipeline-node" }, title, svg("rect", { x, y, width: W, height: H, rx: 6 }), name, kind));
  }
  return root;
}

export async function render(main, { params }) {
  try {
    const pipeline = (await get(`/v3/pipeline/${encodeURIComponent(params.pipeline_id)}`)).data;
    // dom.append, not Element.append: the DOM's own would print a missing part as "null".
    append(main, [
      h("p", {}, h("a", { href: "/pipelines" }, "← Pipelines")),
      h("h1", {}, pipeline.title),
      pipeline.description ? h("p", {}, pipeline.description) : null,
      pipeline.nodes.length ? h("div", { class: "card scroll-x" }, drawGraph(pipeline.nodes)) : h("p", { class: "muted" }, "This pipeline has no nodes yet."),
    ]);
  } catch (error) {
    main.append(errorBox(error));
  }
}
