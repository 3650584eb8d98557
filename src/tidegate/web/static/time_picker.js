// The search page's time picker: the presets, a custom from–to, a range typed as a
// person types it (timerange.parseTyped), the zone shown and the UTC switch. It reads
// and writes `state.range`; the page decides when to search.
import { fromLocalInput, h, toLocalInput } from "./dom.js";
import { utcSwitch } from "./preferences.js";
import { PRESETS, parseTyped, presetLabel, resolve, zoneLabel } from "./timerange.js";

// `onPreset()`: a preset was chosen (search again); `onZone()`: the UTC switch moved
// (draw the page's other times again).
export function timePicker(state, { onPreset, onZone }) {
  const rangeSelect = h(
    "select",
    { testid: "time-range", "aria-label": "Time range" },
    PRESETS.map(([key, label]) => h("option", { value: key }, label)),
    h("option", { value: "custom" }, "Custom range…"),
  );
  const fromInput = h("input", { type: "datetime-local", step: "1", "aria-label": "From", testid: "range-from" });
  const toInput = h("input", { type: "datetime-local", step: "1", "aria-label": "To", testid: "range-to" });
  const custom = h("span", { class: "custom-range" }, fromInput, "–", toInput);
  const typedRange = h("input", {
    type: "text",
    class: "typed-range",
    placeholder: "-15m, now-2h, 2026-11-27 01:00 .. now",
    spellcheck: "false",
    "aria-label": "Type a time range",
    testid: "time-input",
  });
  const zone = h("span", { class: "zone muted", testid: "time-zone", title: "Times are shown and typed in this zone" }, zoneLabel());
  const utc = utcSwitch(() => {
    zone.textContent = zoneLabel();
    show();
    onZone();
  });

  function show() {
    const { from, to } = resolve(state.range);
    // A typed relative range that is not a preset gets an option of its own.
    let typedOption = rangeSelect.querySelector("option[data-typed]");
    if (state.range.preset && !PRESETS.some(([key]) => key === state.range.preset)) {
      if (!typedOption) {
        typedOption = h("option", { "data-typed": "" });
        rangeSelect.prepend(typedOption);
      }
      typedOption.value = state.range.preset;
      typedOption.textContent = presetLabel(state.range.preset);
    } else if (typedOption) typedOption.remove();
    rangeSelect.value = state.range.preset || "custom";
    custom.hidden = Boolean(state.range.preset);
    fromInput.value = toLocalInput(from);
    toInput.value = toLocalInput(to);
  }

  // On submit: the typed range, else the custom bounds, into `state.range`. Throws
  // when the typed range does not parse (the state is left as it was).
  function take() {
    if (typedRange.value.trim()) {
      state.range = parseTyped(typedRange.value);
      typedRange.value = "";
      show();
    } else if (rangeSelect.value === "custom") {
      const from = fromLocalInput(fromInput.value);
      const to = fromLocalInput(toInput.value);
      if (from !== null && to !== null) state.range = { from, to: to + 999 };
    }
  }

  rangeSelect.addEventListener("change", () => {
    if (rangeSelect.value === "custom") {
      state.range = resolve(state.range);
      show();
      return;
    }
    state.range = { preset: rangeSelect.value };
    show();
    onPreset();
  });
  show();
  return { elements: [rangeSelect, typedRange, custom, zone, utc], show, take };
}
