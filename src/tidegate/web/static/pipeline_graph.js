// A pipeline's graph of nodes as SVG: a column per depth (sources first, each node one
// column right of its deepest input), an edge from each input (dashed from a named
// output, `<id>.dropped`). Each node shows its title, kind and type, its event counts
// (usage metrics) and, after a refused publish, what is wrong with it; a click (or
// Enter) on a node selects it. With `onConnect`, a source's or processor's port (the
// dot on its right edge) is dragged onto another node to make it that node's input; a
// node with named outputs has a port for each below its main one, and an edge from a
// named output leaves from that output's port.
import { h } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 200;
const H = 82;
const GAP_X = 60;
const GAP_Y = 22;
const PAD = 16;

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    el.setAttribute(key, String(value));
  }
  for (const child of children) if (child) el.append(child);
  return el;
}

function text(attrs, content) {
  const el = svg("text", attrs);
  el.textContent = content;
  return el;
}

// `<node id>.<output>` names a node's other output: the node is the part before the dot.
export function inputNode(input) {
  const dot = input.indexOf(".");
  return dot < 0 ? input : input.slice(0, dot);
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
        const from = inputNode(input);
        if (!byId.has(from)) continue;
        const wanted = Math.min(nodes.length, depth.get(from) + 1);
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

const short = (value, length) => (value.length > length ? `${value.slice(0, length - 1)}…` : value);

// The node's event counts over the usage window: `{in, out}` or undefined (not loaded).
function rateLine(x, y, counts, window) {
  if (!counts) return text({ x, y, class: "node-rate", "data-testid": "node-rate" }, "");
  const line = counts.in || counts.out ? `${counts.in} in · ${counts.out} out / ${window}` : `no events / ${window}`;
  return text({ x, y, class: "node-rate", "data-testid": "node-rate", "data-in": counts.in, "data-out": counts.out }, line);
}

// New counts written into a drawn graph's nodes, in place: the nodes stay the elements
// they were, so a click landing while the counts arrive (its press on one element, its
// release on another) is not lost, nor the keyboard's focus.
export function showRates(root, counts, window) {
  for (const rate of root.querySelectorAll("[data-testid=pipeline-node] [data-testid=node-rate]")) {
    const id = rate.closest("[data-testid=pipeline-node]").dataset.nodeId;
    rate.replaceWith(rateLine(rate.getAttribute("x"), rate.getAttribute("y"), counts.get(id) || { in: 0, out: 0 }, window));
  }
}

// Where a node's outputs leave it, on its right edge: its main output (`node.id`) in
// the middle when it has no other, else first, the named ones (`<id>.<name>`) spread
// below it in their order.
function outputPorts(node, x, y) {
  const ids = [node.id, ...(node.outputs || []).map((output) => output.id)];
  const step = H / (ids.length + 1);
  return new Map(ids.map((id, at) => [id, { x: x + W, y: ids.length === 1 ? y + H / 2 : y + step * (at + 1) }]));
}

// A drag from a port of `from` (`input`: the output's name as an input, `<id>` or
// `<id>.<name>`): a line follows the pointer; released over another node,
// `onConnect(input, node id)`. Pointer events on the window, so the drag survives
// leaving the graph.
function dragEdge(root, from, input, start, onConnect) {
  const toSvg = (event) => new DOMPoint(event.clientX, event.clientY).matrixTransform(root.getScreenCTM().inverse());
  const line = svg("line", { x1: start.x, y1: start.y, x2: start.x, y2: start.y, class: "edge dragging", "data-testid": "edge-dragging" });
  root.append(line);
  const move = (event) => {
    const at = toSvg(event);
    line.setAttribute("x2", at.x);
    line.setAttribute("y2", at.y);
  };
  const end = (event) => {
    window.removeEventListener("pointermove", move);
    window.removeEventListener("pointerup", end);
    line.remove();
    const target = document.elementFromPoint(event.clientX, event.clientY)?.closest("[data-testid=pipeline-node]");
    if (target && target.dataset.nodeId !== from.id) onConnect(input, target.dataset.nodeId);
  };
  window.addEventListener("pointermove", move);
  window.addEventListener("pointerup", end);
}

// `options`: `selected` (a node id), `counts` (Map id -> {in, out}, or null before the
// first answer), `window` ("5 min"), `problems` (Map id -> [{short, message}]),
// `onSelect(node)`, `onConnect(input, to node id)` (a port dragged onto a node: the
// output as the other node's input names it),
// `onDisconnect(input, to node)` (an edge clicked).
export function drawGraph(nodes, { selected = null, counts = null, window = "", problems = new Map(), onSelect = null, onConnect = null, onDisconnect = null } = {}) {
  if (!nodes.length) return h("p", { class: "muted", testid: "pipeline-empty" }, "This pipeline has no nodes yet.");
  const depth = depths(nodes);
  const columns = [];
  for (const node of nodes) (columns[depth.get(node.id)] ||= []).push(node);
  const place = new Map();
  // Wider between columns where named outputs' names are written beside their ports
  // (and room on the right for a last column's).
  const anyNamed = nodes.some((node) => node.outputs?.length);
  const gapX = anyNamed ? GAP_X + 30 : GAP_X;
  columns.forEach((column, x) => (column || []).forEach((node, y) => place.set(node.id, { x: PAD + x * (W + gapX), y: PAD + y * (H + GAP_Y) })));
  const width = PAD * 2 + columns.length * (W + gapX) - (anyNamed ? 0 : gapX);
  const height = PAD * 2 + Math.max(1, ...columns.map((c) => (c || []).length)) * (H + GAP_Y) - GAP_Y;
  const ports = new Map();
  for (const node of nodes) for (const [id, at] of outputPorts(node, place.get(node.id).x, place.get(node.id).y)) ports.set(id, at);
  const root = svg("svg", { class: "pipeline-graph", width, height, viewBox: `0 0 ${width} ${height}`, role: "group", "aria-label": "Pipeline graph", "data-testid": "pipeline-graph" });
  for (const node of nodes) {
    const to = place.get(node.id);
    for (const input of node.inputs || []) {
      const from = place.get(inputNode(input));
      if (!from) continue;
      // From the output's port (an output the node no longer declares: its main one's).
      const { x: x1, y: y1 } = ports.get(input) || ports.get(inputNode(input));
      const x2 = to.x;
      const y2 = to.y + H / 2;
      const bend = Math.max(30, (x2 - x1) / 2);
      const named = input.includes(".");
      const d = `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
      root.append(
        svg("path", { class: named ? "edge named" : "edge", "data-from": input, "data-to": node.id, d }, named ? Object.assign(svg("title", {}), { textContent: `output ${input.slice(input.indexOf(".") + 1)}` }) : null),
      );
      if (onDisconnect) {
        // A wide, invisible copy of the edge takes the click (the edge itself is a hairline).
        const hit = svg("path", { class: "edge-hit", "data-testid": "pipeline-edge", "data-from": input, "data-to": node.id, d, tabindex: 0, role: "button", "aria-label": "Disconnect" }, Object.assign(svg("title", {}), { textContent: "Click to disconnect" }));
        const disconnect = () => onDisconnect(input, node);
        hit.addEventListener("click", disconnect);
        hit.addEventListener("keydown", (event) => {
          if (event.key === "Enter" || event.key === "Delete") {
            event.preventDefault();
            disconnect();
          }
        });
        root.append(hit);
      }
    }
  }
  for (const node of nodes) {
    const { x, y } = place.get(node.id);
    const wrong = problems.get(node.id) || [];
    const title = svg("title", {});
    // The hover text: what is wrong with the node, else its description and configuration.
    title.textContent = wrong.length ? wrong.map((problem) => problem.message).join("\n") : [node.description, JSON.stringify(node.user_config || {}, null, 2)].filter(Boolean).join("\n\n");
    const group = svg(
      "g",
      {
        class: `node node-${node.kind}${node.id === selected ? " selected" : ""}${wrong.length ? " invalid" : ""}`,
        "data-testid": "pipeline-node",
        "data-node-id": node.id,
        tabindex: onSelect ? 0 : null,
        role: onSelect ? "button" : null,
        "aria-pressed": onSelect ? String(node.id === selected) : null,
        "aria-label": `${node.title || node.type} (${node.kind} ${node.type})`,
      },
      title,
      svg("rect", { x, y, width: W, height: H, rx: 6 }),
      text({ x: x + 10, y: y + 20, class: "node-title" }, short(node.title || node.type, 26)),
      text({ x: x + 10, y: y + 37, class: "node-kind" }, short(`${node.kind} · ${node.type}`, 32)),
      rateLine(x + 10, y + 55, counts ? counts.get(node.id) || { in: 0, out: 0 } : undefined, window),
      wrong.length ? text({ x: x + 10, y: y + 72, class: "node-error", "data-testid": "node-error" }, short(`⚠ ${wrong.map((problem) => problem.short).join("; ")}`, 34)) : null,
    );
    if (onConnect && node.kind !== "destination") {
      for (const output of [{ id: node.id }, ...(node.outputs || [])]) {
        const start = ports.get(output.id);
        const named = output.id !== node.id;
        const name = named ? output.id.slice(node.id.length + 1) : "";
        const port = svg(
          "circle",
          { cx: start.x, cy: start.y, r: named ? 6 : 7, class: named ? "port named" : "port", "data-testid": named ? "node-output-port" : "node-port", "data-node-id": node.id, "data-output": named ? name : null },
          Object.assign(svg("title", {}), { textContent: named ? `Output ${output.label || name}: drag onto a node to make it its input` : "Drag onto a node to make this its input" }),
        );
        port.addEventListener("pointerdown", (event) => {
          event.preventDefault();
          event.stopPropagation();
          dragEdge(root, node, output.id, start, onConnect);
        });
        // Not the node's click (which selects it).
        port.addEventListener("click", (event) => event.stopPropagation());
        group.append(port);
        if (named) group.append(text({ x: start.x + 9, y: start.y - 4, class: "port-label", "data-testid": "node-output-name" }, short(name, 14)));
      }
    }
    if (onSelect) {
      group.addEventListener("click", () => onSelect(node));
      group.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          onSelect(node);
        }
      });
    }
    root.append(group);
  }
  return root;
}
