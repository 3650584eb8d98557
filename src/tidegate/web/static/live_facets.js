// The search page's facets while live: the top hosts, apps and levels of the stream's
// lines (the aggregation describes a range, not a stream). At most MAX_LIVE_VALUES
// distinct values per field are counted, so a stream of ever-new hosts cannot grow the
// page's memory without bound.
// The field picker's fields are counted the same way, by their values as the lines
// carry them (field_facet.valueOf).
import { valueOf } from "./field_facet.js";

const MAX_LIVE_VALUES = 500;
const LIVE_FIELDS = ["host", "app", "level"];

function count(seen, text) {
  if (seen.has(text)) seen.set(text, seen.get(text) + 1);
  else if (seen.size < MAX_LIVE_VALUES) seen.set(text, 1);
}

function ranked(seen, limit) {
  return [...seen].sort((a, b) => b[1] - a[1]).slice(0, limit).map(([value, count]) => ({ value, count }));
}

export class LiveFacets {
  // `fields`: the field picker's fields, counted from the stream too.
  constructor(fields = []) {
    this.counts = Object.fromEntries(LIVE_FIELDS.map((name) => [name, new Map()]));
    this.fields = new Map(fields.map((name) => [name, new Map()]));
    this.lines = 0;
  }

  add(record) {
    this.lines += 1;
    for (const [name, seen] of Object.entries(this.counts)) {
      const value = valueOf(record, name);
      if (value !== undefined && value !== "") count(seen, String(value).toLowerCase());
    }
    for (const [name, seen] of this.fields) {
      const value = valueOf(record, name);
      if (value !== undefined) count(seen, String(value));
    }
  }

  top(limit = 10) {
    return Object.fromEntries(Object.entries(this.counts).map(([name, seen]) => [name, ranked(seen, limit)]));
  }

  // The picked field's top values in the stream so far.
  topOf(name, limit = 10) {
    return ranked(this.fields.get(name) || new Map(), limit);
  }
}
