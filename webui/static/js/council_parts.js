// Small pieces shared by the council pages: stance, status and outcome chips.

import { chip } from "./core.js";

const OUTCOME_TEXT = {
  adopt: "adopt 採択",
  adopt_with_conditions: "adopt with conditions 条件付き採択",
  revise: "revise 修正",
  reconsider: "reconsider 再検討",
  another_round: "another round",
};

export function stanceChip(stance) {
  return chip(stance || "?", `stance stance-${stance || "unknown"}`);
}

export function statusChip(status) {
  return chip(status, status === "done" ? "ok" : status === "failed" ? "warn" : "running");
}

export function outcomeChip(outcome) {
  return chip(OUTCOME_TEXT[outcome] || outcome, `outcome outcome-${outcome}`);
}
