// The zone every time in the app is shown and typed in: the browser's, or UTC (the
// person's UTC switch, preferences.js). One place, so the lines, the histogram's axis,
// the range and what is typed always agree.
let utc = false;

export function showUtc(on) {
  utc = Boolean(on);
}

export function showsUtc() {
  return utc;
}
