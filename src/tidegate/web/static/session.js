// Who is signed in: the server's answer to GET /v1/auth/session, nothing kept locally.
import { ApiError, api, get } from "./api.js";
import { forget } from "./kept.js";

// Roles in order (docs/people.md): each may do what the ones before it may. Changing
// views and boards needs "content" (member), keys, rules and pipelines "manage" (admin).
const RANK = { readonly: 1, member: 2, admin: 3, owner: 4 };
const NEEDS = { read: 1, content: 2, manage: 3 };

export const session = {
  current: null, // {kind, account_id, accounts: [{id, name, role}], role}

  // Whether to show the controls of a change needing `permission`; the server decides
  // anyway (it refuses what the role may not do).
  can(permission) {
    return Boolean(this.current) && (RANK[this.current.role] || 0) >= NEEDS[permission];
  },

  async load() {
    try {
      this.current = await get("/v1/auth/session");
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      this.current = null;
    }
    return this.current;
  },

  async signIn(body) {
    forget();
    this.current = await api("POST", "/v1/auth/session", { body });
    return this.current;
  },

  async chooseAccount(accountId) {
    forget();
    this.current = await api("PUT", "/v1/auth/session/account", {
      body: { account_id: accountId },
    });
    return this.load();
  },

  // Signed out only once the server has ended the session (a 401: it had ended
  // already); any other failure is thrown, the session and its cookies still live.
  async signOut() {
    try {
      await api("DELETE", "/v1/auth/session");
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) throw error;
    }
    forget();
    this.current = null;
  },

  // The server says the session has ended (a 401).
  ended() {
    forget();
    this.current = null;
  },
};

// Accounts often share a company name: the id tells them apart.
export function accountLabel(account) {
  return account.name && account.name !== account.id ? `${account.name} · ${account.id}` : account.id;
}

// The person (their e-mail), or the kind of key a browser signed in with.
export function signedInAs(current) {
  if (current.email) return current.email;
  return current.kind === "enterprise" ? "enterprise key" : current.kind === "service" ? "service key" : "";
}
