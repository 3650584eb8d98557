// Live tail: the search's query and filters as a stream from GET /v1/tail (server-sent
// events; an EventSource sends the session cookie). Newest line on top, at most `cap`
// lines kept in the page, a pause that holds (at most `cap`) new lines, and a rate.
// `show(records, cap)` draws a frame's new lines (newest first) and keeps the newest
// `cap` of all (the search page's virtualised list).
import { MAX_WAITS, sessionEnded, url, waitOut } from "./api.js";
import { formatCount, h } from "./dom.js";

export const DEFAULT_CAP = 1000;
const RATE_WINDOW_MS = 5000;

export class LiveTail {
  constructor({ status, params, show, onDrawn = () => {}, cap = DEFAULT_CAP }) {
    this.show = show; // (records newest first, cap) -> void
    this.onDrawn = onDrawn; // after each frame's lines are drawn
    this.cap = cap;
    this.pending = []; // arrived, not yet drawn
    this.held = []; // arrived while paused
    this.arrivals = []; // arrival times within the rate window
    this.dropped = 0;
    this.paused = false;
    this.frame = 0;
    this.rateText = h("span", { class: "rate", testid: "tail-rate" }, "0 lines/s");
    this.stateText = h("span", { class: "state" }, "connecting…");
    this.pauseButton = h("button", { type: "button", testid: "tail-pause", onclick: () => this.togglePause() }, "Pause");
    status.replaceChildren(
      h("span", { class: "live-dot" }),
      this.stateText,
      this.rateText,
      this.pauseButton,
      h("span", { class: "muted" }, `keeps the newest ${formatCount(cap)} lines`),
    );
    this.params = params;
    this.closed = false;
    this.reopens = 0; // in a row, since the stream was last live
    this.probe = null;
    this.open();
    this.timer = setInterval(() => this.showRate(), 1000);
  }

  open() {
    const source = new EventSource(url("/v1/tail", this.params), { withCredentials: true });
    this.source = source;
    source.addEventListener("ready", () => {
      this.reopens = 0;
      this.setState("live");
    });
    source.addEventListener("message", (event) => this.arrive(JSON.parse(event.data)));
    source.addEventListener("dropped", (event) => {
      this.dropped += JSON.parse(event.data).dropped || 0;
      this.setState("live");
    });
    source.addEventListener("error", (event) => {
      if (event.data) {
        // The server's own `event: error`: it ends the stream; do not reconnect.
        let text = event.data;
        try {
          text = JSON.parse(event.data).error || text;
        } catch {
          /* shown as sent */
        }
        this.close();
        this.setState(`stopped: ${text}`);
      } else if (source.readyState === EventSource.CLOSED) {
        this.explain();
      } else {
        this.setState("reconnecting…");
      }
    });
  }

  // An EventSource does not say why it could not open (a 429, a query the server
  // refuses, a session that ended), so the same address is asked once with fetch: a 429
  // is waited out (the page says until when) and the stream opened again, as it is when
  // the stream opens now; anything else is shown as the server said it. At most
  // MAX_WAITS times in a row.
  async explain() {
    if (this.closed) return;
    if (this.reopens >= MAX_WAITS) {
      this.setState("stopped: the stream could not be opened");
      return;
    }
    this.reopens += 1;
    const probe = new AbortController();
    this.probe = probe;
    try {
      const response = await fetch(url("/v1/tail", this.params), {
        credentials: "same-origin",
        headers: { Accept: "text/event-stream" },
        signal: probe.signal,
      });
      if (response.status === 429) {
        this.setState("waiting: too many requests");
        if (!(await waitOut(response, probe.signal))) {
          this.setState(`stopped: ${await reason(response)}`);
          return;
        }
      } else if (!response.ok) {
        this.setState(`stopped: ${await reason(response)}`);
        if (response.status === 401) sessionEnded(); // to the sign-in page, as elsewhere
        return;
      }
      probe.abort(); // the stream it opened (the EventSource opens its own)
    } catch {
      if (!this.closed) this.setState("stopped: the stream could not be opened");
      return;
    }
    if (this.closed) return;
    this.setState("connecting…");
    this.open();
  }

  setState(text) {
    const dropped = this.dropped ? ` · ${formatCount(this.dropped)} lines dropped (too fast)` : "";
    this.stateText.textContent = text + dropped;
  }

  arrive(record) {
    this.arrivals.push(performance.now());
    if (this.paused) {
      this.held.push(record);
      if (this.held.length > this.cap) this.held.splice(0, this.held.length - this.cap);
      this.pauseButton.textContent = `Resume (${formatCount(this.held.length)} new)`;
      return;
    }
    this.pending.push(record);
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  flush() {
    this.frame = 0;
    const batch = this.pending.splice(0).slice(-this.cap);
    this.show(batch.reverse(), this.cap);
    this.onDrawn();
  }

  showRate() {
    const since = performance.now() - RATE_WINDOW_MS;
    while (this.arrivals.length && this.arrivals[0] < since) this.arrivals.shift();
    const rate = this.arrivals.length / (RATE_WINDOW_MS / 1000);
    this.rateText.textContent = `${rate < 10 ? rate.toFixed(1) : Math.round(rate)} lines/s`;
  }

  togglePause() {
    this.paused = !this.paused;
    if (!this.paused) {
      this.pending.push(...this.held.splice(0));
      this.flush();
    }
    this.pauseButton.textContent = this.paused ? "Resume (0 new)" : "Pause";
  }

  close() {
    this.closed = true;
    this.source.close();
    if (this.probe) this.probe.abort();
    clearInterval(this.timer);
    if (this.frame) cancelAnimationFrame(this.frame);
  }
}

// What a refused request's body says (the v1 error shape), or its status.
async function reason(response) {
  try {
    const body = await response.json();
    return body.error || body.message || `HTTP ${response.status}`;
  } catch {
    return `HTTP ${response.status}`;
  }
}
