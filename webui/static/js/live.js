// Live updates: the /v1/events WebSocket when the server has it, polling otherwise.
// Pages register handlers for event types (run at once when an event arrives) and refresh functions (run
// on a timer). While the socket is open the timers slow down to a safety net, not off: a concept that does
// not publish an event for some change yet still shows up, just later.

import { boot, caps, world } from "./core.js";

const RETRY_MIN_MS = 2000;
const RETRY_MAX_MS = 30000;
/** With the socket open, refreshes run this many times less often (and at least this far apart). */
const SOCKET_SLOWDOWN = 3;
const SOCKET_MIN_POLL_MS = 9000;

export class Live {
  constructor() {
    this.handlers = [];
    this.pollers = [];
    this.socket = null;
    this.retryMs = RETRY_MIN_MS;
    this.statusNode = document.getElementById("live-status");
  }

  /** Call fn(payload, type) for events whose type is in `types` (e.g. ["memory.created"]). */
  on(types, fn) {
    this.handlers.push({ types: new Set(types), fn });
    return this;
  }

  /** Call fn every `ms` (slower while the event stream is open, and once when it (re)opens). */
  poll(fn, ms) {
    this.pollers.push({ fn, ms, timer: null });
    return this;
  }

  start() {
    if (caps.events && "WebSocket" in window) this.connect();
    else this.startPolling();
    return this;
  }

  setStatus(mode, text) {
    if (!this.statusNode) return;
    this.statusNode.dataset.mode = mode;
    this.statusNode.textContent = text;
  }

  startPolling(slow = false) {
    if (!slow) {
      const seconds = Math.min(...this.pollers.map((p) => p.ms), 60000) / 1000;
      this.setStatus("polling", this.pollers.length ? `live · polling ${seconds} s` : "static");
    }
    for (const poller of this.pollers) {
      clearInterval(poller.timer);
      const ms = slow ? Math.max(poller.ms * SOCKET_SLOWDOWN, SOCKET_MIN_POLL_MS) : poller.ms;
      poller.timer = setInterval(() => this.safely(poller.fn), ms);
    }
  }

  async safely(fn, ...args) {
    try {
      await fn(...args);
    } catch (err) {
      // A failed refresh keeps the last good view; the next event or tick tries again.
      console.warn("refresh failed:", err.message || err);
    }
  }

  connect() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const url = `${scheme}://${window.location.host}/v1/events?world=${encodeURIComponent(world)}`;
    let socket;
    try {
      socket = new WebSocket(url);
    } catch {
      this.startPolling();
      return;
    }
    this.socket = socket;
    socket.addEventListener("open", () => {
      this.retryMs = RETRY_MIN_MS;
      this.startPolling(true);
      this.setStatus("socket", "live · WebSocket");
      // Catch up on whatever happened while the socket was down.
      for (const poller of this.pollers) this.safely(poller.fn);
    });
    socket.addEventListener("message", (message) => this.dispatch(message.data));
    socket.addEventListener("close", () => {
      this.socket = null;
      this.startPolling();
      setTimeout(() => this.connect(), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
    });
  }

  dispatch(raw) {
    let event;
    try {
      event = JSON.parse(raw);
    } catch {
      return;
    }
    if (!event || typeof event !== "object") return;
    const type = event.type ?? event.event ?? event.name ?? event.topic;
    const eventWorld = event.world ?? event.world_id;
    if (!type || (eventWorld && eventWorld !== world)) return;
    const payload = event.payload ?? event.data ?? event;
    for (const handler of this.handlers) {
      if (handler.types.has(type) || handler.types.has("*")) this.safely(handler.fn, payload, type);
    }
  }
}

export function live() {
  return new Live();
}

export { boot };
