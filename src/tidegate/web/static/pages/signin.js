// Sign in with e-mail and password, or with an API key (a service key; an enterprise key
// then picks one of its accounts). The server answers with the session cookie.
import { clear, errorBox, field, h } from "../dom.js";
import { accountLabel, session } from "../session.js";

function nextPath(query) {
  const next = query.get("next") || "/search";
  // Only paths of this site (no "//host" or scheme), so a link cannot send someone away.
  return next.startsWith("/") && !next.startsWith("//") ? next : "/search";
}

export async function render(main, { query, navigate }) {
  const email = h("input", { type: "email", name: "email", autocomplete: "username", testid: "signin-email" });
  const password = h("input", {
    type: "password",
    name: "password",
    autocomplete: "current-password",
    testid: "signin-password",
  });
  const key = h("input", {
    type: "password",
    name: "key",
    autocomplete: "off",
    placeholder: "sta_… or ste_…",
    testid: "signin-key",
  });
  const problem = h("div", { class: "problem" });
  const submit = h("button", { type: "submit", class: "primary", testid: "signin-submit" }, "Sign in");
  const form = h(
    "form",
    { class: "signin card" },
    h("h1", {}, "Sign in to tidegate"),
    query.get("done") === "password" ? h("p", { class: "notice card", role: "status" }, "Your password is set: sign in with it.") : null,
    field("E-mail", email),
    field("Password", password),
    h("p", { class: "or" }, "or"),
    field("API key", key, "A service key, or an enterprise key and then an account"),
    submit,
    problem,
    h("p", { class: "muted" }, h("a", { href: "/reset-password" }, "Forgot your password?")),
  );
  const done = () => navigate(nextPath(query), { replace: true });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(problem);
    submit.disabled = true;
    try {
      const body = key.value.trim()
        ? { key: key.value.trim() }
        : { email: email.value.trim(), password: password.value };
      const answer = await session.signIn(body);
      key.value = "";
      password.value = "";
      // An enterprise key acts for one account at a time: with several, the person picks.
      const accounts = answer.accounts || [];
      if (answer.account_id && (answer.kind !== "enterprise" || accounts.length < 2)) return done();
      // A link into one of them (an alert's) says which: the page it opens acts there.
      const linked = new URL(nextPath(query), location.origin).searchParams.get("account");
      if (accounts.some((account) => account.id === linked)) return done();
      pickAccount(main, accounts, answer.account_id, done);
    } catch (error) {
      problem.append(errorBox(error));
    } finally {
      submit.disabled = false;
    }
  });
  main.append(form);
  (key.value ? key : email).focus();
}

function pickAccount(main, accounts, current, done) {
  const select = h(
    "select",
    { name: "account", testid: "signin-account" },
    accounts.map((account) => h("option", { value: account.id, selected: account.id === current }, accountLabel(account))),
  );
  const problem = h("div", { class: "problem" });
  const form = h(
    "form",
    { class: "signin card" },
    h("h1", {}, "Choose an account"),
    accounts.length
      ? [field("Account", select), h("button", { type: "submit", class: "primary", testid: "signin-submit" }, "Continue")]
      : h("p", {}, "This enterprise has no accounts yet."),
    problem,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(problem);
    try {
      await session.chooseAccount(select.value);
      done();
    } catch (error) {
      problem.append(errorBox(error));
    }
  });
  clear(main).append(form);
}
