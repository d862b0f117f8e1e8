// Shared helpers for the dashboard pages: the boot record, the JSON API client, safe DOM building.
// Every piece of data reaches the page through textContent / attributes, never innerHTML.

const bootNode = document.getElementById("machi-boot");
export const boot = bootNode ? JSON.parse(bootNode.textContent) : { world: "default", caps: {} };
export const caps = boot.caps || {};
export const world = boot.world || "default";

const SVG_NS = "http://www.w3.org/2000/svg";

/** An API failure: `status` is the HTTP status (0 when the server could not be reached). */
export class ApiError extends Error {
  constructor(message, status, data) {
    super(message);
    this.status = status;
    this.data = data;
  }
}

/** Call the JSON API in this page's world (sent as X-Machi-World). Empty params are left out. */
export async function api(path, { method = "GET", body, params } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "" && value !== false) {
      url.searchParams.set(key, String(value));
    }
  }
  const headers = { "X-Machi-World": world, Accept: "application/json" };
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    throw new ApiError(`server unreachable (${err.message})`, 0, null);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = text;
  }
  if (response.status === 401) {
    // The key cookie expired or the key changed: sign in again, then come back here.
    const here = window.location.pathname + window.location.search;
    window.location.assign(`/login?next=${encodeURIComponent(here)}`);
  }
  if (!response.ok) {
    const message = data && data.error ? data.error.message : `HTTP ${response.status}`;
    throw new ApiError(message, response.status, data);
  }
  return data;
}

function applyAttrs(node, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "class") node.setAttribute("class", value);
    else if (key === "style" && typeof value === "object") Object.assign(node.style, value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Build an HTML element: h("a", {href, class, text}, ...children). Strings become text nodes. */
export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  applyAttrs(node, attrs);
  return append(node, children);
}

/** Build an SVG element, same shape as h(). */
export function s(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  applyAttrs(node, attrs);
  return append(node, children);
}

/** Replace a node's children. */
export function fill(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** A link to another dashboard page that stays in this world. */
export function pageHref(path, params = {}) {
  const url = new URL(path, window.location.origin);
  if (world !== "default") url.searchParams.set("world", world);
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, String(value));
  }
  return url.pathname + url.search;
}

/** "1 turn", "2 turns": a count with its noun (`many` for a plural that is not the noun plus "s"). */
export function plural(count, one, many = `${one}s`) {
  return `${count} ${count === 1 ? one : many}`;
}

/** 14.5 -> "14:30". */
export function clock(hours) {
  if (hours === null || hours === undefined || Number.isNaN(Number(hours))) return "–";
  const total = Math.round(Number(hours) * 60) % (24 * 60);
  return `${String(Math.floor(total / 60)).padStart(2, "0")}:${String(total % 60).padStart(2, "0")}`;
}

/** Game time as "day 2 · 14:30". */
export function gameTime(day, hours) {
  if (day === null || day === undefined) return clock(hours);
  return `day ${day} · ${clock(hours)}`;
}

/** "3 min ago" for an ISO timestamp, with the local time as a tooltip via <time>. */
export function ago(iso) {
  if (!iso) return h("span", { class: "muted", text: "–" });
  const when = new Date(iso);
  const seconds = Math.max(0, (Date.now() - when.getTime()) / 1000);
  let text;
  if (seconds < 45) text = "just now";
  else if (seconds < 3600) text = `${Math.round(seconds / 60)} min ago`;
  else if (seconds < 86400) text = `${Math.round(seconds / 3600)} h ago`;
  else text = when.toLocaleDateString();
  return h("time", { datetime: iso, title: when.toLocaleString(), text });
}

/** A stable, calm colour for an agent id. */
export function agentColor(id) {
  let hash = 0;
  for (const ch of String(id)) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return `hsl(${hash % 360} 55% 52%)`;
}

const EMOTION_LABELS = {
  neutral: "neutral",
  happy: "happy",
  angry: "angry",
  sad: "sad",
  relaxed: "relaxed",
  surprised: "surprised",
};

/** A small chip for a VRM expression (happy, sad...). */
export function emotionChip(emotion) {
  const name = EMOTION_LABELS[emotion] ? emotion : "neutral";
  return h("span", { class: `chip emo emo-${name}`, title: "expression", text: emotion || "neutral" });
}

export function chip(text, cls = "") {
  return h("span", { class: `chip ${cls}`.trim(), text });
}

const STATE_LABELS = boot.state_labels || {};

/** The readable label of an agent state id ("wandering_in_poi" -> "散策中"); an unknown id as it is. */
export function stateLabel(state) {
  return STATE_LABELS[state] || state;
}

/** A chip for an agent's state: the label, with the raw id in its title. */
export function stateChip(state) {
  if (!state) return chip("no state reported", "state");
  return h("span", { class: "chip state", title: state, lang: "ja", "data-state": state, text: stateLabel(state) });
}

/** Run fn at most once per `ms`, the last call winning. */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** A short, readable error line inside `node`. */
export function showError(node, err, what) {
  fill(node, h("p", { class: "error", role: "status", text: `${what}: ${err.message || err}` }));
}

/** Lists come bare or wrapped ({"agents": [...]}); take the first array found. */
export function listOf(data, ...keys) {
  if (Array.isArray(data)) return data;
  for (const key of keys) if (data && Array.isArray(data[key])) return data[key];
  return [];
}

/** Agents by id, for turning ids into names. */
export async function loadAgents() {
  if (!caps.agents) return new Map();
  const agents = listOf(await api("/v1/agents"), "agents");
  return new Map(agents.map((agent) => [agent.id, agent]));
}

export function nameOf(agents, id) {
  const agent = agents.get(id);
  return agent ? agent.name : id;
}

/** A link to an agent's page, coloured dot first (`name` when `agents` does not know it). */
export function agentLink(agents, id, name) {
  return h(
    "a",
    { href: pageHref(`/agents/${encodeURIComponent(id)}`), class: "agent-link" },
    h("span", { class: "dot", style: { background: agentColor(id) }, "aria-hidden": "true" }),
    agents.has(id) ? nameOf(agents, id) : name || id,
  );
}

/** What the dashboard calls a visitor (a player: a person at the booth), Japanese first like the states. */
export const VISITOR_LABEL = "来場者";

export function isPlayer(id) {
  return String(id || "").startsWith("player:");
}

/** A visitor: their display name and a 来場者 badge (they have no page of their own; the id is in the title). */
export function visitorBadge(id, name) {
  return h(
    "span",
    { class: "visitor", "data-player": id, title: `visitor · ${id}` },
    h("span", { class: "visitor-name", text: name || String(id).replace(/^player:/, "") }),
    h("span", { class: "chip visitor-chip", lang: "ja", text: VISITOR_LABEL }),
  );
}

/** A conversation participant ({id, name, kind, left}): an agent's link or a visitor's badge, struck through once they left. */
export function participantLabel(agents, p) {
  const player = p.kind === "player" || isPlayer(p.id);
  return h(
    "span",
    { class: p.left ? "participant left" : "participant", "data-participant": p.id, "data-kind": player ? "player" : "agent",
      "data-left": p.left ? "" : null, title: p.left ? "left the conversation" : null },
    player ? visitorBadge(p.id, p.name) : agentLink(agents, p.id, p.name),
  );
}

/** Everyone in a conversation: "A ⇄ B" for two; for a group "A, B, C" and how many they were. */
export function participantList(agents, participants) {
  const group = participants.length > 2;
  return h(
    "span",
    { class: "pair", "data-count": String(participants.length) },
    participants.map((p, i) => [i ? (group ? ", " : " ⇄ ") : "", participantLabel(agents, p)]),
    group ? [" ", chip(`group of ${participants.length}`, "group")] : null,
  );
}
