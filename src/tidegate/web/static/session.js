// Who is signed in: the server's answer to GET /v1/auth/session, nothing kept locally.
import { ApiError, api, get } from "./api.js";

export const session = {
  current: null, // {account_id, accounts: [{id, name, role}], role}

  get canEdit() {
    return Boolean(this.current) && this.current.role !== "readonly";
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
    this.current = await api("POST", "/v1/auth/session", { body });
    return this.current;
  },

  async chooseAccount(accountId) {
    this.current = await api("PUT", "/v1/auth/session/account", {
      body: { account_id: accountId },
    });
    return this.load();
  },

  async signOut() {
    try {
      await api("DELETE", "/v1/auth/session");
    } finally {
      this.current = null;
    }
  },
};
