// Town: the map, the roster, the model's status and a live feed of conversation lines.

import {
  agentColor, agentLink, ago, api, caps, chip, debounce, emotionChip, fill, gameTime, h, isPlayer, listOf, pageHref, plural,
  showError, stateLabel, visitorBadge,
} from "../core.js";
import { live } from "../live.js";
import { renderMap } from "../map.js";

const FEED_CONVERSATIONS = 6;
const FEED_LINES = 40;
const CALL_WINDOW = 100;
const VISITORS_SHOWN = 8;

let agents = new Map();
let fallbacks = 0;

async function refreshTown() {
  const [agentList, pois] = await Promise.all([
    caps.agents ? api("/v1/agents") : [],
    caps.pois ? api("/v1/pois") : [],
  ]);
  agents = new Map(listOf(agentList, "agents").map((a) => [a.id, a]));
  const places = listOf(pois, "pois");
  const notice = document.getElementById("world-notice");
  if (notice && (agents.size || places.length)) notice.hidden = true;  // the world began while we watched
  renderMap(document.getElementById("town-map"), places, Array.from(agents.values()));
  const roster = document.getElementById("roster");
  if (!agents.size) {
    fill(roster, h("li", { class: "muted", text: "No agents in this world yet (PUT /v1/agents/{id})." }));
    return;
  }
  fill(
    roster,
    Array.from(agents.values()).map((agent) =>
      h(
        "li",
        { class: "roster-item", "data-agent": agent.id },
        h("a", { href: pageHref(`/agents/${encodeURIComponent(agent.id)}`) },
          h("span", { class: "avatar small", style: { background: agentColor(agent.id) }, text: Array.from(agent.name)[0] || "?" }),
          h("span", { class: "roster-name", text: agent.name })),
        h("span", { class: "muted small roster-state", title: agent.state || null, "data-state": agent.state || null,
          text: [stateLabel(agent.state), agent.location_name].filter(Boolean).join(" · ") || "no state yet" }),
      ),
    ),
  );
}

/** A participant's display name in a conversation (an agent's, or a visitor's). */
function nameIn(conversation, id) {
  return agents.get(id)?.name || conversation.participants.find((p) => p.id === id)?.name || id;
}

function feedLine(turn, conversation) {
  const speaker = turn.speaker_id;
  return h(
    "li",
    { class: "feed-line", "data-session": conversation.session_id },
    h("div", { class: "feed-who" },
      isPlayer(speaker) ? visitorBadge(speaker, nameIn(conversation, speaker)) : agentLink(agents, speaker),
      h("span", { class: "muted small", text: " → " }),
      h("span", { class: "muted small", text: nameIn(conversation, turn.target_id) }),
      emotionChip(turn.emotion),
      turn.fallback ? chip("fallback", "warn") : null,
      turn.end_reason ? chip(`ended: ${turn.end_reason}`, "end") : null),
    h("p", { class: "feed-text", lang: conversation.language || "ja", text: turn.dialogue }),
    h("a", { class: "muted small", href: pageHref(`/conversations/${encodeURIComponent(conversation.session_id)}`),
      text: `${conversation.location_name || "somewhere"} · ${gameTime(turn.day, turn.time_of_day)}` }),
  );
}

async function refreshFeed() {
  const feed = document.getElementById("feed");
  if (!caps.conversations) {
    fill(feed, h("li", { class: "muted", text: "This server has no conversation API yet." }));
    return;
  }
  const list = listOf(await api("/v1/conversations", { params: { limit: FEED_CONVERSATIONS } }), "conversations");
  const details = await Promise.all(list.map((c) => api(`/v1/conversations/${encodeURIComponent(c.session_id)}`)));
  const lines = details.flatMap((c) => c.turns.map((turn) => ({ turn, conversation: c })));
  fallbacks = lines.filter((l) => l.turn.fallback).length;
  lines.sort((a, b) => (b.turn.created_at || "").localeCompare(a.turn.created_at || "") || b.turn.turn_index - a.turn.turn_index);
  if (!lines.length) {
    fill(feed, h("li", { class: "muted", text: "Nobody has talked yet. Lines appear here as Unity asks for turns." }));
    return;
  }
  fill(feed, lines.slice(0, FEED_LINES).map((l) => feedLine(l.turn, l.conversation)));
}

/** The visitors (players) Unity registered or who spoke: name, lines said, when last seen. */
async function refreshVisitors() {
  const card = document.getElementById("visitors-card");
  card.hidden = !caps.players;
  if (!caps.players) return;
  const players = listOf(await api("/v1/players"), "players");
  const node = document.getElementById("visitors");
  if (!players.length) {
    fill(node, h("li", { class: "muted", text: "No visitors yet (Unity registers them with PUT /v1/players/{id})." }));
    return;
  }
  fill(
    node,
    players.slice(0, VISITORS_SHOWN).map((p) =>
      h("li", { class: "visitor-row", "data-player": p.id },
        visitorBadge(p.id, p.display_name),
        h("span", { class: "muted small visitor-lines", text: `${p.lines} line${p.lines === 1 ? "" : "s"} · ` }),
        h("span", { class: "muted small" }, ago(p.last_seen_at)))),
    players.length > VISITORS_SHOWN ? h("li", { class: "muted small", text: `and ${players.length - VISITORS_SHOWN} more` }) : null,
  );
}

function percentile(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function refreshStatus() {
  const node = document.getElementById("llm-status");
  const [health, calls] = await Promise.all([
    api("/health"),
    caps.llm_calls ? api("/v1/llm-calls", { params: { limit: CALL_WINDOW } }) : { calls: [] },
  ]);
  const recent = calls.calls;
  const latencies = recent.filter((c) => c.ok).map((c) => c.latency_ms).sort((a, b) => a - b);
  const errors = recent.filter((c) => !c.ok).length;
  const p50 = percentile(latencies, 50);
  const p95 = percentile(latencies, 95);
  const reach = health.llm_reachable === false ? "unreachable" : health.llm_reachable ? "reachable" : "checking";
  const rows = [
    ["provider", h("span", {}, `${health.llm_provider} `, chip(reach, health.llm_reachable === false ? "warn" : "ok"))],
    ["model", health.llm_model],
    ["background tasks", String(health.background_tasks ?? 0)],
    ["latency p50 / p95", p50 === null ? "–" : `${Math.round(p50)} / ${Math.round(p95)} ms`],
    ["errors", `${errors} in the last ${plural(recent.length, "call")}`],
    ["fallback lines", `${fallbacks} in recent conversations`],
    ["last call", recent.length ? h("span", {}, `${recent[0].purpose} · `, ago(recent[0].created_at)) : "none yet"],
  ];
  fill(node, rows.flatMap(([label, value]) => [h("dt", { text: label }), h("dd", {}, value)]));
}

async function start() {
  try {
    await refreshTown();
  } catch (err) {
    showError(document.getElementById("roster"), err, "agents");
  }
  try {
    await refreshFeed();
  } catch (err) {
    showError(document.getElementById("feed"), err, "conversations");
  }
  try {
    await refreshStatus();
  } catch (err) {
    showError(document.getElementById("llm-status"), err, "status");
  }
  await refreshVisitors().catch((err) => showError(document.getElementById("visitors"), err, "visitors"));
  const town = debounce(refreshTown, 300);
  const feed = debounce(refreshFeed, 300);
  const status = debounce(refreshStatus, 1000);
  const visitors = debounce(refreshVisitors, 1000);
  live()
    .on(["agent.state"], town)
    .on(["conversation.turn", "conversation.ended"], () => {
      feed();
      town();
      status();
      visitors();
    })
    .on(["llm.call"], status)
    .poll(refreshTown, 3000)
    .poll(refreshFeed, 3000)
    .poll(refreshStatus, 5000)
    .poll(refreshVisitors, 5000)
    .start();
}

start();
