// Time ranges: a preset relative to now ("1h") or absolute bounds (ms), kept in the URL.
import { showsUtc } from "./zone.js";

export const PRESETS = [
  ["15m", "Last 15 minutes", 15 * 60e3],
  ["1h", "Last hour", 3600e3],
  ["6h", "Last 6 hours", 6 * 3600e3],
  ["24h", "Last 24 hours", 24 * 3600e3],
  ["7d", "Last 7 days", 7 * 86400e3],
  ["30d", "Last 30 days", 30 * 86400e3],
];
export const DEFAULT_PRESET = "24h";

const UNITS = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };
const MAX_SPAN = 400 * 86400e3; // a typed relative range: at most 400 days back
const RELATIVE = /^(\d{1,6})([smhdw])$/;

// The span of a preset, or of any relative range written like one ("2h", "90m").
export function presetSpan(name) {
  const found = PRESETS.find(([key]) => key === name);
  if (found) return found[2];
  const match = RELATIVE.exec(String(name || ""));
  if (!match) return null;
  const span = Number(match[1]) * UNITS[match[2]];
  return span > 0 && span <= MAX_SPAN ? span : null;
}

// "Last 2h" for a relative range that is not one of the presets.
export function presetLabel(name) {
  const found = PRESETS.find(([key]) => key === name);
  return found ? found[1] : `Last ${name}`;
}

// One end of a typed range: `now`, `now-2h` (or `-2h`), or an absolute time
// `2026-11-27 01:00[:00[.000]]` (`T` or a space; local time, or UTC with `utc`; a
// trailing `Z` or `+01:00` says its own zone). Null when it is none of these.
function typedInstant(text, now, utc) {
  const t = text.trim();
  if (/^now$/i.test(t)) return now;
  const rel = /^(?:now)?\s*-\s*(\d{1,6})\s*([smhdw])$/i.exec(t);
  if (rel) {
    const span = Number(rel[1]) * UNITS[rel[2].toLowerCase()];
    return span <= MAX_SPAN ? now - span : null;
  }
  const abs = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i.exec(t);
  if (!abs) return null;
  const [, y, mo, d, hh = "0", mi = "0", ss = "0", ms = "0", zone] = abs;
  const parts = [Number(y), Number(mo) - 1, Number(d), Number(hh), Number(mi), Number(ss), Number(ms.padEnd(3, "0"))];
  let value;
  if (zone) {
    const sign = zone[0] === "-" ? -1 : 1;
    const digits = zone.toUpperCase() === "Z" ? "0000" : zone.slice(1).replace(":", "");
    const offset = zone.toUpperCase() === "Z" ? 0 : sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60e3;
    value = Date.UTC(...parts) - offset;
  } else value = utc ? Date.UTC(...parts) : new Date(...parts).getTime();
  // Reject dates that roll over (2026-02-31).
  const check = new Date(utc || zone ? Date.UTC(...parts) : value);
  const month = utc || zone ? check.getUTCMonth() : check.getMonth();
  return Number.isFinite(value) && month === parts[1] ? value : null;
}

// A typed range, as a person types it into the time box:
// - `-15m`, `15m`, `now-2h`: the last 15 minutes / 2 hours (relative: it moves with
//   "now" each time the search runs, and is kept as `range=2h` in the URL);
// - `A .. B` (or `A to B`), each end `now`, `now-2h` or an absolute time: fixed bounds
//   (relative ends are resolved when typed); an absolute end without seconds covers
//   its whole minute (`.. 02:00` ends at 02:00:59.999), and without a time its whole day;
// - an absolute time alone: from then until now.
// Absolute times are read in the zone shown (zone.js) unless `utc` says otherwise.
// Returns {preset} or {from, to}; throws an Error saying what it expects otherwise.
export function parseTyped(text, { now = Date.now(), utc = showsUtc() } = {}) {
  const t = String(text || "").trim();
  const span = /^(?:now)?\s*-?\s*(\d{1,6})\s*([smhdw])$/i.exec(t);
  if (span) {
    const preset = `${Number(span[1])}${span[2].toLowerCase()}`;
    if (presetSpan(preset)) return { preset };
    throw new Error("time: a relative range is at most 400 days");
  }
  const ends = t.split(/\s*(?:\.\.|\bto\b)\s*/i);
  if (ends.length > 2 || !t) throw new Error("time: type -15m, now-2h, or FROM .. TO (2026-11-27 01:00 .. now)");
  const from = typedInstant(ends[0], now, utc);
  let to = ends.length === 2 ? typedInstant(ends[1], now, utc) : now;
  if (from === null || to === null) throw new Error(`time: cannot read "${from === null ? ends[0] : ends[1]}": type -15m, now-2h, or an absolute time 2026-11-27 01:00[:00]`);
  if (ends.length === 2) {
    const end = ends[1].trim();
    if (/^\d{4}-\d{2}-\d{2}$/.test(end)) to += 86400e3 - 1; // the whole day
    else if (/[T ]\d{2}:\d{2}$/.test(end)) to += 60e3 - 1; // the whole minute
    else if (/[T ]\d{2}:\d{2}:\d{2}$/.test(end)) to += 999; // the whole second
  }
  if (from > to) throw new Error("time: the start is after the end");
  return { from, to };
}

// The zone shown beside the range: the browser's, "Europe/Berlin (UTC+01:00)", or
// "UTC" when the person's UTC switch is on.
export function zoneLabel(at = Date.now()) {
  if (showsUtc()) return "UTC";
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  const minutes = -new Date(at).getTimezoneOffset();
  const sign = minutes < 0 ? "-" : "+";
  const abs = Math.abs(minutes);
  const offset = `UTC${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
  return name === "UTC" || name === "Etc/UTC" ? "UTC" : `${name} (${offset})`;
}

// {preset} or {from, to} from URL parameters.
export function rangeFromParams(params) {
  const from = Number(params.get("from"));
  const to = Number(params.get("to"));
  if (params.get("from") && params.get("to") && Number.isFinite(from) && Number.isFinite(to) && from <= to) {
    return { from, to };
  }
  const preset = params.get("range");
  return { preset: presetSpan(preset) ? preset : DEFAULT_PRESET };
}

export function rangeToParams(range, params) {
  params.delete("range");
  params.delete("from");
  params.delete("to");
  if (range.preset) params.set("range", range.preset);
  else {
    params.set("from", String(range.from));
    params.set("to", String(range.to));
  }
}

// The bounds to ask for now, in ms.
export function resolve(range, now = Date.now()) {
  if (range.preset) return { from: now - presetSpan(range.preset), to: now };
  return { from: range.from, to: range.to };
}
