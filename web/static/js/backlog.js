// A backlog as the pages say it: how long its oldest record has waited, when it will be
// caught up, and its verdict (docs/monitoring-a-job.md, Backlog).
import { el } from "./dom.js";
import { duration } from "./format.js";

const DASH = "—";

// "none" when nothing waits, "≥ 3 min" when the head was there before the first batch stored.
export function behindText(ageMs, how) {
  if (how === "none") return "none";
  if (ageMs === null || ageMs === undefined) return DASH;
  return how === "at_least" ? `≥ ${duration(ageMs)}` : duration(ageMs);
}

// When a backlog will be read, as its verdict has it (wmon/render.py's catch_up says the same):
// "keeping pace" with a steady backlog, nothing when the verdict is not known yet.
export function catchUpText(records, catchUpMs, verdict) {
  if (records === null || records === undefined) return "";
  if (catchUpMs !== null && catchUpMs !== undefined) {
    return catchUpMs === 0 ? "caught up" : `caught up in ${duration(catchUpMs)}`;
  }
  if (!verdict) return "";
  return verdict === "ok" ? "keeping pace" : "not catching up";
}

// A badge with the verdict's words, "falling behind"; nothing when there is none.
export function verdictBadge(node, verdict) {
  const words = verdict ? verdict.replaceAll("_", " ") : "";
  const badge = node.matches(".badge") ? node : node.firstElementChild || node.appendChild(el("span"));
  if (badge.textContent === words) return;
  badge.textContent = words;
  badge.className = `badge verdict verdict-${verdict || "none"}`;
}
