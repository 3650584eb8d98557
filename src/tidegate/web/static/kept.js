// The search page as it was left, for Back: the loaded lines (their expanded state,
// context and measured heights), where the next export page starts, the counts and the
// scroll position. Kept in memory for the one history entry it was shown in (each
// entry of the search page gets a key in its history state); a reload starts afresh, and
// so does a change of session or account (`forget`, session.js).
let kept = null;
let made = 0;
let era = 0; // moves on with every change of session or account

function newKey() {
  made += 1;
  return `${Date.now().toString(36)}-${made}`;
}

// The key of the history entry now shown, given to it when it has none.
export function entryKey() {
  const current = history.state && history.state.search;
  if (current) return current;
  const key = newKey();
  history.replaceState({ ...(history.state || {}), search: key }, "", location.href);
  return key;
}

// A new history entry for `target`, with a key of its own.
export function pushEntry(target) {
  const key = newKey();
  history.pushState({ search: key }, "", target);
  return key;
}

// Whenever who is signed in, or the account they act in, changes: a page kept was
// another person's or account's (Back must not show it).
export function forget() {
  kept = null;
  era += 1;
}

// The era a page is drawn in: its snapshot is kept with it (a page left because the
// account changed is kept after the change, and must not be found).
export function currentEra() {
  return era;
}

// `snapshot`: {key, href, era, ...} (one page kept: the last one left).
export function keep(snapshot) {
  kept = snapshot;
}

// What was kept for this entry and address (once), or null.
export function takeKept(key, href) {
  const found = kept && kept.key === key && kept.href === href && kept.era === era ? kept : null;
  kept = null;
  return found;
}
