// A virtualised list: every record is kept, but only the rows near the viewport are in
// the DOM (at most MAX_ROWS), between two spacers that stand for the rows above and
// below. Rows have variable heights (an expanded line, its context): each drawn row is
// measured (a ResizeObserver), unmeasured rows count as ESTIMATE, and the offsets are
// prefix sums recomputed from the first changed row. The page (window) scrolls; a row
// on screen stays where it is when the rows above it change height or are added.
//
// An entry is `{record, open, ...}`: the row's state (expanded, its context) lives on
// the entry, so it survives the row being dropped from the DOM and drawn again.
import { h } from "./dom.js";

const ESTIMATE = 22; // px: a collapsed line before it is measured
const OVERSCAN_PX = 2400; // drawn beyond each edge of the viewport (the first page of 100 lines is all drawn)
export const MAX_ROWS = 300; // whatever the viewport, never more rows than this

export class VirtualList {
  constructor(box, render) {
    this.box = box; // the element holding the rows (its testid stays the page's)
    this.render = render; // (entry, changed) -> element; `changed()` after a state change
    this.entries = [];
    this.offsets = new Float64Array(1); // offsets[i]: top of row i; offsets[n]: all
    this.dirtyFrom = 0; // offsets from this row on are stale
    this.first = 0; // the drawn window: rows first..last-1
    this.last = 0;
    this.drawn = new Map(); // entry -> element
    this.frame = 0;
    this.above = h("div", { class: "spacer", "aria-hidden": "true" });
    this.rows = h("div", { class: "rows" });
    this.below = h("div", { class: "spacer", "aria-hidden": "true" });
    box.replaceChildren(this.above, this.rows, this.below);
    this.box.dataset.count = "0";
    this.schedule = () => {
      if (!this.frame) this.frame = requestAnimationFrame(() => this.update());
    };
    this.resized = new ResizeObserver(this.schedule);
    window.addEventListener("scroll", this.schedule, { passive: true });
    window.addEventListener("resize", this.schedule);
    // The list keeps its rows in place itself; the browser's scroll anchoring would
    // move the page as well (for the document scroller it is set on the root).
    document.documentElement.style.overflowAnchor = "none";
  }

  get length() {
    return this.entries.length;
  }

  // Older lines, at the end (export pages).
  append(records) {
    if (!records.length) return;
    this.dirtyFrom = Math.min(this.dirtyFrom, this.entries.length);
    for (const record of records) this.entries.push({ record, open: false, height: ESTIMATE });
    this.changed();
  }

  // Newer lines, on top (live tail), newest first.
  prepend(records) {
    if (!records.length) return;
    this.entries.unshift(...records.map((record) => ({ record, open: false, height: ESTIMATE })));
    this.dirtyFrom = 0;
    this.changed();
  }

  // Keeps the first `count` entries (live tail's cap).
  keep(count) {
    if (this.entries.length <= count) return;
    for (const entry of this.entries.splice(count)) this.undraw(entry);
    this.dirtyFrom = Math.min(this.dirtyFrom, count);
    this.changed();
  }

  // The entries of a list drawn before (the page kept for Back), with their state.
  adopt(entries) {
    for (const entry of this.drawn.keys()) this.undraw(entry);
    this.entries = entries;
    this.dirtyFrom = 0;
    this.first = this.last = 0;
    this.changed();
  }

  // Scrolls the page to `y` once the spacers stand for every row (at its known height).
  scrollToY(y) {
    this.update();
    window.scrollTo(0, y);
    this.schedule();
  }

  clear() {
    for (const entry of this.drawn.keys()) this.undraw(entry);
    this.entries = [];
    this.dirtyFrom = 0;
    this.first = this.last = 0;
    this.changed();
    this.update();
  }

  changed() {
    this.box.dataset.count = String(this.entries.length);
    this.schedule();
  }

  // Redraws one entry's row (its state changed: expanded, context shown).
  redraw(entry) {
    const el = this.drawn.get(entry);
    if (!el) return;
    const fresh = this.render(entry, () => this.redraw(entry));
    this.resized.unobserve(el);
    el.replaceWith(fresh);
    this.drawn.set(entry, fresh);
    this.resized.observe(fresh);
  }

  // Scrolls the page to where `entry`'s row is (or will be) drawn, a third down the
  // viewport; the rows drawn there are then measured and kept in place as usual.
  scrollToEntry(entry) {
    const at = this.entries.indexOf(entry);
    if (at < 0) return;
    this.update(); // the spacers then stand for every row: the page is as tall as the list
    const listTop = this.above.getBoundingClientRect().top + window.scrollY;
    window.scrollTo(0, Math.max(0, listTop + this.offsets[at] - window.innerHeight / 3));
    this.schedule();
  }

  undraw(entry) {
    const el = this.drawn.get(entry);
    if (!el) return;
    this.resized.unobserve(el);
    el.remove();
    this.drawn.delete(entry);
  }

  relayout() {
    const n = this.entries.length;
    if (this.offsets.length < n + 1) {
      const grown = new Float64Array(Math.max(n + 1, this.offsets.length * 2));
      grown.set(this.offsets.subarray(0, this.dirtyFrom + 1));
      this.offsets = grown;
    }
    for (let i = Math.min(this.dirtyFrom, n); i < n; i += 1) this.offsets[i + 1] = this.offsets[i] + this.entries[i].height;
    this.dirtyFrom = n;
  }

  // The first row whose bottom is below `y` (px from the list's top).
  indexAt(y) {
    let low = 0;
    let high = this.entries.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (this.offsets[mid + 1] <= y) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  update() {
    this.frame = 0;
    // The row on screen to keep in place, and where it is now.
    let anchor = null;
    let anchorTop = 0;
    for (const [entry, el] of this.drawn) {
      const rect = el.getBoundingClientRect();
      if (rect.bottom > 0 && (!anchor || rect.top < anchorTop)) {
        anchor = entry;
        anchorTop = rect.top;
      }
    }
    // Measure the drawn rows.
    const index = new Map(this.entries.slice(this.first, this.last).map((entry, i) => [entry, this.first + i]));
    for (const [entry, el] of this.drawn) {
      const height = el.getBoundingClientRect().height;
      const at = index.has(entry) ? index.get(entry) : this.entries.indexOf(entry);
      if (at < 0) continue;
      if (height > 0 && height !== entry.height) {
        entry.height = height;
        this.dirtyFrom = Math.min(this.dirtyFrom, at);
      }
    }
    this.relayout();
    const n = this.entries.length;
    const total = this.offsets[n];
    // Put the anchor back where it was (rows above it changed height or were added).
    // Where row 0 would be: the top spacer's top (inside the list's border).
    const listTop = this.above.getBoundingClientRect().top + window.scrollY;
    if (anchor) {
      const at = index.has(anchor) ? index.get(anchor) : this.entries.indexOf(anchor);
      if (at >= 0) {
        this.above.style.height = `${this.offsets[this.first]}px`;
        this.below.style.height = `${Math.max(0, total - this.offsets[Math.min(this.last, n)])}px`;
        const shift = listTop + this.offsets[at] - window.scrollY - anchorTop;
        if (Math.abs(shift) >= 1 && window.scrollY > listTop) window.scrollBy(0, shift);
      }
    }
    // The window: the viewport and OVERSCAN_PX beyond each edge, at most MAX_ROWS.
    const top = window.scrollY - listTop;
    let first = Math.max(0, this.indexAt(top - OVERSCAN_PX));
    let last = Math.min(n, this.indexAt(top + window.innerHeight + OVERSCAN_PX) + 1);
    if (last - first > MAX_ROWS) {
      const middle = this.indexAt(top + window.innerHeight / 2);
      first = Math.max(0, middle - (MAX_ROWS >> 1));
      last = Math.min(n, first + MAX_ROWS);
    }
    const keep = new Set(this.entries.slice(first, last));
    for (const entry of [...this.drawn.keys()]) if (!keep.has(entry)) this.undraw(entry);
    // Draw the window in order, reusing the rows already drawn.
    let next = this.rows.firstElementChild;
    for (let i = first; i < last; i += 1) {
      const entry = this.entries[i];
      let el = this.drawn.get(entry);
      if (!el) {
        el = this.render(entry, () => this.redraw(entry));
        this.drawn.set(entry, el);
        this.resized.observe(el);
      }
      if (el === next) next = next.nextElementSibling;
      else this.rows.insertBefore(el, next);
    }
    this.first = first;
    this.last = last;
    this.above.style.height = `${this.offsets[first]}px`;
    this.below.style.height = `${Math.max(0, total - this.offsets[last])}px`;
  }

  close() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.resized.disconnect();
    window.removeEventListener("scroll", this.schedule);
    window.removeEventListener("resize", this.schedule);
    document.documentElement.style.overflowAnchor = "";
  }
}
