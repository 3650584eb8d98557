// A link to one line: the search it was found by (query, filters, the field picked),
// over the minutes around its time, with the line's id (`line=`). Opened, the page
// loads pages until the line is among them, expands it, marks it and scrolls to it.
import { copyButton } from "./copy.js";

export const AROUND_MS = 5 * 60_000; // the link's range: this long before and after the line
const MAX_PAGES = 20; // export pages read looking for the line (newest first)

export function lineLink(record, from = location.href) {
  const url = new URL(from);
  url.pathname = "/search";
  for (const key of ["range", "from", "to", "line"]) url.searchParams.delete(key);
  url.searchParams.set("from", String(record._ts - AROUND_MS));
  url.searchParams.set("to", String(record._ts + AROUND_MS));
  url.searchParams.set("line", record._id);
  return url.href;
}

// The expanded line's buttons: copy its text, copy a link to it (a line from live
// tail has no stored id, so no link).
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
export async function revealLine(lines, id, more) {
  for (let pages = 0; ; pages += 1) {
    const entry = lines.entries.find((candidate) => candidate.record._id === id);
    if (entry) {
      entry.open = true;
      entry.linked = true;
      lines.redraw(entry);
      lines.scrollToEntry(entry);
      return true;
    }
    if (pages >= MAX_PAGES || !(await more())) return false;
  }
}
