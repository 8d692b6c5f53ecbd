// The overview: every query, the most urgent first (or the furthest behind first), kept up to
// date by `overview` events; searched by name, filtered by status, grouped by name prefix and
// sorted as the page's address says (?q=…&status=stalled,lagging&group=prefix&sort=behind), a
// page of rows at a time.
import { AlertBook, bySeverity, showAlertCount } from "./alertbook.js";
import { sparkline } from "./charts.js";
import { behindText, verdictBadge } from "./backlog.js";
import {
  STATUSES,
  el,
  getJson,
  setBadge,
  setPhrasedText,
  setText,
  setWrappingText,
  showError,
} from "./dom.js";
import { age, count, duration } from "./format.js";
import { connect, heardServerTime, serverNow } from "./live.js";

const tbody = document.querySelector("#queries tbody");
const COLUMNS = document.querySelectorAll("#queries thead th").length;
// Every query's latest entry, and the rows drawn (those of the first `shown` that match).
const entries = new Map();
const rows = new Map();
const book = new AlertBook();
const TREND_COLOUR = "#7aa2ff";
// The backlog verdicts a row shows under how far behind it is: the others say what its status
// says already (stalled, stopped, rewound) or nothing (ok).
const MOVING = new Set(["falling_behind", "catching_up"]);
// A row costs a sparkline: a fleet is drawn a hundred rows at a time.
const PAGE_ROWS = 100;
const filters = readFilters();
let shown = PAGE_ROWS;

// The server's order (what pages, then the status: `wmon queries` lists them so too).
function urgency(entry) {
  return [entry.urgency, entry.name || "", entry.id];
}

// When the oldest unread record of the query arrived (server time): the earlier, the further
// behind; a query with nothing waiting, or whose backlog is not known, last.
function headArrival(entry) {
  const backlog = entry.backlog;
  if (!backlog || backlog.age_ms === null || !backlog.records) return Infinity;
  return entry.now_ms - backlog.age_ms;
}

function compare(a, b) {
  if (filters.sort === "behind") {
    const [p, q] = [headArrival(a), headArrival(b)];
    if (p !== q) return p < q ? -1 : 1;
  }
  const [x, y] = [urgency(a), urgency(b)];
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
  for (const field of ["age", "skew", "late", "timers", "behind"]) {
    cells[field] = tr.appendChild(el("td", `num ${field}`));
  }
  // How long the oldest unread record has waited; how many wait and the verdict under it.
  cells.waited = cells.behind.appendChild(el("span"));
  cells.waiting = cells.behind.appendChild(el("span", "detail"));
  cells.verdict = cells.behind.appendChild(el("span", "detail"));
  // The next timer on a line of its own under the count, to keep the column narrow.
  cells.pending = cells.timers.appendChild(el("span"));
  cells.next = cells.timers.appendChild(el("span", "detail"));
  const trend = tr.appendChild(el("td", "trend"));
  cells.last = tr.appendChild(el("td", "num last"));
  // On a narrow screen the table's head is hidden: each figure says what it is.
  const headings = document.querySelectorAll("#queries thead th");
  [...tr.children].forEach((td, i) => {
    td.dataset.label = headings[i].textContent;
  });
  return { tr, cells, trend, spark: sparkline(trend, TREND_COLOUR), entry, firing: "" };
}

// A badge per severity of the query's firing alerts, saying how many: "2 critical"; the
// pending ones counted apart, "1 pending" (as the query page and `wmon queries` count them).
function showFiring(row) {
  const live = book.live(row.entry.id);
  const firing = live.filter((alert) => alert.state === "firing");
  const pending = live.filter((alert) => alert.state !== "firing");
  const counts = bySeverity(firing);
  const key = [...counts.flat(), ...live.map((alert) => alert.message)].join("\n");
  if (key === row.firing) return;
  row.firing = key;
  const badges = counts.map(([severity, n]) =>
    alertBadge(`severity severity-${severity}`, `${n} ${severity}`, firing, severity),
  );
  if (pending.length) {
    badges.push(alertBadge("severity severity-pending", `${pending.length} pending`, pending));
  }
  row.cells.alerts.replaceChildren(...badges);
}

// A link to the Alerts page that says how many, their messages in its title.
function alertBadge(className, text, alerts, severity) {
  const badge = el("a", className, text);
  badge.href = "/alerts";
  badge.title = alerts
    .filter((alert) => !severity || alert.severity === severity)
    .map((alert) => alert.message)
    .join("\n");
  return badge;
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
  // A name breaks after any of its dots and underscores: ten columns share 1,400 pixels.
  setWrappingText(cells.link, entry.name || entry.id, 0);
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
    entry.next_timer_ms === null || known === null || entry.pending_timers === null
      ? ""
      : `next at W + ${duration(entry.next_timer_ms - known)}`;
  setText(cells.pending, count(entry.pending_timers));
  setText(cells.next, next);
  const backlog = entry.backlog;
  const records = backlog && backlog.records;
  setText(cells.waiting, records ? `${count(records)} records` : "");
  verdictBadge(cells.verdict, backlog && MOVING.has(backlog.verdict) ? backlog.verdict : null);
  showFiring(row);
  const { values, what } = trendOf(entry);
  row.trend.title = `${what}, last ${entry.trend.batch_id.length} batches`;
  row.spark.setData([entry.trend.batch_time_ms, values]);
  tickRow(row);
}

function tickRow({ cells, entry }) {
  const now = serverNow();
  const known = entry.watermark_ms;
  setPhrasedText(cells.age, known === null ? "—" : age(now - known));
  const backlog = entry.backlog;
  const arrival = headArrival(entry);
  const waitedMs = arrival === Infinity ? backlog && backlog.age_ms : now - arrival;
  setText(cells.waited, backlog ? behindText(waitedMs, backlog.age) : "—");
  // It may wrap after the batch, but not inside "20 s ago".
  const heard = entry.updated_at_ms === null ? null : now - entry.updated_at_ms;
  const since = heard === null ? "" : heard < 0 ? age(heard) : `${duration(heard)} ago`;
  const ago = since && `, ${since.replaceAll(" ", "\u00a0")}`;
  const waiting = entry.last_batch_id === null;
  setText(cells.last, waiting ? "waiting for the first batch" : `#${entry.last_batch_id}${ago}`);
  cells.last.classList.toggle("waiting", waiting);
}

function readFilters() {
  const params = new URLSearchParams(window.location.search);
  const statuses = (params.get("status") || "").split(",");
  return {
    q: (params.get("q") || "").trim(),
    statuses: new Set(STATUSES.filter((status) => statuses.includes(status))),
    group: params.get("group") === "prefix",
    sort: params.get("sort") === "behind" ? "behind" : "urgency",
  };
}

// Into the page's address, so that a link or a reload shows the same.
function keepFilters() {
  const params = new URLSearchParams();
  if (filters.q) params.set("q", filters.q);
  const statuses = STATUSES.filter((status) => filters.statuses.has(status));
  if (statuses.length) params.set("status", statuses.join(","));
  if (filters.group) params.set("group", "prefix");
  if (filters.sort === "behind") params.set("sort", "behind");
  const search = params.toString().replaceAll("%2C", ",");
  window.history.replaceState(null, "", search ? `?${search}` : window.location.pathname);
}

function named(entry) {
  return entry.name || entry.id;
}

// The part of a name before its first `_`, `.` or `-`: "orders" of orders_enriched.
function prefixOf(entry) {
  const name = named(entry);
  return name.split(/[_.-]/, 1)[0] || name;
}

function tally(list) {
  const counts = new Map();
  for (const { status } of list) counts.set(status, (counts.get(status) || 0) + 1);
  return counts;
}

// The queries whose name holds the search (in any case), and of those the ones of the statuses
// chosen, the most urgent first.
function select() {
  const text = filters.q.toLowerCase();
  const all = [...entries.values()];
  const matching = text ? all.filter((entry) => named(entry).toLowerCase().includes(text)) : all;
  const chosen = filters.statuses;
  const filtered = chosen.size ? matching.filter((entry) => chosen.has(entry.status)) : matching;
  return { matching, filtered: filtered.sort(compare) };
}

// Groups by prefix, each where its most urgent query sorts; without grouping, one group
// without a heading.
function arranged(filtered) {
  if (!filters.group) return [[null, filtered]];
  const groups = new Map();
  for (const entry of filtered) {
    const prefix = prefixOf(entry);
    if (!groups.has(prefix)) groups.set(prefix, []);
    groups.get(prefix).push(entry);
  }
  return [...groups];
}

// A group's heading row: its prefix, and how many of its queries have each status.
function groupRow(prefix, members) {
  const tr = el("tr", "group");
  const th = tr.appendChild(el("th", null, prefix));
  th.colSpan = COLUMNS;
  th.scope = "rowgroup";
  const counts = tally(members);
  const parts = STATUSES.filter((s) => counts.has(s)).map((s) => `${count(counts.get(s))} ${s}`);
  const many = members.length === 1 ? "query" : "queries";
  th.append(el("span", "detail", `${count(members.length)} ${many}: ${parts.join(" · ")}`));
  return tr;
}

function statusButton(status, label) {
  const button = el("button", "status-filter", label);
  button.type = "button";
  button.dataset.status = status;
  if (status) button.setAttribute("aria-pressed", String(filters.statuses.has(status)));
  return button;
}

// "300 queries: 3 stalled · 297 healthy", each count a button that shows only those; with a
// search, how many names match it; and how many of the matching queries are drawn.
function showCounts(matching, filtered, drawn) {
  const counts = tally(matching);
  const statuses = STATUSES.filter((s) => counts.has(s) || filters.statuses.has(s));
  const searched = filters.q ? `, ${count(matching.length)} named like “${filters.q}”` : "";
  const head = `${count(entries.size)} queries${searched}: `;
  const labels = statuses.map((status) => `${count(counts.get(status) || 0)} ${status}`);
  const showing = drawn < filtered ? ` — showing ${count(drawn)} of ${count(filtered)}` : "";
  const line = document.getElementById("counts");
  const key = JSON.stringify([head, labels, [...filters.statuses], showing]);
  if (line.dataset.key === key) return;
  line.dataset.key = key;
  const buttons = statuses.map((status, i) => statusButton(status, labels[i]));
  if (filters.statuses.size) buttons.push(statusButton("", "all"));
  line.replaceChildren(head, ...buttons.flatMap((button, i) => (i ? [" · ", button] : [button])));
  if (showing) line.append(showing);
}

function rowOf(entry) {
  let row = rows.get(entry.id);
  if (!row) {
    row = makeRow(entry);
    rows.set(entry.id, row);
    fill(row);
  }
  return row;
}

// The first `shown` queries that match, under their groups' headings; rows that fall out of
// them are dropped with their sparklines.
function draw() {
  const { matching, filtered } = select();
  const sequence = [];
  const drawn = new Set();
  let left = shown;
  for (const [prefix, members] of arranged(filtered)) {
    if (left <= 0) break;
    if (prefix !== null) sequence.push(groupRow(prefix, members));
    for (const entry of members.slice(0, left)) {
      sequence.push(rowOf(entry).tr);
      drawn.add(entry.id);
    }
    left -= members.length;
  }
  for (const [id, row] of rows) {
    if (!drawn.has(id)) {
      row.spark.destroy();
      row.tr.remove();
      rows.delete(id);
    }
  }
  sequence.forEach((tr, i) => {
    if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
  });
  while (tbody.children.length > sequence.length) tbody.lastElementChild.remove();
  showCounts(matching, filtered.length, drawn.size);
  const more = document.getElementById("more");
  more.hidden = drawn.size >= filtered.length;
  setText(more, `Show ${count(Math.min(filtered.length - drawn.size, PAGE_ROWS))} more`);
  document.getElementById("empty").hidden = entries.size > 0;
  document.getElementById("no-match").hidden = entries.size === 0 || filtered.length > 0;
}

function render(list, full) {
  // Before the rows: a new row's cells take their labels from the headings.
  const windowMs = list.length ? list[0].late_window_ms : null;
  if (windowMs) {
    // The heading may wrap, but not inside "5 min".
    const span = duration(windowMs).replaceAll(" ", "\u00a0");
    setText(document.getElementById("late-heading"), `Late records, last ${span}`);
  }
  for (const entry of list) {
    heardServerTime(entry.now_ms);
    entries.set(entry.id, entry);
    const row = rows.get(entry.id);
    if (row) {
      row.entry = entry;
      fill(row);
    }
  }
  if (full) {
    const listed = new Set(list.map((entry) => entry.id));
    for (const id of entries.keys()) if (!listed.has(id)) entries.delete(id);
  }
  draw();
}

function refilter() {
  shown = PAGE_ROWS;
  keepFilters();
  draw();
}

function listenToFilters() {
  const search = document.getElementById("search");
  const group = document.getElementById("group");
  search.value = filters.q;
  group.checked = filters.group;
  search.addEventListener("input", () => {
    filters.q = search.value.trim();
    refilter();
  });
  group.addEventListener("change", () => {
    filters.group = group.checked;
    refilter();
  });
  // A status's count shows only those (several may be chosen); again, or "all", clears it.
  document.getElementById("counts").addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (!button) return;
    const { status } = button.dataset;
    if (!status) filters.statuses.clear();
    else if (!filters.statuses.delete(status)) filters.statuses.add(status);
    refilter();
  });
  // The Behind heading sorts by it, the furthest behind first; again, by urgency.
  const sortBehind = document.getElementById("sort-behind");
  const showSort = () => {
    const behind = filters.sort === "behind";
    sortBehind.setAttribute("aria-pressed", String(behind));
    document.getElementById("behind-heading").setAttribute("aria-sort", behind ? "descending" : "none");
  };
  showSort();
  sortBehind.addEventListener("click", () => {
    filters.sort = filters.sort === "behind" ? "urgency" : "behind";
    showSort();
    refilter();
  });
  document.getElementById("more").addEventListener("click", () => {
    shown += PAGE_ROWS;
    draw();
  });
}

async function start() {
  listenToFilters();
  showAlertCount(book);
  book.onChange(() => rows.forEach(showFiring));
  // At once, beside the queries: the alerts are drawn with the first rows, not after the
  // socket's subscribe.
  book.reload();
  const { queries } = await getJson("/api/queries");
  render(queries, true);
  // The overview room hears every alert: loaded afresh after each (re)join.
  const socket = connect((live) => live.emit("subscribe_overview", () => book.reload()));
  socket.on("overview", ({ queries: changed, full }) => render(changed, full));
  book.listen(socket);
  setInterval(() => rows.forEach(tickRow), 1_000);
}

start().catch((error) => showError(error.message));
