// The public HTTP API, as the signed-in person: the session cookie goes with every
// request (same origin), and unsafe methods carry the CSRF token the server set in the
// readable `tidegate_csrf` cookie. No key is ever kept by the page.

export class ApiError extends Error {
  constructor(status, body) {
    const text = (body && (body.error || body.message)) || `HTTP ${status}`;
    super(text);
    this.status = status;
    this.body = body;
  }
}

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

export function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return null;
}

export function url(path, params = {}) {
  const target = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    target.searchParams.set(key, Array.isArray(value) ? value.join(",") : String(value));
  }
  return target;
}

let onUnauthorized = () => {};
export function whenUnauthorized(callback) {
  onUnauthorized = callback;
}
// A request outside `api` (live tail's stream) answered 401: the session has ended.
export function sessionEnded() {
  onUnauthorized();
}

// A 429 is waited out and the request sent again (the server refused it before doing
// anything, so this is safe for every method), at most MAX_WAITS times in a row and
// only when it asks for at most MAX_WAIT_MS (a sign-in blocked for a quarter of an hour
// is shown as the error it is); `onRateLimited(retryAt)` tells the page when (ms), and
// `onRateLimited(null)` when the wait is over.
export const MAX_WAITS = 5;
const MAX_WAIT_MS = 60_000;
let onRateLimited = () => {};
export function whenRateLimited(callback) {
  onRateLimited = callback;
}

export function retryAfterMs(header) {
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.max(1, Math.ceil(seconds)) * 1000;
  const at = Date.parse(header || "");
  return Number.isFinite(at) ? Math.max(1000, at - Date.now()) : 1000;
}

function pause(ms, signal) {
  return new Promise((done, fail) => {
    if (signal && signal.aborted) return fail(signal.reason);
    const timer = setTimeout(() => {
      if (signal) signal.removeEventListener("abort", stop);
      done();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      fail(signal.reason);
    };
    if (signal) signal.addEventListener("abort", stop, { once: true });
  });
}

// Waits out a 429 `response` (saying when the request is sent again) and answers
// true; false when it asks for longer than MAX_WAIT_MS (then shown as the error it is).
export async function waitOut(response, signal) {
  const wait = retryAfterMs(response.headers.get("Retry-After"));
  if (wait > MAX_WAIT_MS) return false;
  onRateLimited(Date.now() + wait);
  try {
    await pause(wait, signal);
  } finally {
    onRateLimited(null);
  }
  return true;
}

async function send(method, path, { params, body, signal, accept = "application/json" }) {
  const headers = { Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (!SAFE.has(method)) {
    const token = cookie("tidegate_csrf");
    if (token) headers["X-CSRF-Token"] = token;
  }
  for (let waits = 0; ; waits += 1) {
    const response = await fetch(url(path, params), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      signal,
    });
    if (response.status !== 429 || waits >= MAX_WAITS || !(await waitOut(response, signal))) return response;
  }
}

// A request answered with server-sent events (a pipeline's tap stream): its events, as
// `{event, data}` (data parsed as JSON), are handed to `onEvent` until the stream ends
// (answers normally) or `signal` aborts it. A 429 is waited out as by `api`; another
// refusal is thrown as an ApiError, before any event.
export async function stream(method, path, { body, signal, onEvent }) {
  const response = await send(method, path, { body, signal, accept: "text/event-stream" });
  if (!response.ok) {
    const text = await response.text();
    let data = null;
    try {
      data = JSON.parse(text);
    } catch {
      data = { error: text.slice(0, 200) };
    }
    if (response.status === 401) onUnauthorized();
    throw new ApiError(response.status, data);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffered += value;
    const blocks = buffered.split("\n\n");
    buffered = blocks.pop();
    const events = [];
    for (const block of blocks) {
      let event = "message";
      let data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) events.push({ event, data: JSON.parse(data) });
    }
    if (events.length) onEvent(events);
  }
}

// `quiet`: a 401 is only thrown, not taken as the session's end (search_start.js).
export async function api(method, path, { params, body, signal, quiet = false } = {}) {
  const response = await send(method, path, { params, body, signal });
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { error: text.slice(0, 200) };
    }
  }
  if (!response.ok) {
    if (response.status === 401 && !quiet && !path.startsWith("/v1/auth/")) onUnauthorized();
    const error = new ApiError(response.status, data);
    if (response.status === 429 && response.headers.has("Retry-After")) {
      error.message += ` (try again in ${Math.round(retryAfterMs(response.headers.get("Retry-After")) / 1000)} s)`;
    }
    throw error;
  }
  return data;
}

export const get = (path, params, signal) => api("GET", path, { params, signal });
export const post = (path, body, params) => api("POST", path, { body, params });
export const patch = (path, body) => api("PATCH", path, { body });
export const put = (path, body) => api("PUT", path, { body });
export const del = (path) => api("DELETE", path);

// Is an endpoint there at all (an API another release adds)? 404/405 mean no.
export async function available(path) {
  try {
    await get(path);
    return true;
  } catch (error) {
    return !(error instanceof ApiError && (error.status === 404 || error.status === 405));
  }
}
