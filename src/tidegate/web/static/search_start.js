// The search page's first export page, asked as soon as the app starts: beside the
// session check and the search page's modules, not after them (docs/web.md, "Time to
// the first line"). The shell runs this module `async`, so it asks as soon as this
// module and its few imports are in, before the page's other scripts have run. The export is authorized by the session cookie, as every call of
// the page is; its answer is used only by the search page drawn first, for the same
// address, in the same session (kept.js's era: a sign-in or a 401 moves it on), so
// only when the session check let that page draw.
import { ApiError, api, cookie, sessionEnded } from "./api.js";
import { splitList } from "./dom.js";
import { currentEra } from "./kept.js";
import { rangeFromParams, resolve } from "./timerange.js";

export const FIRST_PAGE = 100; // small: the first lines show as soon as the database has them

export function stateFromUrl(query) {
  return {
    q: query.get("q") || "",
    range: rangeFromParams(query),
    hosts: splitList(query.get("hosts")),
    apps: splitList(query.get("apps")),
    levels: splitList(query.get("levels")),
    // The field picker's fields (their top values): `field=` once per field.
    fields: [...new Set(query.getAll("field").map((name) => name.trim()).filter(Boolean))].slice(0, 5),
  };
}

export function filterParams(state) {
  return { query: state.q, hosts: state.hosts, apps: state.apps, levels: state.levels };
}

let early = null; // {href, era, bounds, answer, controller}

// Once per page load, when this module first runs. Nothing is asked on another page,
// without the session's readable CSRF cookie (not signed in), or for a link into an
// account (`account=`: the session switches to it before the page draws).
function askFirstPage() {
  const query = new URLSearchParams(location.search);
  if (!/^\/(search)?$/.test(location.pathname) || query.has("account") || !cookie("tidegate_csrf")) return;
  const state = stateFromUrl(query);
  const bounds = resolve(state.range);
  const controller = new AbortController();
  const params = { ...filterParams(state), ...bounds, size: FIRST_PAGE, prefer: "tail" };
  // Quiet: a 401 here says nothing yet (the session check decides what the page shows).
  const answer = api("GET", "/v2/export", { params, signal: controller.signal, quiet: true });
  answer.catch(() => {}); // taken by the search page, or by no one
  early = { href: location.pathname + location.search, era: currentEra(), bounds, answer, controller };
}
askFirstPage();

// For the search page at `href`, about to draw: the first page asked as the app
// started, once ({bounds, answer, abort}), or null when there is none for it.
export function takeFirstPage(href) {
  const found = early;
  early = null;
  if (!found) return null;
  if (found.href !== href || found.era !== currentEra()) {
    found.controller.abort();
    return null;
  }
  const answer = found.answer.catch((error) => {
    // The session ended meanwhile: as any call's 401 (api.js), back to sign-in.
    if (error instanceof ApiError && error.status === 401) sessionEnded();
    throw error;
  });
  return { bounds: found.bounds, answer, abort: () => found.controller.abort() };
}
