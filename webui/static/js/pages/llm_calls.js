// LLM calls: the trace, newest first, filtered by purpose, agent and errors only.

import { agentLink, ago, api, boot, caps, chip, debounce, fill, h, loadAgents, pageHref } from "../core.js";
import { live } from "../live.js";

const PAGE = 50;
const filters = boot.filters || {};
const rows = document.getElementById("call-rows");
const more = document.getElementById("calls-more");
let agents = new Map();
let shown = PAGE;
const purposes = new Set();

function tokens(call) {
  if (call.prompt_tokens === null && call.completion_tokens === null) return "–";
  return `${call.prompt_tokens ?? "?"} / ${call.completion_tokens ?? "?"}`;
}

function row(call, slowest) {
  const href = pageHref(`/llm-calls/${call.id}`);
  return h(
    "tr",
    { class: call.ok ? "" : "failed", "data-call": String(call.id) },
    h("td", { class: "num" }, h("a", { href, text: `#${call.id}` })),
    h("td", {}, ago(call.created_at)),
    h("td", {}, h("a", { href, text: call.purpose }),
      call.stage && call.stage !== call.purpose ? h("span", { class: "muted small", text: ` ${call.stage}` }) : null,
      call.round ? h("span", { class: "muted small", text: ` round ${call.round}` }) : null,
      call.streamed ? chip("stream") : null),
    h("td", {}, call.agent_id ? agentLink(agents, call.agent_id) : h("span", { class: "muted", text: "—" })),
    h("td", { class: "small", text: call.model }),
    h("td", {}, call.ok ? chip("ok", "ok") : h("span", {}, chip("error", "warn"), h("span", { class: "small error-text", text: ` ${(call.error || "").slice(0, 120)}` }))),
    h("td", { class: "latency" },
      h("span", { class: "bar" }, h("span", { class: "bar-fill", style: { width: `${Math.min(100, (call.latency_ms / slowest) * 100)}%` } })),
      h("span", { class: "num", text: `${Math.round(call.latency_ms)} ms` })),
    h("td", { class: "num", text: tokens(call) }),
  );
}

async function refresh() {
  if (!caps.llm_calls) return;
  const data = await api("/v1/llm-calls", {
    params: { purpose: filters.purpose, agent_id: filters.agent_id, errors_only: filters.errors_only ? "true" : "", limit: shown },
  });
  const calls = data.calls;
  for (const call of calls) {
    if (!purposes.has(call.purpose)) {
      purposes.add(call.purpose);
      document.getElementById("purposes").append(h("option", { value: call.purpose }));
    }
  }
  more.hidden = calls.length < shown;
  const failed = calls.filter((c) => !c.ok).length;
  document.getElementById("calls-summary").textContent = `${calls.length} shown · ${failed} failed`;
  if (!calls.length) {
    fill(rows, h("tr", {}, h("td", { colspan: 8, class: "muted", text: "No calls match." })));
    return;
  }
  const slowest = Math.max(...calls.map((c) => c.latency_ms), 1);
  fill(rows, calls.map((c) => row(c, slowest)));
}

async function start() {
  agents = await loadAgents().catch(() => new Map());
  const select = document.getElementById("f-agent");
  for (const agent of agents.values()) {
    if (agent.id !== filters.agent_id) select.append(h("option", { value: agent.id, text: agent.name }));
  }
  more.addEventListener("click", () => {
    shown = Math.min(shown + PAGE, 500);
    refresh();
  });
  await refresh().catch((err) => fill(rows, h("tr", {}, h("td", { colspan: 8, class: "error", text: err.message }))));
  live().on(["llm.call"], debounce(refresh, 500)).poll(refresh, 3000).start();
}

start();
