// The shell: a client-side router over the pages, the header and the session.
import { whenRateLimited, whenUnauthorized } from "./api.js";
import { clear, errorBox, formatClock, h } from "./dom.js";
import { preferences } from "./preferences.js";
// Asks the search page's first lines when it runs (the shell has it run even earlier).
import "./search_start.js";
import { accountLabel, session, signedInAs } from "./session.js";

const ROUTES = [
  [/^\/signin$/, () => import("./pages/signin.js"), "signin"],
  [/^\/(accept-invitation|reset-password)$/, () => import("./pages/password.js"), "signin"],
  [/^\/(search)?$/, () => import("./pages/search.js"), "search"],
  [/^\/views$/, () => import("./pages/views.js"), "views"],
  [/^\/views\/(?<viewid>[^/]+)$/, () => import("./pages/view.js"), "views"],
  [/^\/boards$/, () => import("./pages/boards.js"), "boards"],
  [/^\/boards\/(?<boardid>[^/]+)$/, () => import("./pages/board.js"), "boards"],
  [/^\/rules$/, () => import("./pages/rules.js"), "rules"],
  [/^\/parsing$/, () => import("./pages/templates.js"), "parsing"],
  [/^\/keys$/, () => import("./pages/keys.js"), "keys"],
  [/^\/usage$/, () => import("./pages/usage.js"), "usage"],
  [/^\/members$/, () => import("./pages/members.js"), "members"],
  [/^\/pipelines$/, () => import("./pages/pipelines.js"), "pipelines"],
  [/^\/pipelines\/(?<pipeline_id>[^/]+)$/, () => import("./pages/pipeline.js"), "pipelines"],
];

const main = document.getElementById("main");
let cleanup = null;
let generation = 0;

export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  return route();
}

function renderHeader() {
  const header = document.getElementById("top");
  const current = session.current;
  header.hidden = !current;
  if (!current) return;
  // Who is signed in, in which account (the switcher when there are several), as what.
  const who = document.getElementById("who");
  who.textContent = signedInAs(current);
  who.title = who.textContent;
  const switcher = document.getElementById("account-switch");
  const accounts = current.accounts || [];
  const here = accounts.find((account) => account.id === current.account_id);
  switcher.hidden = accounts.length < 2;
  clear(switcher);
  for (const account of accounts) {
    switcher.append(
      h("option", { value: account.id, selected: account.id === current.account_id }, accountLabel(account)),
    );
  }
  const single = document.getElementById("account");
  single.hidden = accounts.length >= 2;
  single.textContent = here ? accountLabel(here) : current.account_id || "";
  single.title = single.textContent;
  document.getElementById("account-in").hidden = !current.account_id;
  document.getElementById("role").textContent = current.role || "";
  document.body.classList.toggle("readonly", !session.can("content"));
}

// A link into one account (an alert's, a copied line's) carries `account=`: the session
// acts in it before the page draws, when it may (a person in several accounts, an
// enterprise key). The parameter is then dropped from the address; a link to an account
// the session cannot act in opens in the current one (a view says it is not there).
async function enterLinkedAccount() {
  const params = new URLSearchParams(location.search);
  const wanted = params.get("account");
  if (wanted === null) return;
  params.delete("account");
  const rest = params.toString();
  history.replaceState(null, "", location.pathname + (rest ? `?${rest}` : ""));
  const current = session.current;
  if (!wanted || wanted === current.account_id) return;
  if ((current.accounts || []).some((account) => account.id === wanted)) await session.chooseAccount(wanted);
}

async function route() {
  const mine = ++generation;
  if (cleanup) {
    try {
      cleanup();
    } catch {
      /* a page's cleanup must not stop the next page */
    }
    cleanup = null;
  }
  const path = location.pathname;
  const found = ROUTES.find(([pattern]) => pattern.test(path));
  if (!found) {
    clear(main).append(h("p", { class: "error" }, `No page at ${path}`));
    return;
  }
  const [pattern, load, nav] = found;
  if (nav !== "signin" && !session.current) {
    const back = location.pathname + location.search;
    history.replaceState(null, "", `/signin?next=${encodeURIComponent(back)}`);
    return route();
  }
  if (nav !== "signin") {
    try {
      await enterLinkedAccount();
    } catch (error) {
      if (mine === generation) clear(main).append(errorBox(error));
      return;
    }
    if (mine !== generation) return;
  }
  for (const link of document.querySelectorAll("[data-nav]")) {
    link.classList.toggle("active", link.dataset.nav === nav);
  }
  renderHeader();
  try {
    // The person's preferences (the zone times are shown in) before the page draws.
    const [page] = await Promise.all([load(), nav === "signin" ? null : preferences.load(session.current)]);
    if (mine !== generation) return;
    clear(main);
    const params = pattern.exec(path).groups || {};
    const drop = (await page.render(main, { params, query: new URLSearchParams(location.search), navigate })) || null;
    // A page that sent the person on (an alert's /views/<id>) is no longer the page.
    if (mine === generation) cleanup = drop;
    else if (drop) drop();
  } catch (error) {
    if (mine === generation) clear(main).append(errorBox(error));
  }
}

// In-app links: every same-origin <a> without a target is routed here.
document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href]");
  if (!link || link.target || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
  const target = new URL(link.href, location.origin);
  if (target.origin !== location.origin || target.pathname.startsWith("/docs")) return;
  event.preventDefault();
  navigate(target.pathname + target.search);
});
window.addEventListener("popstate", route);

// Never a sign-in page over a session that is still open: a refused sign-out is said
// under the header (outside the page, which may redraw meanwhile).
const signOutFailed = document.getElementById("sign-out-failed");
document.getElementById("sign-out").addEventListener("click", async () => {
  signOutFailed.hidden = true;
  try {
    await session.signOut();
  } catch (error) {
    signOutFailed.textContent = `Sign out failed, you are still signed in: ${error.message || error}`;
    signOutFailed.hidden = false;
    return;
  }
  navigate("/signin");
});
document.getElementById("account-switch").addEventListener("change", async (event) => {
  await session.chooseAccount(event.target.value);
  route();
});
// While a request waits out a 429, the page says when it will retry (every waiting
// request counted; the latest retry time shown, counting down).
const notice = document.getElementById("rate-notice");
let waiting = 0;
let retryAt = 0;
let ticker = null;
function showNotice() {
  const seconds = Math.max(0, Math.ceil((retryAt - Date.now()) / 1000));
  notice.textContent = `Too many requests: retrying in ${seconds} s (at ${formatClock(retryAt)})`;
}
whenRateLimited((at) => {
  if (at === null) waiting = Math.max(0, waiting - 1);
  else {
    waiting += 1;
    retryAt = Math.max(retryAt, at);
  }
  notice.hidden = waiting === 0;
  if (waiting && !ticker) ticker = setInterval(showNotice, 1000);
  if (!waiting) {
    clearInterval(ticker);
    ticker = null;
    retryAt = 0;
  } else showNotice();
});
whenUnauthorized(() => {
  if (location.pathname === "/signin") return;
  session.ended();
  navigate("/signin", { replace: true });
});

// The page's module loads beside the session check (route() finds it loaded).
const opening = ROUTES.find(([pattern]) => pattern.test(location.pathname));
if (opening) opening[1]().catch(() => {}); // a failure is shown when route() loads it
await session.load().catch(() => null);
route();
