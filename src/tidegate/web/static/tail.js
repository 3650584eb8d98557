// Live tail: the search's query and filters as a stream from GET /v1/tail (server-sent
// events; an EventSource sends the session cookie). Newest line on top, at most `cap`
// lines kept in the page, a pause that holds (at most `cap`) new lines, and a rate.
// `show(records, cap)` draws a frame's new lines (newest first) and keeps the newest
// `cap` of all (the search page's virtualised list).
import { url } from "./api.js";
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
    this.source = new EventSource(url("/v1/tail", params), { withCredentials: true });
    this.source.addEventListener("ready", () => this.setState("live"));
    this.source.addEventListener("message", (event) => this.arrive(JSON.parse(event.data)));
    this.source.addEventListener("dropped", (event) => {
      this.dropped += JSON.parse(event.data).dropped || 0;
      this.setState("live");
    });
    this.source.addEventListener("error", (event) => {
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
      } else if (this.source.readyState === EventSource.CLOSED) {
        this.setState("stopped: the stream could not be opened");
      } else {
        this.setState("reconnecting…");
      }
    });
    this.timer = setInterval(() => this.showRate(), 1000);
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
    this.source.close();
    clearInterval(this.timer);
    if (this.frame) cancelAnimationFrame(this.frame);
  }
}
