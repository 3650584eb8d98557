// Time ranges: a preset relative to now ("1h") or absolute bounds (ms), kept in the URL.

export const PRESETS = [
  ["15m", "Last 15 minutes", 15 * 60e3],
  ["1h", "Last hour", 3600e3],
  ["6h", "Last 6 hours", 6 * 3600e3],
  ["24h", "Last 24 hours", 24 * 3600e3],
  ["7d", "Last 7 days", 7 * 86400e3],
  ["30d", "Last 30 days", 30 * 86400e3],
];
export const DEFAULT_PRESET = "24h";

export function presetSpan(name) {
  const found = PRESETS.find(([key]) => key === name);
  return found ? found[2] : null;
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
