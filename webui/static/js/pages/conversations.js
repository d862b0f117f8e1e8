// Conversations: every session, most recently active first, filterable by agent and by visitors.

import { ago, api, boot, caps, chip, debounce, fill, gameTime, h, listOf, loadAgents, pageHref, participantList, plural } from "../core.js";
import { live } from "../live.js";

let agents = new Map();
const select = document.getElementById("conv-agent");
const visitorsOnly = document.getElementById("conv-visitors");
const rows = document.getElementById("conv-rows");

function status(c) {
  if (!c.ended) return chip("ongoing", "ok");
  return chip(`ended · ${c.end_reason || "?"}`, "end");
}

function hasVisitor(c) {
  return c.participants.some((p) => p.kind === "player");
}

function message(text, cls = "muted") {
  return h("tr", {}, h("td", { colspan: 6, class: cls, text }));
}

async function refresh() {
  if (!caps.conversations) {
    fill(rows, message("This server has no conversation API yet."));
    return;
  }
  // Visitors only: a wider window, since the filter runs here on what the API returned.
  const params = { agent_id: select.value, limit: visitorsOnly.checked ? 500 : 100 };
  let list = listOf(await api("/v1/conversations", { params }), "conversations");
  if (visitorsOnly.checked) list = list.filter(hasVisitor);
  if (!list.length) {
    fill(rows, message(visitorsOnly.checked ? "No conversations with a visitor yet." : "No conversations yet."));
    return;
  }
  fill(
    rows,
    list.map((c) =>
      h(
        "tr",
        { "data-session": c.session_id, "data-visitor": hasVisitor(c) ? "" : null },
        h("td", {}, participantList(agents, c.participants)),
        h("td", { text: c.location_name || "—" }),
        h("td", { class: "when", text: gameTime(c.start_day, c.start_time_of_day) }),
        h("td", { class: "num" }, h("a", { href: pageHref(`/conversations/${encodeURIComponent(c.session_id)}`), text: plural(c.turn_count, "turn") })),
        h("td", {}, status(c)),
        h("td", {}, ago(c.updated_at)),
      ),
    ),
  );
}

/** Keep the filters in the address, so a reload or a shared link shows the same list. */
function remember() {
  const url = new URL(window.location.href);
  if (select.value) url.searchParams.set("agent_id", select.value);
  else url.searchParams.delete("agent_id");
  if (visitorsOnly.checked) url.searchParams.set("visitors", "1");
  else url.searchParams.delete("visitors");
  window.history.replaceState(null, "", url);
  refresh();
}

async function start() {
  agents = await loadAgents().catch(() => new Map());
  for (const agent of agents.values()) select.append(h("option", { value: agent.id, text: agent.name }));
  if (boot.agent_id) select.value = boot.agent_id;
  visitorsOnly.checked = Boolean(boot.visitors);
  select.addEventListener("change", remember);
  visitorsOnly.addEventListener("change", remember);
  await refresh().catch((err) => fill(rows, message(err.message, "error")));
  live().on(["conversation.turn", "conversation.ended"], debounce(refresh, 300)).poll(refresh, 4000).start();
}

start();
