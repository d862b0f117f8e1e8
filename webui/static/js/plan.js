// Today's plan as a timeline: a proportional strip from wake to sleep, then the items as a list, with the
// item at the agent's current game time marked.

import { clock, h } from "./core.js";

/** Index of the item covering `hours` (start inclusive, end exclusive), or -1. */
export function currentIndex(items, hours) {
  if (hours === null || hours === undefined) return -1;
  return items.findIndex((item) => item.start <= hours && hours < item.end);
}

export function renderPlan(node, plan, { now, pois }) {
  if (!plan || !plan.items || !plan.items.length) {
    node.replaceChildren(h("p", { class: "muted", text: "No plan for this day yet." }));
    return;
  }
  const items = plan.items;
  const first = items[0].start;
  const last = items[items.length - 1].end;
  const span = Math.max(last - first, 0.01);
  const current = currentIndex(items, now);
  const poiName = (id) => (pois.get(id) ? pois.get(id).name : id || "—");

  const strip = h("div", { class: "plan-strip", "aria-hidden": "true" });
  items.forEach((item, i) => {
    strip.append(
      h("span", {
        class: i === current ? "seg current" : "seg",
        style: { left: `${((item.start - first) / span) * 100}%`, width: `${((item.end - item.start) / span) * 100}%` },
        title: `${clock(item.start)}–${clock(item.end)} ${item.activity}`,
      }),
    );
  });
  if (now !== null && now !== undefined && now >= first && now <= last) {
    strip.append(h("span", { class: "now-line", style: { left: `${((now - first) / span) * 100}%` } }));
  }
  const list = h("ol", { class: "plan-list" });
  items.forEach((item, i) => {
    list.append(
      h(
        "li",
        { class: i === current ? "current" : i < current ? "past" : "" },
        h("span", { class: "plan-time", text: `${clock(item.start)}–${clock(item.end)}` }),
        h("span", { class: "plan-activity", text: item.activity }),
        h("span", { class: "plan-place muted", text: poiName(item.poi_id) }),
        i === current ? h("span", { class: "chip now", text: `now ${clock(now)}` }) : null,
      ),
    );
  });
  const notes = [];
  if (plan.source && plan.source !== "model") notes.push(`plan ${plan.source}`);
  if (plan.reason) notes.push(`replanned: ${plan.reason}`);
  node.replaceChildren(
    h("div", { class: "plan-scale muted small" }, h("span", { text: clock(first) }), h("span", { text: clock(last) })),
    strip,
    list,
    ...notes.map((text) => h("p", { class: "muted small", text })),
  );
}
