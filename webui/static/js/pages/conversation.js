// One conversation: the transcript as speech bubbles with emotions, how it ended, and the judge's scores.

import { agentColor, api, boot, caps, chip, debounce, emotionChip, fill, gameTime, h, pageHref, showError } from "../core.js";
import { live } from "../live.js";

const sessionId = boot.session_id;
const path = `/v1/conversations/${encodeURIComponent(sessionId)}`;
let lastKey = "";
let ended = false;

function meta(c) {
  const pairs = [
    ["who", h("span", {}, c.participants.map((p, i) => [i ? " ⇄ " : "",
      h("a", { href: pageHref(`/agents/${encodeURIComponent(p.id)}`), text: p.name || p.id })]))],
    ["where", c.location_name || "—"],
    ["from", gameTime(c.start_day, c.start_time_of_day)],
    ["to", c.ended ? gameTime(c.end_day, c.end_time_of_day) : "ongoing"],
    ["turns", String(c.turn_count)],
    ["end", c.ended ? chip(c.end_reason || "ended", "end") : chip("ongoing", "ok")],
    ["fallbacks", String(c.turns.filter((t) => t.fallback).length)],
    ["reflected", c.reflected ? "yes" : "not yet"],
  ];
  return pairs.flatMap(([k, v]) => [h("dt", { text: k }), h("dd", {}, v)]);
}

function bubble(turn, c) {
  const first = c.participants[0] ? c.participants[0].id : null;
  const name = (c.participants.find((p) => p.id === turn.speaker_id) || {}).name || turn.speaker_id;
  return h(
    "li",
    { class: turn.speaker_id === first ? "turn left" : "turn right", "data-turn": String(turn.turn_index) },
    h("div", { class: "turn-head" },
      h("span", { class: "dot", style: { background: agentColor(turn.speaker_id) } }),
      h("strong", { text: name }),
      emotionChip(turn.emotion),
      turn.fallback ? chip("fallback", "warn") : null,
      turn.end_reason ? chip(`end: ${turn.end_reason}`, "end") : null,
      h("span", { class: "muted small", text: `#${turn.turn_index} · ${gameTime(turn.day, turn.time_of_day)}` })),
    h("p", { class: "turn-text", lang: c.language || "ja", text: turn.dialogue }),
  );
}

async function refresh() {
  let c;
  try {
    c = await api(path);
  } catch (err) {
    showError(document.getElementById("transcript"), err, "conversation");
    return;
  }
  ended = c.ended;
  const key = JSON.stringify([c.turn_count, c.ended, c.reflected]);
  if (key === lastKey) return;
  lastKey = key;
  fill(document.getElementById("conv-meta"), meta(c));
  const transcript = document.getElementById("transcript");
  if (c.turns.length) fill(transcript, c.turns.map((t) => bubble(t, c)));
  else if (c.transcript.length) fill(transcript, c.transcript.map((line) => h("li", { class: "turn", text: line })));
  else fill(transcript, h("li", { class: "muted", text: "No turns yet." }));
}

function renderJudge(verdict) {
  const node = document.getElementById("judge");
  if (!verdict) return;
  const scores = Object.entries(verdict.scores || {});
  fill(
    node,
    h("p", {}, h("strong", { class: "big", text: `${Number(verdict.overall).toFixed(1)} / 10` }), " ",
      chip(verdict.recommended_action || "", verdict.recommended_action === "accept" ? "ok" : "warn")),
    h("ul", { class: "scores" }, scores.map(([criterion, score]) =>
      h("li", { class: "component" },
        h("span", { class: "component-label", text: criterion }),
        h("span", { class: "bar" }, h("span", { class: "bar-fill", style: { width: `${score * 10}%` } })),
        h("span", { class: "component-value", text: String(score) }),
        verdict.reasons && verdict.reasons[criterion] ? h("span", { class: "muted small reason", text: verdict.reasons[criterion] }) : null))),
    h("p", { class: "rationale", text: verdict.rationale || "" }),
  );
}

async function judge(button) {
  button.disabled = true;
  fill(document.getElementById("judge"), h("p", { class: "muted", text: "The judge is reading…" }));
  try {
    renderJudge(await api(`${path}/judge`, { method: "POST", body: {} }));
  } catch (err) {
    showError(document.getElementById("judge"), err, "judge");
  } finally {
    button.disabled = false;
  }
}

async function start() {
  renderJudge(boot.judge);
  const button = document.getElementById("judge-button");
  if (caps.judge) {
    button.hidden = false;
    button.addEventListener("click", () => judge(button));
  }
  await refresh();
  const update = debounce(refresh, 200);
  live()
    .on(["conversation.turn", "conversation.ended"], (p) => {
      if (!p || !p.session_id || p.session_id === sessionId) update();
    })
    .poll(() => (ended ? null : refresh()), 3000)
    .start();
}

start();
