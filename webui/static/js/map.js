// The town map: points of interest from /v1/pois and agents at their last reported position (x/z), drawn
// as SVG. Agents without a position stand at the point of interest they reported, else at home. A pin
// never covers a place's mark or name, nor another pin: it moves to the nearest free spot, with a thin
// line back to where the agent stands.

import { agentColor, pageHref, s, stateLabel } from "./core.js";

const HEIGHT = 520;
const PAD = 70;
const POI_LABEL_Y = 52;
const MIN_WIDTH = 640;
const MAX_WIDTH = 1000;
const KIND_COLORS = {
  cafe: "#c98b4a",
  park: "#5a9e5f",
  library: "#6b7fc4",
  restaurant: "#c4645b",
  home: "#9a8a72",
  hall: "#8a7fb0",
  shop: "#b07cc6",
  school: "#4a9fb0",
};

function kindColor(kind) {
  return KIND_COLORS[kind] || "#8a94a6";
}

/** Where an agent stands: its reported position, the POI it reported, or its home (approximate). */
export function placeAgent(agent, pois) {
  if (agent.position && Number.isFinite(agent.position.x) && Number.isFinite(agent.position.z)) {
    return { x: agent.position.x, z: agent.position.z, exact: true };
  }
  const where = agent.location_name;
  const poi =
    (where && pois.find((p) => p.name === where || p.id === where)) ||
    (agent.home_poi && pois.find((p) => p.id === agent.home_poi));
  if (poi) return { x: poi.position.x, z: poi.position.z, exact: false, poi: poi.id };
  return null;
}

/** Fit the points into the drawing; the width follows the town's shape within sensible bounds. */
function projection(points) {
  const xs = points.map((p) => p.x);
  const zs = points.map((p) => p.z);
  const [minX, maxX, minZ, maxZ] = [Math.min(...xs), Math.max(...xs), Math.min(...zs), Math.max(...zs)];
  const spanX = Math.max(maxX - minX, 1);
  const spanZ = Math.max(maxZ - minZ, 1);
  const width = Math.max(MIN_WIDTH, Math.min(MAX_WIDTH, (spanX / spanZ) * (HEIGHT - 2 * PAD) + 2 * PAD));
  const scale = Math.min((width - 2 * PAD) / spanX, (HEIGHT - 2 * PAD) / spanZ);
  const offX = (width - spanX * scale) / 2;
  const offY = (HEIGHT - spanZ * scale) / 2;
  // Unity's z runs "north": up on the map.
  const project = (x, z) => [offX + (x - minX) * scale, HEIGHT - (offY + (z - minZ) * scale)];
  return { project, width };
}

function drawPoi(poi, project) {
  const [x, y] = project(poi.position.x, poi.position.z);
  const color = kindColor(poi.kind);
  return s(
    "g",
    { class: "poi", "data-poi": poi.id, transform: `translate(${x.toFixed(1)} ${y.toFixed(1)})` },
    s("title", { text: `${poi.name} (${poi.kind})${poi.description ? ` — ${poi.description}` : ""}` }),
    s("circle", { r: 34, class: "poi-area", fill: color }),
    s("rect", { x: -9, y: -9, width: 18, height: 18, rx: 4, fill: color, class: "poi-mark" }),
    s("text", { y: POI_LABEL_Y, class: "poi-label", "text-anchor": "middle", text: poi.name }),
  );
}

// --- laying out the agents: pins and their names never cover a place's mark or label, nor each other ---

const PIN_R = 17; // the talk ring around the pin
const LABEL_X = 21; // clear of the talk ring
const RING_STEP = 16;
const RINGS = 12;
const ANGLES = 16;

/** Rendered width of `text` at `size` px, estimated (CJK glyphs are square; Latin ones about 0.6 wide). */
function textWidth(text, size) {
  let width = 0;
  for (const ch of String(text || "")) width += ch.codePointAt(0) >= 0x2e80 ? size : size * 0.62;
  return width;
}

function overlaps(a, b) {
  return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

/** A place's mark and label, as boxes the agents keep clear of. */
function poiBoxes(poi, project) {
  const [x, y] = project(poi.position.x, poi.position.z);
  const half = textWidth(poi.name, 14) / 2 + 4;
  return [
    { x0: x - 12, y0: y - 12, x1: x + 12, y1: y + 12 },
    { x0: x - half, y0: y + POI_LABEL_Y - 16, x1: x + half, y1: y + POI_LABEL_Y + 6 },
  ];
}

/** What an agent's pin and its two text lines (name, state) cover at (px, py), the text right or left. */
function agentBox(item, px, py, left) {
  const text = Math.max(textWidth(item.agent.name, 13), textWidth(stateLabel(item.agent.state), 11)) + 4;
  return left
    ? { x0: px - LABEL_X - text, y0: py - PIN_R, x1: px + PIN_R, y1: py + 21 }
    : { x0: px - PIN_R, y0: py - PIN_R, x1: px + LABEL_X + text, y1: py + 21 };
}

/** Places to try around the wanted point: the point, then rings further out, above first (labels are below). */
function* candidates(x, y) {
  yield [x, y];
  const order = [0];
  for (let k = 1; k <= ANGLES / 2; k += 1) order.push(k, -k);
  for (let ring = 1; ring <= RINGS; ring += 1) {
    for (const k of order.slice(0, ANGLES)) {
      const angle = -Math.PI / 2 + (k * 2 * Math.PI) / ANGLES;
      yield [x + Math.cos(angle) * (ring * RING_STEP + 8), y + Math.sin(angle) * (ring * RING_STEP + 8)];
    }
  }
}

/** Distance from (px, py) to the segment (x0, y0)-(x1, y1). */
function toSegment(px, py, x0, y0, x1, y1) {
  const [dx, dy] = [x1 - x0, y1 - y0];
  const t = dx || dy ? Math.max(0, Math.min(1, ((px - x0) * dx + (py - y0) * dy) / (dx * dx + dy * dy))) : 0;
  return Math.hypot(px - (x0 + t * dx), py - (y0 + t * dy));
}

/** The first spot around the wanted point where the pin and its text cover nothing already drawn, and the
 * line back to the wanted point crosses no other pin. */
function firstFree(item, taken, pins, inside) {
  const [wantX, wantY] = [item.px, item.py];
  for (const [x, y] of candidates(wantX, wantY)) {
    if (pins.some(([px, py]) => toSegment(px, py, x, y, wantX, wantY) < PIN_R)) continue;
    // Text goes on the side away from the wanted point, so a fanned-out group reads outwards.
    for (const left of x < wantX - 1 ? [true, false] : [false, true]) {
      const box = agentBox(item, x, y, left);
      if (inside(box) && !taken.some((other) => overlaps(box, other))) return { x, y, left, box };
    }
  }
  return { x: wantX, y: wantY, left: false, box: agentBox(item, wantX, wantY, false) };
}

/** Move each agent (in id order, so the layout is stable) to the nearest free spot around where it stands. */
function layout(placed, obstacles, width) {
  const inside = (b) => b.x0 >= 2 && b.y0 >= 2 && b.x1 <= width - 2 && b.y1 <= HEIGHT - 2;
  const taken = [...obstacles];
  const pins = [];
  for (const item of [...placed].sort((a, b) => String(a.agent.id).localeCompare(String(b.agent.id)))) {
    const chosen = firstFree(item, taken, pins, inside);
    taken.push(chosen.box);
    pins.push([chosen.x, chosen.y]);
    Object.assign(item, { fromX: item.px, fromY: item.py, px: chosen.x, py: chosen.y, labelLeft: chosen.left });
  }
}

function agentNode(item) {
  const { agent } = item;
  const color = agentColor(agent.id);
  const talking = agent.state === "talking";
  const state = agent.state ? `${stateLabel(agent.state)} (${agent.state})` : "no state";
  const [dx, dy] = [item.fromX - item.px, item.fromY - item.py];
  const anchor = item.labelLeft ? "end" : "start";
  const textX = item.labelLeft ? -LABEL_X : LABEL_X;
  return s(
    "a",
    { href: pageHref(`/agents/${encodeURIComponent(agent.id)}`), class: "agent-pin", "data-agent": agent.id },
    s("title", { text: `${agent.name}: ${state}${agent.location_name ? ` @ ${agent.location_name}` : ""}` }),
    // Moved off the spot it stands on: a thin line back to it.
    Math.hypot(dx, dy) > PIN_R ? s("line", { class: "pin-leader", x1: 0, y1: 0, x2: dx.toFixed(1), y2: dy.toFixed(1), stroke: color }) : null,
    talking ? s("circle", { r: PIN_R, class: "talk-ring", stroke: color }) : null,
    s("circle", { r: 12, fill: color, class: item.exact ? "pin" : "pin approx" }),
    s("text", { class: "pin-initial", "text-anchor": "middle", dy: "0.35em", text: Array.from(agent.name)[0] || "?" }),
    s("text", { class: "pin-label", x: textX, dy: "0.35em", "text-anchor": anchor, text: agent.name }),
    s("text", { class: "pin-state", x: textX, y: 14, "text-anchor": anchor, "data-state": agent.state || null,
      lang: "ja", text: agent.state ? stateLabel(agent.state) : "" }),
  );
}

/** Draw (or redraw) the map; agent pins move smoothly between updates. */
export function renderMap(svg, pois, agents) {
  const points = pois.map((p) => ({ x: p.position.x, z: p.position.z }));
  const placed = [];
  const unplaced = [];
  for (const agent of agents) {
    const where = placeAgent(agent, pois);
    if (where) placed.push({ agent, ...where });
    else unplaced.push(agent);
  }
  points.push(...placed.map((p) => ({ x: p.x, z: p.z })));
  if (!points.length) points.push({ x: 0, z: 0 });
  const { project, width } = projection(points);
  svg.setAttribute("viewBox", `0 0 ${width.toFixed(0)} ${HEIGHT}`);
  for (const item of placed) [item.px, item.py] = project(item.x, item.z);
  unplaced.forEach((agent, i) => placed.push({ agent, px: PAD + i * 90, py: HEIGHT - 24, exact: false }));
  layout(placed, pois.flatMap((poi) => poiBoxes(poi, project)), width);

  const previous = new Map(Array.from(svg.querySelectorAll(".agent-pin")).map((n) => [n.dataset.agent, n]));
  const layer = s("g", { class: "agents" });
  for (const item of placed) {
    const node = agentNode(item);
    const from = previous.get(item.agent.id);
    node.style.transform = from ? from.style.transform : `translate(${item.px}px, ${item.py}px)`;
    layer.append(node);
    requestAnimationFrame(() => {
      node.style.transform = `translate(${item.px.toFixed(1)}px, ${item.py.toFixed(1)}px)`;
    });
  }
  svg.replaceChildren(
    s("rect", { class: "map-ground", x: 0, y: 0, width, height: HEIGHT, rx: 14 }),
    s("g", { class: "pois" }, pois.map((poi) => drawPoi(poi, project))),
    layer,
  );
}
