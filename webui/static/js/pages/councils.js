// Council: the decision records, newest first.

import { agentLink, ago, api, caps, chip, debounce, fill, h, listOf, loadAgents, pageHref } from "../core.js";
import { live } from "../live.js";
import { outcomeChip, statusChip } from "../council_parts.js";

const rows = document.getElementById("council-rows");
let agents = new Map();

async function refresh() {
  if (!caps.councils) {
    fill(rows, h("tr", {}, h("td", { colspan: 7, class: "muted", text: "This server has no council API yet." })));
    return;
  }
  const list = listOf(await api("/v1/council", { params: { limit: 100 } }), "councils");
  if (!list.length) {
    fill(rows, h("tr", {}, h("td", { colspan: 7, class: "muted", text: "No council has met yet (POST /v1/council or `machi council \"topic\"`)." })));
    return;
  }
  fill(
    rows,
    list.map((c) =>
      h(
        "tr",
        { "data-council": c.id },
        h("td", { class: "num", text: c.label || `No.${String(c.number).padStart(3, "0")}` }),
        h("td", {}, h("a", { href: pageHref(`/council/${encodeURIComponent(c.id)}`), text: c.title })),
        h("td", { text: c.category || "—" }),
        h("td", {}, c.members.map((id, i) => [i ? ", " : "", agentLink(agents, id)])),
        h("td", {}, statusChip(c.status)),
        h("td", {}, c.outcome ? outcomeChip(c.outcome) : chip("—")),
        h("td", {}, ago(c.updated_at)),
      ),
    ),
  );
}

async function start() {
  agents = await loadAgents().catch(() => new Map());
  await refresh().catch((err) => fill(rows, h("tr", {}, h("td", { colspan: 7, class: "error", text: err.message }))));
  live().on(["council.updated"], debounce(refresh, 300)).poll(refresh, 5000).start();
}

start();
