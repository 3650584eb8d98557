// A link to one line: the search it was found by (query, filters, the fields picked),
// over the minutes around its time, with the line's id (`line=`). Opened, the page
// loads pages until the line is among them, expands it, marks it and scrolls to it.
import { copyButton } from "./copy.js";
import { session } from "./session.js";

export const AROUND_MS = 5 * 60_000; // the link's range: this long before and after the line
const MAX_PAGES = 20; // export pages read looking for the line (newest first)
const MAX_WAITS = 100; // 100 ms each, for a page another caller asked for

export function lineLink(record, from = location.href) {
  const url = new URL(from);
  url.pathname = "/search";
  for (const key of ["range", "from", "to", "line"]) url.searchParams.delete(key);
  url.searchParams.set("from", String(record._ts - AROUND_MS));
  url.searchParams.set("to", String(record._ts + AROUND_MS));
  url.searchParams.set("line", record._id);
  // Its account: whoever opens it may be working in another (app.js switches).
  if (session.current && session.current.account_id) url.searchParams.set("account", session.current.account_id);
  return url.href;
}

// The expanded line's buttons: copy its text, copy a link to it (a line never stored,
// an indexonly one from live tail, has no id, so no link).
export function copyButtons(record) {
  return [
    copyButton("copy-line", "Copy line", () => String(record._line ?? "")),
    record._id ? copyButton("copy-link", "Copy link", () => lineLink(record)) : null,
  ];
}

// Marks a drawn row of the linked line (and brings it on screen the first time).
export function markLinked(el, entry) {
  if (!entry.linked) return;
  el.classList.add("linked");
  el.setAttribute("aria-current", "true");
  if (!entry.linkShown) {
    entry.linkShown = true;
    requestAnimationFrame(() => el.scrollIntoView({ block: "center" }));
  }
}

// Finds line `id` among the loaded lines, asking `more()` (resolves false when there is
// nothing more) for further pages; expands, marks and scrolls to it. False if not found.
// `more()` may come back without a page (one was already on its way, asked by the
// scroll): then the page is waited for, not counted.
export async function revealLine(lines, id, more) {
  let pages = 0;
  let searched = 0; // entries already looked through
  for (let waits = 0; waits < MAX_WAITS; ) {
    const at = lines.entries.slice(searched).findIndex((candidate) => candidate.record._id === id);
    if (at >= 0) {
      const entry = lines.entries[searched + at];
      entry.open = true;
      entry.linked = true;
      lines.redraw(entry);
      lines.scrollToEntry(entry);
      return true;
    }
    searched = lines.length;
    if (pages >= MAX_PAGES || !(await more())) return false;
    if (lines.length > searched) pages += 1;
    else {
      waits += 1;
      await new Promise((done) => setTimeout(done, 100));
    }
  }
  return false;
}
