// The signed-in person's preferences, kept by the server with the person (GET and
// PATCH /v1/auth/preferences, POST/DELETE .../query-history, POST .../forget, POST
// .../starred, .../starred/forget, .../starred/name and .../starred/move; docs/web.md,
// "Preferences"):
// the UTC switch, the query history and the starred searches (named or not). Nothing is written to the
// browser's storage. A browser signed in with a key has no person to keep them for
// (the server answers 403): the page then keeps them while it is open, and says so.
import { api, get } from "./api.js";
import { h } from "./dom.js";
import { showUtc, showsUtc } from "./zone.js";

const PATH = "/v1/auth/preferences";
const MAX_QUERY_HISTORY = 50; // as the server keeps
export const MAX_STARRED = 50; // as the server keeps (one more is refused)
export const MAX_STARRED_NAME_LENGTH = 100; // as the server keeps

const defaults = () => ({ utc: false, query_history: [], searches: [], starred: [] });

// A history entry as the server keeps it: the query, and the range (`range`, relative,
// or `from`/`to`, absolute), filters and picked fields it ran with; what is empty is
// left out.
export function historyEntry({ q, range, hosts, apps, levels, fields }) {
  const entry = { query: String(q || "").trim() };
  if (range && range.preset) entry.range = range.preset;
  else if (range && Number.isFinite(range.from) && Number.isFinite(range.to)) Object.assign(entry, { from: range.from, to: range.to });
  for (const [name, list] of Object.entries({ hosts, apps, levels, fields })) if (list && list.length) entry[name] = [...list];
  return entry;
}

// An entry as the server answers it (empty lists, nulls) as the server keeps it.
export function keptEntry(entry) {
  return historyEntry({ q: entry.query, range: entry.range ? { preset: entry.range } : { from: entry.from, to: entry.to }, hosts: entry.hosts, apps: entry.apps, levels: entry.levels, fields: entry.fields });
}

// The same entry, whatever the server added: for comparing two.
const entryKey = (entry) => JSON.stringify(keptEntry(entry));

export const preferences = {
  current: defaults(),
  kept: false, // kept by the server (a person), or by this page only (a key)
  owner: undefined, // whose these are: the session they were loaded for
  loading: null,
  sent: 0, // history writes sent; only the latest one's answer is used

  // Loaded once for each session signed in (the router asks before drawing a page).
  load(session) {
    const owner = session ? `${session.kind}:${session.email || ""}` : null;
    if (owner !== this.owner || !this.loading) {
      this.owner = owner;
      this.loading = this.fetch(session);
    }
    return this.loading;
  },

  async fetch(session) {
    this.kept = Boolean(session) && session.kind === "user";
    this.use(defaults());
    if (!this.kept) return;
    try {
      this.use(await get(PATH));
    } catch {
      // The defaults: a page is never kept from drawing by its settings.
    }
  },

  // What the person changed in other browsers since the page loaded them: asked again
  // when the history opens. Not used when this page sent a change meanwhile (that
  // change's answer holds the others' too); the UTC switch stays as this page has it.
  // True when the list changed.
  async refresh() {
    if (!this.kept) return false;
    const before = this.sent;
    let answer;
    try {
      answer = await get(PATH);
    } catch {
      return false;
    }
    if (before !== this.sent) return false;
    const was = JSON.stringify([this.current.searches, this.current.starred]);
    this.use({ ...answer, utc: this.current.utc });
    return JSON.stringify([this.current.searches, this.current.starred]) !== was;
  },

  use(answer) {
    this.current = { ...defaults(), ...answer };
    // A server of the previous release answers the queries only.
    if (!answer.searches) this.current.searches = this.current.query_history.map((query) => ({ query }));
    showUtc(this.current.utc);
  },

  async setUtc(on) {
    this.current.utc = Boolean(on);
    showUtc(on);
    if (this.kept) await api("PATCH", PATH, { body: { utc: Boolean(on) } });
  },

  // A search that ran (`historyEntry`): first in the history, once per query, with the
  // range and filters it ran with now (the server keeps the same order).
  async rememberQuery(entry) {
    const text = entry.query;
    const searches = this.current.searches;
    if (!text || (searches.length && entryKey(searches[0]) === entryKey(entry))) return;
    this.current.searches = [entry, ...searches.filter((item) => item.query !== text)].slice(0, MAX_QUERY_HISTORY);
    this.current.query_history = this.current.searches.map((item) => item.query);
    await this.send("/query-history", entry);
  },

  // One query out of the history (the others keep their order).
  async forgetQuery(query) {
    this.current.searches = this.current.searches.filter((item) => item.query !== query);
    this.current.query_history = this.current.searches.map((item) => item.query);
    await this.send("/query-history/forget", { query });
  },

  // A search starred (`historyEntry`), first, with the range and filters it has now;
  // the server's answer (or its refusal: at most MAX_STARRED) is what the page keeps.
  async starQuery(entry) {
    if (!entry.query) return;
    const others = this.current.starred.filter((item) => item.query !== entry.query);
    if (others.length >= MAX_STARRED) throw new Error(`At most ${MAX_STARRED} searches can be starred: unstar one first`);
    this.current.starred = [entry, ...others];
    await this.send("/starred", entry);
  },

  // A starred search named (null: its name taken away), in its place.
  async nameStarred(query, name) {
    this.current.starred = this.current.starred.map((item) => (item.query === query ? { ...item, name } : item));
    await this.send("/starred/name", { query, name });
  },

  // A starred search moved to `position` among them (0 first), the others in order.
  async moveStarred(query, position) {
    const moving = this.current.starred.find((item) => item.query === query);
    if (!moving) return;
    const others = this.current.starred.filter((item) => item.query !== query);
    others.splice(Math.min(position, others.length), 0, moving);
    this.current.starred = others;
    await this.send("/starred/move", { query, position });
  },

  async unstarQuery(query) {
    this.current.starred = this.current.starred.filter((item) => item.query !== query);
    await this.send("/starred/forget", { query });
  },

  // A change of the history or the starred searches, made on the page already, to the
  // server (a person's; a key's stay with the page). Only the latest change's answer is
  // used: it also has what the person did in other browsers meanwhile.
  async send(path, body) {
    const mine = ++this.sent;
    if (!this.kept) return;
    const answer = await api("POST", `${PATH}${path}`, { body });
    if (mine === this.sent) this.use({ ...answer, utc: this.current.utc });
  },

  isStarred(query) {
    return this.current.starred.some((item) => item.query === query);
  },

  async forgetQueries() {
    this.current.query_history = [];
    this.current.searches = [];
    this.sent += 1;
    if (this.kept) await api("DELETE", `${PATH}/query-history`);
  },
};

// The UTC switch, beside the zone shown: `onChange()` redraws the page's times.
export function utcSwitch(onChange) {
  const where = () => (preferences.kept ? "remembered for you" : "for this page only: a key has no person to remember it for");
  const button = h(
    "button",
    { type: "button", class: "utc-switch", testid: "utc-switch", "aria-pressed": String(showsUtc()), title: `Show and read times in UTC (${where()})` },
    "UTC",
  );
  button.addEventListener("click", async () => {
    const on = !showsUtc();
    button.setAttribute("aria-pressed", String(on));
    const saved = preferences.setUtc(on);
    onChange(on);
    try {
      await saved;
      button.title = `Show and read times in UTC (${where()})`;
    } catch (error) {
      button.title = `Not remembered: ${error.message || error}`;
    }
  });
  return button;
}
