// Conversations: every session, most recently active first, filterable by agent.

import { agentLink, ago, api, boot, caps, chip, debounce, fill, gameTime, h, listOf, loadAgents, pageHref } from "../core.js";
import { live } from "../live.js";

let agents = new Map();
const select = document.getElementById("conv-agent");
const rows = document.getElementById("conv-rows");

function status(c) {
  if (!c.ended) return chip("ongoing", "ok");
  return chip(`ended · ${c.end_reason || "?"}`, "end");
}

async function refresh() {
  if (!caps.conversations) {
    fill(rows, h("tr", {}, h("td", { colspan: 6, class: "muted", text: "This server has no conversation API yet." })));
    return;
  }
  const list = listOf(await api("/v1/conversations", { params: { agent_id: select.value, limit: 100 } }), "conversations");
  if (!list.length) {
    fill(rows, h("tr", {}, h("td", { colspan: 6, class: "muted", text: "No conversations yet." })));
    return;
  }
  fill(
    rows,
    list.map((c) =>
      h(
        "tr",
        { "data-session": c.session_id },
        h("td", {}, h("span", { class: "pair" }, c.participants.map((p, i) => [i ? " ⇄ " : "", agentLink(agents, p.id)]))),
        h("td", { text: c.location_name || "—" }),
        h("td", { class: "when", text: gameTime(c.start_day, c.start_time_of_day) }),
        h("td", { class: "num" }, h("a", { href: pageHref(`/conversations/${encodeURIComponent(c.session_id)}`), text: `${c.turn_count} turns` })),
        h("td", {}, status(c)),
        h("td", {}, ago(c.updated_at)),
      ),
    ),
  );
}

async function start() {
  agents = await loadAgents().catch(() => new Map());
  for (const agent of agents.values()) select.append(h("option", { value: agent.id, text: agent.name }));
  if (boot.agent_id) select.value = boot.agent_id;
  select.addEventListener("change", () => {
    const url = new URL(window.location.href);
    if (select.value) url.searchParams.set("agent_id", select.value);
    else url.searchParams.delete("agent_id");
    window.history.replaceState(null, "", url);
    refresh();
  });
  await refresh().catch((err) => fill(rows, h("tr", {}, h("td", { colspan: 6, class: "error", text: err.message }))));
  live().on(["conversation.turn", "conversation.ended"], debounce(refresh, 300)).poll(refresh, 4000).start();
}

start();
