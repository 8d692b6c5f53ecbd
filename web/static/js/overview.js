// The overview: every query, the most urgent first, kept up to date by `overview` events.
import { AlertBook, bySeverity, showAlertCount } from "./alertbook.js";
import { sparkline } from "./charts.js";
import { STATUSES, el, getJson, setBadge, setText, showError } from "./dom.js";
import { count, duration } from "./format.js";
import { connect, heardServerTime, serverNow } from "./live.js";

const tbody = document.querySelector("#queries tbody");
const rows = new Map();
const book = new AlertBook();
const TREND_COLOUR = "#7aa2ff";

function urgency(entry) {
  return [STATUSES.indexOf(entry.status), entry.name || "", entry.id];
}

function compare(a, b) {
  const [x, y] = [urgency(a.entry), urgency(b.entry)];
  if (x[0] !== y[0]) return x[0] - y[0];
  return x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : x[2] < y[2] ? -1 : x[2] > y[2] ? 1 : 0;
}

function makeRow(entry) {
  const tr = el("tr");
  const name = el("td", "name");
  const link = el("a");
  link.href = `/queries/${encodeURIComponent(entry.id)}`;
  const failure = el("div", "error-class");
  name.append(link, failure);
  const status = el("td");
  const badge = status.appendChild(el("span", "badge"));
  const cells = { link, failure, badge, alerts: el("td", "firing") };
  tr.append(name, status, cells.alerts);
  for (const field of ["age", "skew", "late", "timers", "lag"]) {
    cells[field] = tr.appendChild(el("td", "num"));
  }
  const trend = tr.appendChild(el("td", "trend"));
  cells.last = tr.appendChild(el("td", "num"));
  return { tr, cells, trend, spark: sparkline(trend, TREND_COLOUR), entry, firing: "" };
}

// A badge per severity of the query's firing alerts, saying how many: "2 critical".
function showFiring(row) {
  const firing = book.firing(row.entry.id);
  const counts = bySeverity(firing);
  const key = [...counts.flat(), ...firing.map((alert) => alert.message)].join("\n");
  if (key === row.firing) return;
  row.firing = key;
  row.cells.alerts.replaceChildren(
    ...counts.map(([severity, n]) => {
      const badge = el("a", `severity severity-${severity}`, `${n} ${severity}`);
      badge.href = "/alerts";
      badge.title = firing
        .filter((alert) => alert.severity === severity)
        .map((alert) => alert.message)
        .join("\n");
      return badge;
    }),
  );
}

// Watermark age when the query has a watermark, else offset lag.
function trendOf(entry) {
  const ages = entry.trend.watermark_age_ms;
  const hasAges = ages.some((v) => v !== null);
  return {
    values: hasAges ? ages : entry.trend.offset_lag,
    what: hasAges ? "watermark age" : "offset lag",
  };
}

function fill(row) {
  const { cells, entry } = row;
  setText(cells.link, entry.name || entry.id);
  setBadge(cells.badge, entry.status);
  const failure = entry.exception ? entry.error_class || "failed" : "";
  setText(cells.failure, entry.unreadable ? "stored rows cannot be read" : failure);
  row.tr.title = entry.unreadable || entry.exception || "";
  row.tr.className = `status-${entry.status}`;
  setText(cells.skew, duration(entry.skew_ms));
  setText(cells.late, count(entry.late_records));
  cells.late.classList.toggle("bad", entry.late_records > 0);
  const known = entry.watermark_ms;
  const next =
    entry.next_timer_ms === null || known === null
      ? ""
      : `, next at W + ${duration(entry.next_timer_ms - known)}`;
  setText(
    cells.timers,
    entry.pending_timers === null ? "—" : `${count(entry.pending_timers)}${next}`,
  );
  setText(cells.lag, count(entry.offset_lag));
  showFiring(row);
  const { values, what } = trendOf(entry);
  row.trend.title = `${what}, last ${entry.trend.batch_id.length} batches`;
  row.spark.setData([entry.trend.batch_time_ms, values]);
  tickRow(row);
}

function tickRow({ cells, entry }) {
  const now = serverNow();
  const known = entry.watermark_ms;
  setText(cells.age, known === null ? "—" : duration(now - known));
  const ago = entry.updated_at_ms === null ? "" : `, ${duration(now - entry.updated_at_ms)} ago`;
  setText(cells.last, entry.last_batch_id === null ? "—" : `#${entry.last_batch_id}${ago}`);
}

function showCounts() {
  const counts = new Map();
  for (const { entry } of rows.values())
    counts.set(entry.status, (counts.get(entry.status) || 0) + 1);
  const parts = STATUSES.filter((s) => counts.has(s)).map((s) => `${counts.get(s)} ${s}`);
  setText(document.getElementById("counts"), `${rows.size} queries: ${parts.join(" · ")}`);
  document.getElementById("empty").hidden = rows.size > 0;
}

function render(entries, full) {
  for (const entry of entries) {
    heardServerTime(entry.now_ms);
    const row = rows.get(entry.id) || makeRow(entry);
    row.entry = entry;
    rows.set(entry.id, row);
    fill(row);
  }
  if (full) {
    const listed = new Set(entries.map((entry) => entry.id));
    for (const [id, row] of rows) {
      if (!listed.has(id)) {
        row.spark.destroy();
        row.tr.remove();
        rows.delete(id);
      }
    }
  }
  const ordered = [...rows.values()].sort(compare);
  ordered.forEach((row, i) => {
    if (tbody.children[i] !== row.tr) tbody.insertBefore(row.tr, tbody.children[i] || null);
  });
  const windowMs = entries.length ? entries[0].late_window_ms : null;
  if (windowMs) {
    // The heading may wrap, but not inside "5 min".
    const span = duration(windowMs).replaceAll(" ", "\u00a0");
    setText(document.getElementById("late-heading"), `Late records, last ${span}`);
  }
  showCounts();
}

async function start() {
  const { queries } = await getJson("/api/queries");
  render(queries, true);
  showAlertCount(book);
  book.onChange(() => rows.forEach(showFiring));
  // The overview room hears every alert: loaded afresh after each (re)join.
  const socket = connect((live) => live.emit("subscribe_overview", () => book.reload()));
  socket.on("overview", ({ queries: entries, full }) => render(entries, full));
  book.listen(socket);
  setInterval(() => rows.forEach(tickRow), 1_000);
}

start().catch((error) => showError(error.message));
