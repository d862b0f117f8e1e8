// One conversation: the transcript as speech bubbles with emotions, how it ended, and the judge's scores.

import {
  agentColor, api, boot, caps, chip, debounce, emotionChip, fill, gameTime, h, participantList, showError, VISITOR_LABEL,
} from "../core.js";
import { live } from "../live.js";

const sessionId = boot.session_id;
const path = `/v1/conversations/${encodeURIComponent(sessionId)}`;
let lastKey = "";
let ended = false;

function meta(c) {
  const pairs = [
    ["who", participantList(new Map(), c.participants)],
    ["where", c.location_name || "—"],
    ["from", gameTime(c.start_day, c.start_time_of_day)],
    ["to", c.ended ? gameTime(c.end_day, c.end_time_of_day) : "ongoing"],
    ["turns", lineCount(c)],
    ["end", c.ended ? chip(c.end_reason || "ended", "end") : chip("ongoing", "ok")],
    ["fallbacks", String(c.turns.filter((t) => t.fallback).length)],
    ["held back", String(c.turns.filter((t) => t.moderation).length)],
    ["reflected", c.reflected ? "yes" : "not yet"],
  ];
  return pairs.flatMap(([k, v]) => [h("dt", { text: k }), h("dd", {}, v)]);
}

/** "5" or "5 · 2 relayed from Unity": every line is a bubble, so the count and the bubbles agree. */
function lineCount(c) {
  const lines = transcriptRows(c);
  const relayed = lines.filter((row) => !row.turn).length;
  return relayed ? `${lines.length} · ${relayed} relayed from Unity` : String(lines.length);
}

/**
 * Every line of the conversation in order: the stored transcript ("Name: line", the history Unity sent plus
 * the latest reply) with the server's turns at their index. A line with no server turn was relayed by Unity.
 */
function transcriptRows(c) {
  const turns = new Map(c.turns.map((t) => [t.turn_index, t]));
  const length = Math.max(c.transcript.length, ...c.turns.map((t) => t.turn_index + 1));
  return Array.from({ length }, (_, i) => ({ index: i, turn: turns.get(i), line: c.transcript[i] }));
}

/** A relayed "Name: line": the participant whose name (or id) prefixes it, and the spoken text. */
function relayedSpeaker(line, c) {
  const match = /^([^:：]{1,100})[:：]\s?([\s\S]*)$/.exec(line || "");
  if (!match) return { who: null, name: "", text: line || "" };
  const who = c.participants.find((p) => p.name === match[1].trim() || p.id === match[1].trim());
  return { who, name: match[1].trim(), text: match[2] };
}

function side(speakerId, c) {
  const first = c.participants[0] ? c.participants[0].id : null;
  return speakerId === first ? "left" : "right";
}

const HELD_BACK = {
  line: "moderation held back the visitor's line: a neutral marker was stored instead of what was typed",
  reply: "moderation held back the model's reply: the character said a deflection instead",
};

/** What moderation held back in a turn: its stage, source and category only (never the text it held back). */
function heldBackChip(moderation) {
  if (!moderation) return null;
  const stage = String(moderation.stage || "?");
  const parts = [stage, moderation.source, moderation.category].filter(Boolean).map(String);
  return h("span", { class: "chip warn held-back", "data-moderation": stage, title: HELD_BACK[stage] || "moderation held this back",
    text: `held back · ${parts.join(" · ")}` });
}

function bubble(turn, c) {
  const speaker = c.participants.find((p) => p.id === turn.speaker_id) || {};
  return h(
    "li",
    { class: `turn ${side(turn.speaker_id, c)}${turn.moderation ? " held" : ""}`, "data-turn": String(turn.turn_index),
      "data-speaker-kind": speaker.kind || "agent" },
    h("div", { class: "turn-head" },
      h("span", { class: "dot", style: { background: agentColor(turn.speaker_id) } }),
      h("strong", { text: speaker.name || turn.speaker_id }),
      speaker.kind === "player" ? h("span", { class: "chip visitor-chip", lang: "ja", title: `visitor · ${turn.speaker_id}`, text: VISITOR_LABEL }) : null,
      heldBackChip(turn.moderation),
      emotionChip(turn.emotion),
      turn.fallback ? chip("fallback", "warn") : null,
      turn.end_reason ? chip(`end: ${turn.end_reason}`, "end") : null,
      h("span", { class: "muted small", text: `#${turn.turn_index} · ${gameTime(turn.day, turn.time_of_day)}` })),
    h("p", { class: "turn-text", lang: c.language || "ja", text: turn.dialogue }),
  );
}

/** A line Unity sent in `history` that this server did not answer (no emotion, no time of its own). */
function relayedBubble(index, line, c) {
  const { who, name, text } = relayedSpeaker(line, c);
  return h(
    "li",
    { class: `turn relayed ${who ? side(who.id, c) : "left"}`, "data-turn": String(index), "data-relayed": "" },
    h("div", { class: "turn-head" },
      who ? h("span", { class: "dot", style: { background: agentColor(who.id) } }) : null,
      h("strong", { text: who ? who.name || who.id : name || "?" }),
      h("span", { class: "chip relayed", title: "sent by Unity in the turn's history; not a turn this server answered",
        text: "relayed" }),
      h("span", { class: "muted small", text: `#${index}` })),
    h("p", { class: "turn-text", lang: c.language || "ja", text }),
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
  const key = JSON.stringify([c.turn_count, c.transcript.length, c.ended, c.reflected]);
  if (key === lastKey) return;
  lastKey = key;
  fill(document.getElementById("conv-meta"), meta(c));
  const transcript = document.getElementById("transcript");
  const rows = transcriptRows(c);
  if (rows.length) fill(transcript, rows.map((r) => (r.turn ? bubble(r.turn, c) : relayedBubble(r.index, r.line, c))));
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
