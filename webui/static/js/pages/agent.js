// Agent: persona (server-rendered), emotion radar with history, plan timeline, people, memory stream,
// reflections and the retrieval probe, kept live.

import { agentLink, api, boot, caps, chip, clock, debounce, emotionChip, fill, gameTime, h, isPlayer, listOf, loadAgents, plural, stateChip, visitorBadge } from "../core.js";
import { live } from "../live.js";
import { MemoryTable, renderReflections, setupProbe } from "../memories.js";
import { renderPlan } from "../plan.js";
import { AXES, NEUTRAL_BASELINE, renderAxes, renderRadar } from "../radar.js";

const agentId = boot.agent_id;
const base = `/v1/agents/${encodeURIComponent(agentId)}`;
let detail = null;
let plan = boot.plan;
let pois = new Map();
let agents = new Map();
let emotionKey = "";

async function refreshDetail() {
  if (!caps.agent) return;
  detail = await api(base);
  const parts = [stateChip(detail.state)];
  if (detail.location_name) parts.push(h("span", { text: detail.location_name }));
  if (detail.state_day) parts.push(h("span", { class: "muted", text: gameTime(detail.state_day, detail.state_time_of_day) }));
  if (detail.current_plan_item) parts.push(h("span", { class: "muted", text: `· ${detail.current_plan_item.activity}` }));
  fill(document.getElementById("agent-now"), parts);
  if (!plan && detail.current_plan_item && detail.state_day === boot.day) await refreshPlan();
  else drawPlan();
}

function drawPlan() {
  const now = detail && detail.state_day === boot.day ? detail.state_time_of_day : null;
  renderPlan(document.getElementById("plan"), plan, { now, pois });
}

async function refreshPlan() {
  if (!caps.plan) return;
  try {
    plan = await api(`${base}/plan`, { params: { day: boot.day } });
  } catch (err) {
    if (err.status !== 404) throw err;
  }
  drawPlan();
}

function dominant(values) {
  return AXES.reduce((best, axis) => ((values[axis.key] ?? 0) > (values[best.key] ?? 0) ? axis : best), AXES[0]);
}

async function refreshEmotion() {
  let state = null;
  let history = [];
  if (caps.emotion) state = await api(`${base}/emotion`);
  else if (detail && detail.emotion) state = { ...detail.emotion, evaluated: true };
  if (state && caps.emotion_history) {
    history = listOf(await api(`${base}/emotion/history`, { params: { limit: 30 } }), "history").slice().reverse();
  }
  const key = JSON.stringify([state, history.length]);
  if (key === emotionKey) return;
  emotionKey = key;
  const baseline = !state || state.evaluated === false;
  const values = state ? state.values : NEUTRAL_BASELINE;
  renderRadar(document.getElementById("radar"), values, { baseline });
  renderAxes(document.getElementById("emotion-axes"), values, history);
  const label = document.getElementById("emotion-label");
  const source = document.getElementById("emotion-source");
  if (!state) {
    source.textContent = "neutral baseline: no emotion data yet";
    fill(label, h("span", { class: "emotion-word muted", text: "—" }));
    return;
  }
  source.textContent = baseline
    ? "resting baseline: not evaluated yet"
    : `updated ${gameTime(state.day, state.time_of_day)}${state.cause ? ` · ${state.cause}` : ""}`;
  fill(
    label,
    h("span", { class: "emotion-word", lang: "ja", text: state.label || dominant(values).ja }),
    state.vrm_emotion ? emotionChip(state.vrm_emotion) : null,
  );
}

/** How often they talked and when last: the one count the card shows (interaction_count, conversations). */
function metLine(person) {
  const count = person.interaction_count ?? 0;
  if (count === 0) {
    // Seeded by the town's relationships: known from before, never talked with here yet.
    return h("span", {
      class: "muted small person-met",
      "data-count": "0",
      title: "known when the world began (the town's relationships); no conversation yet",
      text: " · known from before",
    });
  }
  const talks = plural(count, "conversation");
  const last = person.last_met_day ? ` · last day ${person.last_met_day} · ${clock(person.last_met_time_of_day)}` : "";
  return h("span", {
    class: "muted small person-met",
    "data-count": String(count),
    title: "conversations folded into this memory; the summary below is the model's own words",
    text: ` · ${talks}${last}`,
  });
}

function personCard(person) {
  const otherId = person.other_id ?? person.person_id ?? person.target_id ?? person.id;
  const traits = person.traits ?? person.traits_noticed ?? [];
  const notes = person.notes ?? [];
  return h(
    "li",
    { class: "person", "data-person": otherId },
    h("div", { class: "person-head" },
      agents.has(otherId) ? agentLink(agents, otherId)
        : isPlayer(otherId) ? visitorBadge(otherId, person.other_name || person.name)
        : h("strong", { text: person.other_name || person.name || otherId }),
      metLine(person)),
    person.summary ? h("p", { class: "person-summary", text: person.summary }) : null,
    traits.length ? h("div", { class: "meta" }, traits.slice(0, 8).map((t) => chip(String(t), "tag"))) : null,
    notes.length ? h("ul", { class: "notes" }, notes.slice(-3).map((n) => h("li", { class: "small", text: String(n) }))) : null,
  );
}

async function refreshPeople() {
  const node = document.getElementById("people");
  if (!caps.people) {
    fill(node, h("p", { class: "muted", text: "Person memory is not available on this server yet." }));
    return;
  }
  const people = listOf(await api(`${base}/people`), "people");
  if (!people.length) {
    fill(node, h("p", { class: "muted", text: "Nobody yet: people appear after conversations." }));
    return;
  }
  fill(node, h("ul", { class: "people-list" }, people.map(personCard)));
}

async function guarded(fn, nodeId, what) {
  try {
    await fn();
  } catch (err) {
    const node = document.getElementById(nodeId);
    if (node) fill(node, h("p", { class: "error", text: `${what}: ${err.message}` }));
  }
}

async function start() {
  // The probe is wired before anything is awaited, so a query typed while the page loads is never
  // submitted as a plain form GET; a ?query= link (from that fallback or shared) runs at once.
  if (caps.retrieve) setupProbe(agentId, new URLSearchParams(window.location.search));
  const reflections = document.getElementById("reflections");
  const table = caps.memories ? new MemoryTable(agentId) : null;
  [agents, pois] = await Promise.all([
    loadAgents().catch(() => new Map()),
    caps.pois ? api("/v1/pois").then((list) => new Map(listOf(list, "pois").map((p) => [p.id, p]))).catch(() => new Map()) : new Map(),
  ]);
  await Promise.all([
    guarded(refreshDetail, "agent-now", "state"),
    guarded(refreshEmotion, "emotion-axes", "emotion"),
    guarded(refreshPeople, "people", "people"),
    table ? table.refresh() : null,
    caps.memories ? renderReflections(reflections, agentId) : null,
  ]);
  drawPlan();
  const mine = (fn) => (payload) => {
    if (!payload || !payload.agent_id || payload.agent_id === agentId) fn(payload);
  };
  const memories = debounce(() => table && table.refresh(), 200);
  const refl = debounce(() => renderReflections(reflections, agentId), 300);
  live()
    .on(["memory.created", "memory.updated", "memory.evicted"], mine((p) => {
      memories();
      if (p && p.type === "reflection") refl();
    }))
    .on(["reflection.created"], mine(refl))
    .on(["emotion.updated"], mine(debounce(refreshEmotion, 200)))
    .on(["plan.updated"], mine(debounce(refreshPlan, 200)))
    .on(["agent.state"], mine(debounce(refreshDetail, 200)))
    .on(["conversation.ended"], debounce(refreshPeople, 500))
    .poll(() => table && table.refresh(), 3000)
    .poll(refreshEmotion, 3000)
    .poll(refreshDetail, 4000)
    .poll(() => caps.memories && renderReflections(reflections, agentId), 6000)
    .poll(refreshPeople, 10000)
    .start();
}

start();
