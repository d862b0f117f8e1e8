// The town map: points of interest from /v1/pois and agents at their last reported position (x/z), drawn
// as SVG. Agents without a position stand at the point of interest they reported, else at home.

import { agentColor, pageHref, s } from "./core.js";

const HEIGHT = 520;
const PAD = 70;
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
    { class: "poi", transform: `translate(${x.toFixed(1)} ${y.toFixed(1)})` },
    s("title", { text: `${poi.name} (${poi.kind})${poi.description ? ` — ${poi.description}` : ""}` }),
    s("circle", { r: 34, class: "poi-area", fill: color }),
    s("rect", { x: -9, y: -9, width: 18, height: 18, rx: 4, fill: color, class: "poi-mark" }),
    s("text", { y: 52, class: "poi-label", "text-anchor": "middle", text: poi.name }),
  );
}

const CROWD_PX = 30;

/** Fan out agents standing close together (greedy clusters) so every pin and name stays readable. */
function spread(placed) {
  const groups = [];
  for (const item of placed) {
    const group = groups.find((g) => Math.hypot(g.cx - item.px, g.cy - item.py) < CROWD_PX);
    if (group) group.items.push(item);
    else groups.push({ cx: item.px, cy: item.py, items: [item] });
  }
  for (const group of groups) {
    if (group.items.length < 2) continue;
    const radius = 16 + 6 * group.items.length;
    group.items.forEach((item, i) => {
      const angle = (2 * Math.PI * i) / group.items.length - Math.PI / 2;
      item.px = group.cx + Math.cos(angle) * radius;
      item.py = group.cy + Math.sin(angle) * radius;
      item.labelLeft = Math.cos(angle) < -0.3;
    });
  }
}

function agentNode(item) {
  const { agent } = item;
  const color = agentColor(agent.id);
  const talking = agent.state === "talking";
  return s(
    "a",
    { href: pageHref(`/agents/${encodeURIComponent(agent.id)}`), class: "agent-pin", "data-agent": agent.id },
    s("title", { text: `${agent.name}: ${agent.state || "no state"}${agent.location_name ? ` @ ${agent.location_name}` : ""}` }),
    talking ? s("circle", { r: 17, class: "talk-ring", stroke: color }) : null,
    s("circle", { r: 12, fill: color, class: item.exact ? "pin" : "pin approx" }),
    s("text", { class: "pin-initial", "text-anchor": "middle", dy: "0.35em", text: Array.from(agent.name)[0] || "?" }),
    s("text", { class: "pin-label", x: item.labelLeft ? -16 : 16, dy: "0.35em", "text-anchor": item.labelLeft ? "end" : "start", text: agent.name }),
    s("text", { class: "pin-state", x: item.labelLeft ? -16 : 16, y: 14, "text-anchor": item.labelLeft ? "end" : "start", text: agent.state || "" }),
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
  spread(placed);

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
