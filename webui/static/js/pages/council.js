// One council record: the proposal, each round with the members side by side, the aggregation, the
// moderator's consensus and the outcome. Follows a running council live.

import { agentColor, api, boot, caps, chip, debounce, fill, h, pageHref, showError } from "../core.js";
import { live } from "../live.js";
import { outcomeChip, stanceChip, statusChip } from "../council_parts.js";

const councilId = boot.council_id;
let lastKey = "";
let finished = false;

function bullets(title, items, cls = "") {
  if (!items || !items.length) return null;
  return h("div", { class: `bullets ${cls}` }, h("h4", { text: title }), h("ul", {}, items.map((t) => h("li", { text: String(t) }))));
}

function head(c) {
  const record = c.record || {};
  return [
    h("div", { class: "council-title" },
      h("span", { class: "council-no", text: c.label }),
      h("h2", { text: c.title }),
      statusChip(c.status),
      c.outcome ? outcomeChip(c.outcome) : null),
    h("dl", { class: "stats inline" },
      h("dt", { text: "category" }), h("dd", { text: c.category || "—" }),
      h("dt", { text: "proposer" }), h("dd", { text: c.proposer || "—" }),
      h("dt", { text: "moderator" }), h("dd", { text: (record.moderator && record.moderator.name) || c.moderator || "—" }),
      h("dt", { text: "rounds" }), h("dd", { text: `${(record.rounds || []).length} of ${c.rounds}${record.early_stop ? " (stopped early: unanimous)" : ""}` }),
      h("dt", { text: "stage" }), h("dd", { text: record.stage || c.status })),
    c.background ? h("div", { class: "proposal" }, h("h4", { text: "background" }), h("p", { text: c.background })) : null,
    c.expected_effects ? h("div", { class: "proposal" }, h("h4", { text: "expected effects" }), h("p", { text: c.expected_effects })) : null,
    c.error ? h("p", { class: "error", text: c.error }) : null,
  ];
}

function memberCard(opinion) {
  return h(
    "article",
    { class: "member", "data-member": opinion.agent_id },
    h("header", {},
      h("span", { class: "dot", style: { background: agentColor(opinion.agent_id) } }),
      h("a", { href: pageHref(`/agents/${encodeURIComponent(opinion.agent_id)}`), text: opinion.name || opinion.agent_id }),
      stanceChip(opinion.stance)),
    opinion.opinion ? h("p", { class: "opinion", text: opinion.opinion }) : null,
    opinion.error ? h("p", { class: "error small", text: opinion.error }) : null,
    bullets("concerns", opinion.concerns),
    bullets("conditions", opinion.conditions),
  );
}

function tallyLine(tally) {
  if (!tally) return null;
  return h("div", { class: "tally" }, Object.entries(tally).filter(([, n]) => n).map(([stance, n]) => [stanceChip(stance), ` ×${n} `]));
}

function roundCard(entry) {
  const aggregation = entry.aggregation || {};
  return h(
    "section",
    { class: "card round", "data-round": String(entry.round) },
    h("div", { class: "card-head" },
      h("h2", { text: `Round ${entry.round}` }),
      h("span", { class: "muted small", text: entry.stage === "opinion" ? "independent opinions (no one sees the others)" : "responses to the others" }),
      entry.outcome ? outcomeChip(entry.outcome) : null),
    h("div", { class: "members" }, (entry.opinions || []).map(memberCard)),
    tallyLine(entry.tally),
    entry.aggregation
      ? h("div", { class: "aggregation" },
          bullets("agreements", aggregation.agreements, "agree"),
          bullets("differences", aggregation.differences, "differ"),
          bullets("concerns", aggregation.concerns),
          aggregation.error ? h("p", { class: "error small", text: aggregation.error }) : null)
      : h("p", { class: "muted", text: "aggregating…" }),
  );
}

function consensus(c) {
  const record = c.record || {};
  const card = document.getElementById("council-consensus-card");
  if (!record.consensus && !c.outcome) {
    card.hidden = true;
    return;
  }
  card.hidden = false;
  const k = record.consensus || {};
  fill(
    document.getElementById("council-consensus"),
    c.outcome ? h("div", { class: "outcome-line" }, "Outcome: ", outcomeChip(c.outcome), tallyLine(record.tally)) : null,
    k.summary ? h("p", { class: "summary", text: k.summary }) : null,
    h("div", { class: "aggregation" },
      bullets("points of agreement", k.agreements, "agree"),
      bullets("points of disagreement", k.disagreements, "differ"),
      bullets("proposed actions", k.actions)),
    k.error ? h("p", { class: "error small", text: `moderator unavailable: ${k.error}` }) : null,
    (record.errors || []).length ? bullets("errors", record.errors.map((e) => `${e.stage} r${e.round ?? "-"}: ${e.error}`)) : null,
  );
}

async function refresh() {
  if (!caps.council) {
    fill(document.getElementById("council-head"), h("p", { class: "muted", text: "This server has no council API yet." }));
    return;
  }
  let c;
  try {
    c = await api(`/v1/council/${encodeURIComponent(councilId)}`);
  } catch (err) {
    showError(document.getElementById("council-head"), err, "council");
    return;
  }
  finished = c.status === "done" || c.status === "failed";
  const key = JSON.stringify([c.status, c.updated_at, c.record]);
  if (key === lastKey) return;
  lastKey = key;
  fill(document.getElementById("council-head"), head(c));
  fill(document.getElementById("council-rounds"), (c.record.rounds || []).map(roundCard));
  consensus(c);
}

async function start() {
  await refresh();
  const update = debounce(refresh, 200);
  live()
    .on(["council.updated"], (p) => {
      if (!p || !p.council_id || p.council_id === councilId) update();
    })
    .poll(() => (finished ? null : refresh()), 2000)
    .start();
}

start();
