// The query's stateful operators over the last five minutes of batches (docs/monitoring-a-job.md,
// State that grows): rows, memory and store, how fast they grow, and whether they keep growing.
import { el } from "./dom.js";
import { count, duration, rate } from "./format.js";

const DASH = "—";
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

// Bytes as monitor/sizes.py writes them: "512 B", "12.4 KiB".
export function bytes(value) {
  if (value === null || value === undefined) return DASH;
  let size = value;
  let unit = 0;
  while (Math.abs(size) >= 1024 && unit < UNITS.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${Math.round(size)} B` : `${size.toFixed(1)} ${UNITS[unit]}`;
}

// Rows a second, or, where Spark does not count rows, the store's bytes a second.
function growth(op) {
  if (op.rows_per_second !== null) return `${rate(op.rows_per_second)} rows/s`;
  if (op.store_bytes_per_second !== null) return `${bytes(op.store_bytes_per_second)}/s`;
  return DASH;
}

function row(op) {
  const name = `${op.operator || "operator"} #${op.operator_index}`;
  const cells = [
    el("td", "operator", name),
    el("td", "num", op.rows === null ? "not counted" : count(op.rows)),
    el("td", "num", growth(op)),
    el("td", "num", bytes(op.memory_bytes)),
    el("td", "num", bytes(op.store_bytes)),
    el("td", "num", duration(op.commit_latency_ms)),
    el("td", "num", count(op.snapshot_lag)),
    el("td"),
  ];
  if (op.growing) cells[7].append(el("span", "badge verdict verdict-falling_behind", "growing"));
  const tr = el("tr");
  tr.append(...cells);
  return tr;
}

export function showState(section, operators) {
  section.hidden = !operators || operators.length === 0;
  section.querySelector("tbody").replaceChildren(...(operators || []).map(row));
}
