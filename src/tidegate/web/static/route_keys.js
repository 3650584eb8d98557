// A gateway route's keys in the web app (a push source's panel, the routes list): its
// access keys and signing keys, listed by what identifies them, made, added, removed.
import { del, get, post, put } from "./api.js";
import { clear, errorBox, formatTime, h } from "./dom.js";

// A route's keys of one kind, listed by what identifies them (never the key), each
// removable after a confirmation; `refresh()` reads them again.
function routeKeyList({ path, testid, none, describe, removeLabel, confirmText }) {
  const list = h("ul", { class: "route-keys", testid: `${testid}s` });
  async function refresh() {
    let found;
    try {
      found = (await get(path)).data;
    } catch (error) {
      clear(list).append(h("li", {}, errorBox(error)));
      return [];
    }
    clear(list);
    if (!found.length) list.append(h("li", { class: "muted", testid: `${testid}s-none` }, none));
    for (const key of found) {
      const remove = h("button", { type: "button", class: "link danger", testid: `${testid}-${removeLabel.toLowerCase()}` }, removeLabel);
      const item = h("li", { testid: `${testid}-item`, "data-key-id": key.id }, h("span", {}, `${describe(key)} · made ${formatTime(Date.parse(key.created_at)).slice(0, 16)} `), remove);
      remove.addEventListener("click", async () => {
        if (!confirm(confirmText(key))) return;
        try {
          await del(`${path}/${encodeURIComponent(key.id)}`);
        } catch (error) {
          item.append(errorBox(error));
          return;
        }
        await refresh();
      });
      list.append(item);
    }
    return found;
  }
  return { element: list, refresh };
}

// A signing key made in the browser when none is pasted: 32 random bytes as hex, as
// docs/api-pipelines.md advises (`openssl rand -hex 32`).
function randomSigningKey() {
  return Array.from(crypto.getRandomValues(new Uint8Array(32)), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

// Where a route receives; its access keys (title, last four characters, when made),
// each revocable, and a new one (shown once, titled after `label`); its signing keys (a
// fingerprint, when added), each removable, and one added: pasted, or made here and
// shown once.
export function routeAccess(routeId, label) {
  const base = `/v3/pipeline/gateway-route/${encodeURIComponent(routeId)}`;
  const url = `${location.origin}/gateway/${routeId}`;
  const access = routeKeyList({
    path: `${base}/access-key`,
    testid: "route-key",
    none: "No access key yet: a sender needs one (New access key).",
    describe: (key) => `${key.title || "untitled"} · …${key.hint}`,
    removeLabel: "Revoke",
    confirmText: (key) => `Revoke the access key “${key.title || "untitled"}” (…${key.hint})? Senders using it are refused from now on.`,
  });
  const shown = h("div", {});
  const create = h("button", { type: "button", testid: "route-key-create" }, "New access key");
  create.addEventListener("click", async () => {
    clear(shown);
    try {
      const key = (await post(`${base}/access-key`, { type: "generated", title: `${label} (web app)` })).data;
      shown.append(h("p", { class: "muted" }, "The key is shown this once:"), h("code", { class: "secret", testid: "route-key" }, key.key));
    } catch (error) {
      shown.append(errorBox(error));
    }
    await access.refresh();
  });

  const signing = routeKeyList({
    path: `${base}/signing-key`,
    testid: "route-signing-key",
    none: "No signing key: an access key is all a sender needs. With one, every request must also carry X-Hub-Signature: sha256=<HMAC of its body>.",
    describe: (key) => `fingerprint ${key.fingerprint}`,
    removeLabel: "Remove",
    confirmText: (key) => `Remove the signing key ${key.fingerprint}? Requests signed with it only are refused from now on; with no signing key left, none needs a signature.`,
  });
  const pasted = h("input", { type: "password", autocomplete: "off", placeholder: "paste a key, or leave empty", testid: "route-signing-key-input" });
  const signed = h("div", {});
  const add = h("button", { type: "button", testid: "route-signing-key-add" }, "Add signing key");
  add.addEventListener("click", async () => {
    clear(signed);
    const made = !pasted.value;
    const key = pasted.value || randomSigningKey();
    const before = new Set(Array.from(signing.element.querySelectorAll("[data-key-id]"), (item) => item.dataset.keyId));
    let added;
    try {
      added = (await put(`${base}/signing-key`, { key })).data;
    } catch (error) {
      signed.append(errorBox(error));
      return;
    }
    pasted.value = "";
    if (made) signed.append(h("p", { class: "muted" }, "The key is shown this once; senders sign each body with it (HMAC-SHA256):"), h("code", { class: "secret", testid: "route-signing-key" }, key));
    else if (before.has(added.id)) signed.append(h("p", { class: "muted", testid: "route-signing-key-held" }, `The route already holds this key (${added.fingerprint}).`));
    await signing.refresh();
  });
  access.refresh();
  signing.refresh();
  return h(
    "div",
    { class: "route-access" },
    h("p", {}, "Send events: ", h("code", { testid: "node-route-url" }, `POST ${url}`)),
    h("h3", {}, "Access keys"),
    access.element,
    create,
    shown,
    h("h3", {}, "Signing keys"),
    signing.element,
    h("div", { class: "signing-add" }, pasted, add),
    signed,
  );
}
