// Plutchik's wheel as a radar (eight axes, 0-100) and a small per-axis history.

import { h, s } from "./core.js";

export const AXES = [
  { key: "joy", ja: "喜び", color: "#e8b730" },
  { key: "trust", ja: "信頼", color: "#7cb868" },
  { key: "fear", ja: "恐れ", color: "#2f8f63" },
  { key: "surprise", ja: "驚き", color: "#3a9cc4" },
  { key: "sadness", ja: "悲しみ", color: "#4b6cc8" },
  { key: "disgust", ja: "嫌悪", color: "#9466c4" },
  { key: "anger", ja: "怒り", color: "#d2504b" },
  { key: "anticipation", ja: "期待", color: "#e9823a" },
];

/** Shown when the agent has no emotion record yet: a calm, even state, labelled as a baseline. */
export const NEUTRAL_BASELINE = Object.fromEntries(AXES.map((axis) => [axis.key, 20]));

const CX = 160;
const CY = 150;
const R = 105;

function point(index, value) {
  const angle = -Math.PI / 2 + (index * 2 * Math.PI) / AXES.length;
  const r = (Math.max(0, Math.min(100, value)) / 100) * R;
  return [CX + Math.cos(angle) * r, CY + Math.sin(angle) * r];
}

function ring(level) {
  const pts = AXES.map((_, i) => point(i, level).map((v) => v.toFixed(1)).join(","));
  return s("polygon", { class: "radar-ring", points: pts.join(" ") });
}

/** Draw the radar for `values` ({joy: 0-100, ...}); `baseline` draws it dashed and muted. */
export function renderRadar(svg, values, { baseline = false } = {}) {
  const shape = AXES.map((axis, i) => point(i, Number(values[axis.key] ?? 0)));
  const children = [25, 50, 75, 100].map(ring);
  AXES.forEach((axis, i) => {
    const [x, y] = point(i, 100);
    const [lx, ly] = point(i, 124);
    const anchor = Math.abs(lx - CX) < 8 ? "middle" : lx > CX ? "start" : "end";
    children.push(s("line", { class: "radar-axis", x1: CX, y1: CY, x2: x, y2: y }));
    children.push(
      s("text", { class: "radar-label", x: lx, y: ly, "text-anchor": anchor, dy: "0.35em" },
        s("tspan", { text: axis.ja }),
        s("tspan", { class: "radar-label-en", dx: 4, text: axis.key })),
    );
  });
  children.push(
    s("polygon", {
      class: baseline ? "radar-shape baseline" : "radar-shape",
      points: shape.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" "),
    }),
  );
  shape.forEach(([x, y], i) => children.push(s("circle", { cx: x, cy: y, r: 3.5, fill: AXES[i].color })));
  svg.replaceChildren(...children);
}

function sparkline(series, color) {
  const width = 84;
  const height = 18;
  if (series.length < 2) return s("svg", { class: "spark", viewBox: `0 0 ${width} ${height}` });
  const step = width / (series.length - 1);
  const pts = series.map((v, i) => `${(i * step).toFixed(1)},${(height - 1 - (v / 100) * (height - 2)).toFixed(1)}`);
  return s(
    "svg",
    { class: "spark", viewBox: `0 0 ${width} ${height}`, "aria-hidden": "true" },
    s("polyline", { points: pts.join(" "), stroke: color, fill: "none" }),
  );
}

/** One row per axis: name, value bar, and a sparkline over `history` (oldest first). */
export function renderAxes(list, values, history) {
  list.replaceChildren(
    ...AXES.map((axis) => {
      const value = Math.round(Number(values[axis.key] ?? 0));
      const series = history.map((record) => Number((record.values || {})[axis.key] ?? 0));
      return h(
        "li",
        { class: "axis-row", "data-axis": axis.key },
        h("span", { class: "axis-name" }, h("span", { class: "dot", style: { background: axis.color } }), axis.ja,
          h("span", { class: "muted small", text: ` ${axis.key}` })),
        h("span", { class: "bar", title: `${value}/100` },
          h("span", { class: "bar-fill", style: { width: `${value}%`, background: axis.color } })),
        h("span", { class: "axis-value", text: String(value) }),
        sparkline(series, axis.color),
      );
    }),
  );
}
