// Building elements without innerHTML: every value from the API lands as text.
import { showsUtc } from "./zone.js";

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "class") {
      el.className = value;
    } else if (key === "testid") {
      el.dataset.testid = value;
    } else if (key === "value" || key === "checked" || key === "disabled") {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

const pad = (n, width = 2) => String(n).padStart(width, "0");

// A time's calendar fields in the zone shown (zone.js): the browser's, or UTC.
function fields(ms) {
  const d = new Date(ms);
  return showsUtc()
    ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()]
    : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds(), d.getMilliseconds()];
}

// In the zone shown, to the millisecond: what a person reading logs compares.
export function formatTime(ms) {
  const [y, mo, d, hh, mi, ss, milli] = fields(ms);
  return `${y}-${pad(mo)}-${pad(d)} ${pad(hh)}:${pad(mi)}:${pad(ss)}.${pad(milli, 3)}`;
}

// The time of day in the zone shown, to the second, the zone said when it is UTC.
export function formatClock(ms) {
  const [, , , hh, mi, ss] = fields(ms);
  return `${pad(hh)}:${pad(mi)}:${pad(ss)}${showsUtc() ? " UTC" : ""}`;
}

// The value of an <input type="datetime-local"> for a time, and back (in the zone shown).
export function toLocalInput(ms) {
  const [y, mo, d, hh, mi, ss] = fields(ms);
  return `${y}-${pad(mo)}-${pad(d)}T${pad(hh)}:${pad(mi)}:${pad(ss)}`;
}

export function fromLocalInput(text) {
  const ms = showsUtc() && text ? Date.parse(`${text}Z`) : new Date(text).getTime();
  return Number.isFinite(ms) ? ms : null;
}

export function formatCount(n) {
  return Number(n).toLocaleString("en");
}

export function formatBytes(n) {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = Number(n);
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}

export function errorBox(error) {
  return h("p", { class: "error", role: "alert" }, error.message || String(error));
}

// A form field with its label.
export function field(label, input, hint) {
  return h("label", { class: "field" }, h("span", {}, label), input, hint && h("small", {}, hint));
}

export function splitList(text) {
  return String(text || "")
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
}

// Fills `box` with `draw(answer)` for the answer of `request()`, or with the error.
export async function fillFrom(box, request, draw) {
  clear(box);
  let answer;
  try {
    answer = await request();
  } catch (error) {
    box.append(errorBox(error));
    return;
  }
  box.append(draw(answer));
}

export function listTable(headings, rows) {
  return h("table", { class: "list" }, h("thead", {}, h("tr", {}, headings.map((text) => h("th", {}, text)))), h("tbody", {}, rows));
}

// Runs `action` when `form` is submitted; an error lands in `problem`.
export function onSubmit(form, problem, action) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(problem);
    try {
      await action();
    } catch (error) {
      problem.append(errorBox(error));
    }
  });
}

// A form's Preview button: a click shows `waiting` in `result`, then what `draw()`
// resolves to (an element or a list of them), or the error.
export function previewButton(testid, result, waiting, draw) {
  const button = h("button", { type: "button", testid }, "Preview");
  button.addEventListener("click", async () => {
    clear(result).append(h("p", { class: "muted" }, waiting));
    try {
      append(clear(result), await draw());
    } catch (error) {
      clear(result).append(errorBox(error));
    }
  });
  return button;
}

// An editing form's buttons: Preview, the primary Save (`saveTestid`), Cancel.
export function formButtons(preview, saveTestid, saveLabel, cancel) {
  return h("div", { class: "buttons" }, preview, h("button", { type: "submit", class: "primary", testid: saveTestid }, saveLabel), h("button", { type: "button", onclick: cancel }, "Cancel"));
}

// A one-field form that makes something (a board, a pipeline): `create(text)` with the
// field's trimmed text; an error lands under it.
export function createForm({ label, input, button, buttonTestid, create }) {
  const problem = h("div", {});
  const form = h("form", { class: "inline-form edit" }, field(label, input), h("button", { type: "submit", class: "primary", testid: buttonTestid }, button), problem);
  onSubmit(form, problem, () => create(input.value.trim()));
  return form;
}
