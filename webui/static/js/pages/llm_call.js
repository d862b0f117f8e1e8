// One LLM call: what was asked (every message in full), what came back, and its bookkeeping.

import { agentLink, api, boot, chip, fill, h, loadAgents, pageHref, showError } from "../core.js";

function pretty(text) {
  if (text === null || text === undefined) return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}

function link(path, text) {
  return h("a", { href: pageHref(path), text });
}

function meta(call, agents) {
  const pairs = [
    ["result", call.ok ? chip("ok", "ok") : chip("error", "warn")],
    ["purpose", `${call.purpose}${call.stage && call.stage !== call.purpose ? ` · ${call.stage}` : ""}${call.round ? ` · round ${call.round}` : ""}`],
    ["model", `${call.provider} · ${call.model}`],
    ["schema", call.schema_name || "—"],
    ["latency", `${Math.round(call.latency_ms)} ms${call.streamed ? " (streamed)" : ""}`],
    ["tokens in / out", `${call.prompt_tokens ?? "?"} / ${call.completion_tokens ?? "?"}`],
    ["when", new Date(call.created_at).toLocaleString()],
  ];
  if (call.agent_id) pairs.push(["agent", agentLink(agents, call.agent_id)]);
  if (call.session_id) pairs.push(["conversation", link(`/conversations/${encodeURIComponent(call.session_id)}`, call.session_id)]);
  if (call.council_id) pairs.push(["council", link(`/council/${encodeURIComponent(call.council_id)}`, call.council_id)]);
  if (call.error) pairs.push(["error", h("span", { class: "error-text", text: call.error })]);
  return pairs.flatMap(([k, v]) => [h("dt", { text: k }), h("dd", {}, v)]);
}

function content(message) {
  if (typeof message.content === "string") return message.content;
  return JSON.stringify(message.content, null, 2);
}

async function start() {
  let call;
  try {
    call = await api(`/v1/llm-calls/${boot.call_id}`);
  } catch (err) {
    showError(document.getElementById("call-meta"), err, "call");
    return;
  }
  const agents = await loadAgents().catch(() => new Map());
  fill(document.getElementById("call-meta"), meta(call, agents));
  fill(
    document.getElementById("call-messages"),
    call.messages.map((m) =>
      h("li", { class: `message role-${m.role}` }, h("div", { class: "role", text: m.role }), h("pre", { class: "code", text: content(m) })),
    ),
  );
  const reply = document.getElementById("call-reply");
  reply.textContent = call.raw_reply ? pretty(call.raw_reply) : call.error ? `(no reply) ${call.error}` : "(no reply)";
}

start();
