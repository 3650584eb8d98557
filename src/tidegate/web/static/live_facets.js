// The search page's facets while live: the top hosts, apps and levels of the stream's
// lines (the aggregation describes a range, not a stream). At most MAX_LIVE_VALUES
// distinct values per field are counted, so a stream of ever-new hosts cannot grow the
// page's memory without bound.
const MAX_LIVE_VALUES = 500;
const LIVE_FIELDS = { host: "_host", app: "_app", level: "level" };

export class LiveFacets {
  constructor() {
    this.counts = Object.fromEntries(Object.keys(LIVE_FIELDS).map((name) => [name, new Map()]));
    this.lines = 0;
  }

  add(record) {
    this.lines += 1;
    for (const [name, key] of Object.entries(LIVE_FIELDS)) {
      const value = record[key];
      if (value === undefined || value === null || value === "") continue;
      const text = String(value).toLowerCase();
      const seen = this.counts[name];
      if (seen.has(text)) seen.set(text, seen.get(text) + 1);
      else if (seen.size < MAX_LIVE_VALUES) seen.set(text, 1);
    }
  }

  top(limit = 10) {
    const top = {};
    for (const [name, seen] of Object.entries(this.counts)) {
      top[name] = [...seen].sort((a, b) => b[1] - a[1]).slice(0, limit).map(([value, count]) => ({ value, count }));
    }
    return top;
  }
}
