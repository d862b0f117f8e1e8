// The memory stream table (type filter, text filter, paging), the reflections with their evidence, and
// the retrieval probe that shows why each memory comes back.

import { api, chip, debounce, fill, gameTime, h, plural, showError } from "./core.js";

const PAGE_SIZE = 20;
const EVIDENCE_SCAN = 500; // the API's largest page: evidence is looked up among the newest memories

function importanceCell(memory) {
  const provisional = memory.importance_source === "provisional";
  return h(
    "td",
    { class: "importance", title: provisional ? "provisional: the model has not rated it yet" : `rated by ${memory.importance_source}` },
    h("span", { class: "imp-bar" }, h("span", { style: { width: `${memory.importance * 10}%` } })),
    h("span", { class: provisional ? "imp-num provisional" : "imp-num", text: provisional ? `~${memory.importance}` : String(memory.importance) }),
  );
}

function contentCell(memory) {
  const extras = [];
  if (memory.location_name) extras.push(chip(memory.location_name, "place"));
  for (const tag of (memory.tags || []).slice(0, 6)) extras.push(chip(tag, "tag"));
  if (memory.evidence_ids && memory.evidence_ids.length) {
    extras.push(h("span", { class: "muted small", text: `evidence: ${memory.evidence_ids.map((id) => `#${id}`).join(" ")}` }));
  }
  return h("td", { class: "content" }, h("div", { text: memory.content }), extras.length ? h("div", { class: "meta" }, extras) : null);
}

/** The paged memory table; `refresh()` re-reads the current page and flashes rows that are new. */
export class MemoryTable {
  constructor(agentId) {
    this.agentId = agentId;
    this.offset = 0;
    this.seen = new Set();
    this.first = true;
    this.rows = document.getElementById("mem-rows");
    this.type = document.getElementById("mem-type");
    this.q = document.getElementById("mem-q");
    this.range = document.getElementById("mem-range");
    this.count = document.getElementById("mem-count");
    this.prev = document.getElementById("mem-prev");
    this.next = document.getElementById("mem-next");
    const restart = () => {
      this.offset = 0;
      this.refresh();
    };
    this.type.addEventListener("change", restart);
    this.q.addEventListener("input", debounce(restart, 250));
    document.getElementById("mem-filters").addEventListener("submit", (e) => {
      e.preventDefault();
      restart();
    });
    this.prev.addEventListener("click", () => {
      this.offset = Math.max(0, this.offset - PAGE_SIZE);
      this.refresh();
    });
    this.next.addEventListener("click", () => {
      this.offset += PAGE_SIZE;
      this.refresh();
    });
  }

  async refresh() {
    let data;
    try {
      data = await api(`/v1/agents/${encodeURIComponent(this.agentId)}/memories`, {
        params: { type: this.type.value, q: this.q.value.trim(), limit: PAGE_SIZE, offset: this.offset },
      });
    } catch (err) {
      fill(this.rows, h("tr", {}, h("td", { colspan: 6, class: "error", text: `memories: ${err.message}` })));
      return;
    }
    this.render(data);
  }

  render(data) {
    const { memories, total } = data;
    const filtered = this.type.value || this.q.value.trim();
    this.count.textContent = filtered ? `${total} matching` : plural(total, "memory", "memories");
    this.range.textContent = total ? `${this.offset + 1}–${this.offset + memories.length} of ${total}` : "0 of 0";
    this.prev.disabled = this.offset === 0;
    this.next.disabled = this.offset + memories.length >= total;
    if (!memories.length) {
      fill(this.rows, h("tr", {}, h("td", { colspan: 6, class: "muted", text: "No memories match." })));
      return;
    }
    fill(this.rows, memories.map((memory) => this.row(memory)));
    this.first = false;
  }

  row(memory) {
    const isNew = !this.first && !this.seen.has(memory.id);
    this.seen.add(memory.id);
    return h(
      "tr",
      { id: `memory-${memory.id}`, class: isNew ? "fresh" : "", "data-type": memory.type },
      h("td", { class: "muted num", text: String(memory.id) }),
      h("td", {}, chip(memory.type, `type-${memory.type}`)),
      contentCell(memory),
      importanceCell(memory),
      h("td", { class: "when", text: gameTime(memory.created_day, memory.created_time_of_day) }),
      h("td", { class: "when", text: gameTime(memory.last_accessed_day, memory.last_accessed_time_of_day) }),
    );
  }
}

async function evidenceIndex(agentId, ids) {
  if (!ids.size) return new Map();
  const data = await api(`/v1/agents/${encodeURIComponent(agentId)}/memories`, { params: { limit: EVIDENCE_SCAN } });
  return new Map(data.memories.filter((m) => ids.has(m.id)).map((m) => [m.id, m]));
}

function evidenceList(ids, index) {
  return h(
    "ul",
    { class: "evidence" },
    ids.map((id) => {
      const memory = index.get(id);
      return h(
        "li",
        { id: `evidence-${id}` },
        h("span", { class: "muted num", text: `#${id}` }),
        memory ? h("span", { text: ` ${memory.content}` }) : h("span", { class: "muted", text: " (older than the newest 500, or deleted)" }),
      );
    }),
  );
}

/** Reflections, newest first; each opens to the memories it rests on. */
export async function renderReflections(node, agentId) {
  let data;
  try {
    data = await api(`/v1/agents/${encodeURIComponent(agentId)}/memories`, { params: { type: "reflection", limit: 20 } });
  } catch (err) {
    showError(node, err, "reflections");
    return;
  }
  if (!data.memories.length) {
    fill(node, h("li", { class: "muted", text: "No reflections yet: they come after conversations end and once enough has happened." }));
    return;
  }
  const ids = new Set(data.memories.flatMap((m) => m.evidence_ids || []));
  const index = await evidenceIndex(agentId, ids);
  const open = new Set(Array.from(node.querySelectorAll("details[open]")).map((d) => d.dataset.id));
  fill(
    node,
    data.memories.map((memory) =>
      h(
        "li",
        { class: "reflection" },
        h("p", { class: "reflection-text", text: memory.content }),
        h("div", { class: "meta" },
          chip(memory.origin === "insight" ? "insight" : memory.origin === "conversation" ? "after a conversation" : memory.origin),
          h("span", { class: "muted small", text: `${gameTime(memory.created_day, memory.created_time_of_day)} · importance ${memory.importance}` })),
        memory.evidence_ids && memory.evidence_ids.length
          ? h(
              "details",
              { "data-id": String(memory.id), open: open.has(String(memory.id)) },
              h("summary", { text: `evidence (${memory.evidence_ids.length})` }),
              evidenceList(memory.evidence_ids, index),
            )
          : null,
      ),
    ),
  );
}

function componentBar(label, value, cls) {
  const pct = Math.max(0, Math.min(1, Number(value))) * 100;
  return h(
    "div",
    { class: `component ${cls}`, "data-component": cls },
    h("span", { class: "component-label", text: label }),
    h("span", { class: "bar" }, h("span", { class: "bar-fill", style: { width: `${pct}%` } })),
    h("span", { class: "component-value", text: Number(value).toFixed(2) }),
  );
}

/**
 * The retrieval probe form: POST .../memories/retrieve (touch: false, a look that changes no access time)
 * and draw the components of each hit with their weights.
 * `params` (the page's query string) may carry `query` and `k` to run a probe as soon as the page opens.
 */
export function setupProbe(agentId, params = new URLSearchParams()) {
  const form = document.getElementById("probe-form");
  const input = document.getElementById("probe-query");
  const k = document.getElementById("probe-k");
  const out = document.getElementById("probe-results");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = input.value.trim() || input.placeholder;
    input.value = query;
    fill(out, h("li", { class: "muted", text: "Retrieving…" }));
    let data;
    try {
      data = await api(`/v1/agents/${encodeURIComponent(agentId)}/memories/retrieve`, {
        method: "POST",
        body: { query, k: Number(k.value), touch: false },
      });
    } catch (err) {
      showError(out, err, "retrieve");
      return;
    }
    if (!data.results.length) {
      fill(out, h("li", { class: "muted", text: "Nothing came back." }));
      return;
    }
    const weights = data.weights || {};
    const sum = Object.entries(weights).map(([name, w]) => `${w} × ${name}`).join(" + ");
    fill(
      out,
      data.results.map((hit, i) =>
        h(
          "li",
          { class: "hit" },
          h("div", { class: "hit-head" },
            h("span", { class: "rank", text: String(i + 1) }),
            h("span", { class: "hit-text", text: hit.memory.content }),
            chip(hit.memory.type, `type-${hit.memory.type}`),
            h("span", { class: "muted", text: `${hit.memory.created_day}日目` }),
            h("span", { class: "score", title: `score = ${sum}`, text: hit.score.toFixed(2) })),
          h("div", { class: "components" },
            componentBar("relevance 関連度", hit.relevance, "relevance"),
            componentBar("recency 新しさ", hit.recency, "recency"),
            componentBar("importance 重要度", hit.importance, "importance"),
            "time" in weights ? componentBar("time 時期", hit.time || 0, "time") : null),
        ),
      ),
    );
  });
  const initial = (params.get("query") || "").trim();
  if (initial) {
    input.value = initial;
    if ([...k.options].some((o) => o.value === params.get("k"))) k.value = params.get("k");
    form.requestSubmit();
  }
}
