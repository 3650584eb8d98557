// Setting a password: the first one from an invitation's link (/accept-invitation), a new
// one from a reset link (/reset-password?token=), or asking for a reset link
// (/reset-password without a token). The links are the ones the server e-mails.
import { post } from "../api.js";
import { clear, errorBox, field, h } from "../dom.js";

function askForLink(main) {
  const email = h("input", { type: "email", required: true, autocomplete: "username", testid: "reset-email" });
  const problem = h("div", {});
  const form = h(
    "form",
    { class: "signin card" },
    h("h1", {}, "Reset your password"),
    field("E-mail", email),
    h("button", { type: "submit", class: "primary", testid: "reset-submit" }, "Send a reset link"),
    problem,
    h("p", {}, h("a", { href: "/signin" }, "Back to sign in")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(problem);
    try {
      await post("/v1/auth/password-reset", { email: email.value.trim() });
      form.replaceWith(h("div", { class: "signin card", role: "status" }, h("p", {}, "If that address has an account, a reset link is on its way."), h("a", { href: "/signin" }, "Back to sign in")));
    } catch (error) {
      problem.append(errorBox(error));
    }
  });
  main.append(form);
}

export async function render(main, { query, navigate }) {
  const token = query.get("token");
  const invitation = location.pathname === "/accept-invitation";
  if (!token) {
    if (invitation) main.append(h("p", { class: "error" }, "This invitation link has no token."));
    else askForLink(main);
    return;
  }
  const password = h("input", { type: "password", required: true, autocomplete: "new-password", minlength: 8, testid: "new-password" });
  const again = h("input", { type: "password", required: true, autocomplete: "new-password", testid: "new-password-again" });
  const problem = h("div", {});
  const form = h(
    "form",
    { class: "signin card" },
    h("h1", {}, invitation ? "Welcome: choose a password" : "Choose a new password"),
    field("Password", password),
    field("Password again", again),
    h("button", { type: "submit", class: "primary", testid: "new-password-submit" }, "Set password"),
    problem,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(problem);
    if (password.value !== again.value) {
      problem.append(errorBox(new Error("The two passwords differ.")));
      return;
    }
    try {
      await post(invitation ? "/v1/auth/invitation/accept" : "/v1/auth/password-reset/confirm", { token, password: password.value });
      navigate("/signin?done=password", { replace: true });
    } catch (error) {
      problem.append(errorBox(error));
    }
  });
  main.append(form);
}
