// The query page: loads the last minutes from the API, then appends each live batch.
import {
  Chart,
  Palette,
  align,
  eventTimeChart,
  lateTotals,
  partitionSources,
  pointsFor,
} from "./charts.js";
import { tokenForm } from "./actions.js";
import { AlertBook, bySeverity, showAlertCount } from "./alertbook.js";
import { AlertTable } from "./alerttable.js";
import {
  Diagnosis,
  bannerText,
  diagnosisUrl,
  driverRecordText,
  driverText,
} from "./diagnosis.js";
import {
  el,
  getJson,
  queryUrl,
  setBadge,
  setPhrasedText,
  setText,
  setWrappingText,
  showError,
} from "./dom.js";
import { age, behind, clock, count, duration, rate } from "./format.js";
import { connect, heardServerTime, serverNow } from "./live.js";
import { PartitionTable } from "./partitions.js";
import { behindText, catchUpText, verdictBadge } from "./backlog.js";
import { showState } from "./state.js";

const RANGE_MS = 15 * 60_000;
const WINDOW_REFRESH_MS = 5_000;
const queryId = document.querySelector("main").dataset.query;
const $ = (id) => document.getElementById(id);

const palette = new Palette();
const figures = {
  eventTime: $("event-time-chart"),
  skew: $("skew-chart"),
  batches: $("batches-chart"),
};
const charts = {
  eventTime: eventTimeChart(figures.eventTime, palette),
  skew: new Chart(figures.skew, {
    lines: [
      { key: "skew", label: "skew", stroke: "#f5a524", format: "duration" },
      { key: "flink", label: "W − Flink's W", stroke: "#7aa2ff", format: "duration", dash: [6, 4] },
    ],
    axes: [{ format: "duration" }],
  }),
  batches: new Chart(figures.batches, {
    lines: [
      { key: "duration", label: "duration", stroke: "#7aa2ff", format: "duration", scale: "ms" },
      { key: "rows", label: "input rows", stroke: "#3ddc97", scale: "rows" },
      { key: "late", label: "late records (exact)", stroke: "#ff6b6b", scale: "rows" },
      {
        key: "dropped",
        label: "Spark: dropped by W",
        stroke: "#f5a524",
        scale: "rows",
        dash: [6, 4],
      },
    ],
    axes: [
      { format: "duration", scale: "ms" },
      { format: "count", scale: "rows", side: "right" },
    ],
  }),
};
const table = new PartitionTable(document.querySelector("#partitions tbody"), palette);
const book = new AlertBook();
const alerts = new AlertTable($("live-alerts"), {
  query: false,
  onAction: (alert) => (alert ? book.update(alert) : book.reload()),
});

const diagnosis = new Diagnosis({ onShow: showDriver });

const page = {
  lastBatch: null,
  batchTimeMs: null,
  watermarkMs: null,
  windowAt: 0,
  query: null,
  backlog: null,
};

function sum(values) {
  const known = values.filter((v) => v !== null && v !== undefined);
  return known.length ? known.reduce((a, b) => a + b, 0) : null;
}

// How far Spark's watermark is ahead of the one Flink would have had (min of the non-idle W_p).
function aheadOfFlink(watermarkMs, flinkMs) {
  return watermarkMs === null || flinkMs === null ? null : watermarkMs - flinkMs;
}

function perBatch(values, batches) {
  return values.map((v, i) => (v === null || !batches[i] ? null : v / batches[i]));
}

function showStatus(query) {
  page.query = query;
  setBadge($("status"), query.status);
  const failed = Boolean(query.exception);
  $("failure").hidden = !failed;
  setText($("exception"), query.exception);
  setText($("error-class"), query.error_class ? `(${query.error_class})` : "");
  $("unreadable").hidden = !query.unreadable;
  setText($("unreadable-reason"), query.unreadable);
}

// A pipeline flow's full refresh gives it a new query: the history before and after it.
function showReset({ replaces_id: before, replaced_by_id: after }) {
  const other = after ?? before;
  $("reset").hidden = other === null;
  if (other === null) return;
  setText(
    $("reset-text"),
    after === null
      ? "A reset of this pipeline flow (a full refresh) started it here; its history before is"
      : "This pipeline flow was reset (a full refresh); its history goes on as",
  );
  const link = $("reset-link");
  link.href = `/queries/${encodeURIComponent(other)}`;
  setText(link, `query ${other}`);
}

function showBatch(batch, partitions) {
  page.lastBatch = batch.batch_id;
  page.batchTimeMs = batch.batch_time_ms;
  page.watermarkMs = batch.watermark_ms;
  setText($("batch-id"), batch.batch_id);
  setText($("batch-time"), `at ${clock(batch.batch_time_ms)}`);
  setText($("watermark"), `W ${clock(page.watermarkMs)}`);
  setText($("skew"), duration(batch.watermark_skew_ms));
  const flink = aheadOfFlink(batch.watermark_ms, batch.flink_watermark_ms);
  setText($("flink-behind"), flink === null ? "" : `Flink's W ${behind(flink)}`);
  setText(
    $("dropped"),
    `Spark: ${count(batch.rows_dropped_by_watermark)} dropped by W in the last batch`,
  );
  setText($("offset-lag"), count(sum(partitions.map((p) => p.offset_lag))));
  setText($("input-rate"), `${rate(batch.input_rows_per_second)} rows/s in`);
  setText($("partitions-batch"), `batch ${batch.batch_id}`);
  $("no-partitions").hidden = partitions.length > 0;
  tick();
}

// Who set the latest batch's watermark, and the banner when a future-dated record did.
function showDriver({ latest }) {
  setWrappingText($("watermark-driver"), driverText(latest));
  $("watermark-driver").title = driverRecordText(latest);
  const banner = bannerText(latest);
  $("future-banner").hidden = banner === null;
  setText($("future-banner-text"), banner);
}

// The diagnosis of the charts' minutes, read once they are in and again after new batches.
function refreshDiagnosis() {
  const to = page.batchTimeMs + 1;
  const range = `over the last ${duration(RANGE_MS)}`;
  diagnosis.refresh(diagnosisUrl(queryId, to - RANGE_MS, to), range, (error) =>
    showError(error.message),
  );
}

function showTimers(timers) {
  if (!timers) return;
  setText($("timers"), count(timers.pending));
  const due = timers.due_within_ms
    ? `, ${count(timers.due)} within ${duration(timers.due_within_ms)} of W`
    : "";
  setText(
    $("next-timer"),
    timers.next_expiry_ms === null ? "none pending" : `next ${clock(timers.next_expiry_ms)}${due}`,
  );
}

// The median batch of the last five minutes against its trigger (docs/monitoring-a-job.md,
// Batches slower than their trigger), and the stage that grew.
function showPace(pace) {
  const typical = pace && pace.duration_ms !== null ? duration(pace.duration_ms) : "—";
  setText($("batch-duration"), typical);
  setText($("trigger"), pace ? triggerText(pace) : "");
  const badge = $("pace");
  badge.hidden = !(pace && pace.behind);
  setText(badge, "behind the trigger");
  badge.className = "badge verdict verdict-falling_behind";
  setText($("stage"), pace && pace.stage ? stageText(pace) : "");
}

function triggerText({ kind, interval_ms: interval, batches, slower_batches: slower }) {
  if (kind === null) return "trigger not known";
  if (interval === null) return `${kind} trigger`;
  const every = interval === 0 ? "back-to-back trigger" : `${duration(interval)} trigger`;
  return slower ? `${every}, ${slower} of ${batches} batches slower` : every;
}

function stageText({ stage, stage_from_ms: from, stage_to_ms: to, stage_grew: grew }) {
  if (grew) return `${stage} grew ${duration(from)} → ${duration(to)}`;
  return `longest: ${stage} ${duration(to)}`;
}

function showLate(lateRecords, windowMs) {
  setText($("late-label"), `Late records, last ${duration(windowMs)}`);
  setText($("late-window-heading"), `Late, last ${duration(windowMs)}`);
  setText($("late"), count(lateRecords));
  $("late").classList.toggle("bad", lateRecords > 0);
}

// The query's live alerts, with their actions; the section shows only while there are some.
function showAlerts() {
  const live = book.live(queryId);
  alerts.render(live);
  showStrip(live);
  $("query-alerts").hidden = live.length === 0;
}

// The alerts' strip: a badge per severity with the count of its firing alerts, the pending
// ones counted apart (as the overview and `wmon queries` count them), and the most urgent
// alert, its message in full as the hint, for when the line cuts it short.
function showStrip(live) {
  const counts = bySeverity(live.filter((alert) => alert.state === "firing"));
  const pending = live.length - counts.reduce((sum, [, n]) => sum + n, 0);
  const worst = counts.length ? counts[0][0] : "none";
  $("alert-strip").className = `alert-strip worst-${worst}`;
  const badges = counts.map(([s, n]) => el("span", `severity severity-${s}`, `${n} ${s}`));
  if (pending) badges.push(el("span", "severity severity-pending", `${pending} pending`));
  $("alert-strip-counts").replaceChildren(...badges);
  const [top] = live;
  setText($("alert-strip-top"), top ? top.message : "");
  setText($("alert-strip-rule"), top ? `(${top.rule}, ${top.state})` : "");
  $("alert-strip-urgent").title = top ? top.message : "";
}

// The strip's button opens and closes the full table, with its actions and the token form.
function toggleAlertTable() {
  const button = $("alerts-toggle");
  const open = button.getAttribute("aria-expanded") !== "true";
  button.setAttribute("aria-expanded", String(open));
  $("alerts-panel").hidden = !open;
}

// A failed query, or a running one that has said nothing for longer than its silence
// threshold (a hung or killed driver): what the page shows is as of when it was last heard.
function isStale(query, now) {
  if (query.status === "failed") return true;
  const silent = Number.isFinite(query.silence_ms) && now - query.updated_at_ms > query.silence_ms;
  return query.status !== "terminated" && silent;
}

// A batch in flight for longer than this is said to run: a query working on one long batch
// is not silent, and its figures are those of the batch before.
const RUNNING_SHOWN_MS = 10_000;

// The line above the cards, for a query that has read no batch yet (unless it ended), whose
// figures are stale, or that has run one batch for a while; nothing otherwise.
function freshness(now) {
  const { query, lastBatch } = page;
  const ago = `${duration(now - query.updated_at_ms)} ago`;
  const ended = query.status === "failed" || query.status === "terminated";
  if (lastBatch === -1) return ended ? "" : `Waiting for the first batch (last heard ${ago})`;
  const batch = `batch ${lastBatch}, at ${clock(page.batchTimeMs)}`;
  if (isStale(query, now)) return `Last heard ${ago}: the figures are those of ${batch}`;
  const running = query.running_since_ms == null ? 0 : now - query.running_since_ms;
  if (ended || running < RUNNING_SHOWN_MS) return "";
  const what = `Running batch ${query.running_batch_id} for ${duration(running)}`;
  return `${what}: the figures are those of ${batch}`;
}

// Says how fresh the figures are; a stale query's cards are greyed and its charts' time axis
// runs on to now, so that the gap since its last batch shows.
function showFreshness() {
  const now = serverNow();
  const text = freshness(now);
  const waiting = page.lastBatch === -1;
  const stale = !waiting && isStale(page.query, now);
  const note = $("freshness");
  note.hidden = text === "";
  note.className = waiting ? "freshness waiting" : "freshness";
  setText(note, text);
  $("cards").classList.toggle("stale", stale);
  for (const chart of Object.values(charts)) chart.runTo(stale ? now : null);
}

// The query's backlog as of `asOfMs`: its head's age grows with the clock until the next
// batch says otherwise.
function showBacklog(backlog, asOfMs) {
  page.backlog = backlog && { ...backlog, arrivalMs: asOfMs - (backlog.age_ms || 0) };
  setText($("catch-up"), backlog ? catchUpText(backlog.records, backlog.catch_up_ms, backlog.verdict) : "");
  verdictBadge($("verdict"), backlog && backlog.verdict);
  tickBacklog();
}

function tickBacklog() {
  const backlog = page.backlog;
  const waiting = backlog && backlog.age_ms !== null && backlog.age !== "none";
  const ageMs = waiting ? serverNow() - backlog.arrivalMs : backlog && backlog.age_ms;
  setText($("behind"), backlog ? behindText(ageMs, backlog.age) : "—");
}

function tick() {
  alerts.tick();
  if (page.watermarkMs !== null)
    setPhrasedText($("watermark-age"), age(serverNow() - page.watermarkMs));
  tickBacklog();
  showFreshness();
}

function loadCharts(series, partitions) {
  const batches = series.batches;
  const totals = lateTotals(partitions);
  const late = series.time_ms.map((t) => (totals.has(t) ? totals.get(t) : null));
  const flink = series.watermark_ms.map((w, i) => aheadOfFlink(w, series.flink_watermark_ms[i]));
  charts.skew.load(series.time_ms, { skew: series.skew_max_ms, flink });
  charts.batches.load(series.time_ms, {
    duration: series.duration_avg_ms,
    rows: perBatch(series.input_rows, batches),
    late: perBatch(late, batches),
    dropped: perBatch(series.rows_dropped_by_watermark, batches),
  });
  const watermarks = align([
    { key: "watermark", times: series.time_ms, values: series.watermark_ms },
    ...partitionSources(partitions, "partition_watermark_ms"),
  ]);
  charts.eventTime.load(watermarks.xs, watermarks.columns);
}

async function load() {
  const detail = await getJson(queryUrl(queryId));
  heardServerTime(detail.now_ms);
  showStatus(detail.query);
  showReset(detail.query);
  showLate(detail.late_records, detail.late_window_ms);
  showTimers(detail.timers);
  table.load(detail.partitions);
  showBacklog(detail.backlog, detail.now_ms);
  showPace(detail.trigger);
  showState($("state-section"), detail.state);
  page.windowAt = Date.now();
  const latest = detail.latest_batch;
  if (!latest) {
    page.lastBatch = -1;
    $("no-partitions").hidden = false;
    showFreshness();
    return;
  }
  showBatch(latest, detail.partitions);
  const to = latest.batch_time_ms + 1;
  const range = `from=${to - RANGE_MS}&to=${to}&points=${pointsFor(figures.eventTime)}`;
  const [batches, partitions] = await Promise.all([
    getJson(`${queryUrl(queryId, "batches")}?${range}`),
    getJson(`${queryUrl(queryId, "partitions", "history")}?${range}`),
  ]);
  loadCharts(batches.series, partitions.partitions);
  refreshDiagnosis();
}

function applyBatch({ batch, partitions, backlog }) {
  const id = batch.batch_id;
  // A restart from an older checkpoint: the store replaced the batches from this id on, so
  // the page reads it again rather than mixing the two lineages.
  if (page.lastBatch !== null && id < page.lastBatch) {
    load().catch((error) => showError(error.message));
    return;
  }
  const x = batch.batch_time_ms;
  const watermarks = { watermark: batch.watermark_ms };
  for (const p of partitions) watermarks[p.partition] = p.partition_watermark_ms;
  charts.eventTime.push(x, watermarks, id);
  const flink = aheadOfFlink(batch.watermark_ms, batch.flink_watermark_ms);
  charts.skew.push(x, { skew: batch.watermark_skew_ms, flink }, id);
  charts.batches.push(
    x,
    {
      duration: batch.trigger_duration_ms,
      rows: batch.num_input_rows,
      late: sum(partitions.map((p) => p.late_records)),
      dropped: batch.rows_dropped_by_watermark,
    },
    id,
  );
  table.apply(partitions);
  if (backlog) showBacklog(backlog, batch.batch_time_ms);
  showBatch(batch, partitions);
  refreshDiagnosis();
}

// The late window moves with time: now and then take the table's window figures afresh.
async function refreshWindow() {
  if (Date.now() - page.windowAt < WINDOW_REFRESH_MS) return;
  page.windowAt = Date.now();
  const detail = await getJson(queryUrl(queryId));
  showReset(detail.query);
  if (detail.latest_batch && detail.latest_batch.batch_id === page.lastBatch) {
    table.load(detail.partitions);
    showBacklog(detail.backlog, detail.now_ms);
    showPace(detail.trigger);
    showState($("state-section"), detail.state);
  }
}

function applySummary(summary) {
  heardServerTime(summary.now_ms);
  showStatus(summary);
  showLate(summary.late_records, summary.late_window_ms);
  refreshWindow().catch((error) => showError(error.message));
}

function subscribe(socket) {
  socket.emit("subscribe", { query: queryId, after_batch: page.lastBatch }, (ack) => {
    if (ack.error) showError(ack.error);
    else if (!ack.complete) load().catch((error) => showError(error.message));
  });
  // Every query's alerts, for the header's count; the query's own are listed on the page.
  book.join(socket);
}

function listen() {
  tokenForm($("token-form"), () => alerts.refresh());
  $("alerts-toggle").addEventListener("click", toggleAlertTable);
  showAlertCount(book);
  book.onChange(showAlerts);
  const socket = connect(subscribe);
  book.listen(socket);
  socket.on("batch", (payload) => payload.query === queryId && applyBatch(payload));
  socket.on("summary", (summary) => summary.id === queryId && applySummary(summary));
  socket.on("timers", (payload) => payload.query === queryId && showTimers(payload.snapshot));
  setInterval(tick, 1_000);
}

load().then(listen, (error) => showError(error.message));
