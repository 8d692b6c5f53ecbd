// The history page: a chosen time range, downsampled by the API to the charts' width.
import {
  Chart,
  Palette,
  align,
  eventTimeChart,
  lateTotals,
  partitionChart,
  partitionSources,
  pointsFor,
} from "./charts.js";
import { AlertBook, showAlertCount } from "./alertbook.js";
import { Diagnosis, diagnosisUrl } from "./diagnosis.js";
import { getJson, queryUrl, setText, showError } from "./dom.js";
import { count, duration, localInput, span } from "./format.js";
import { connect } from "./live.js";

const SPANS = { hour: 3_600_000, day: 86_400_000, week: 7 * 86_400_000, month: 30 * 86_400_000 };
// The partition series the charts draw: the API leaves the others out.
const DRAWN = "partition_watermark_ms,offset_lag,late_records";
// What the partition charts were read from, as the API says.
const RESOLUTIONS = {
  last_batch: "every batch, partitions at each interval's last batch",
  minute: "from per-minute rollups: each interval's largest lag and any stall",
  hour: "from per-hour rollups: each interval's largest lag and any stall",
};
const queryId = document.querySelector("main").dataset.query;
const $ = (id) => document.getElementById(id);
const form = $("range");

const palette = new Palette();
const figure = $("event-time-chart");
const charts = {
  eventTime: eventTimeChart(figure, palette),
  age: new Chart($("age-chart"), {
    lines: [
      { key: "age", label: "watermark age", stroke: "#7aa2ff", format: "duration" },
      { key: "skew", label: "skew", stroke: "#f5a524", format: "duration" },
    ],
    axes: [{ format: "duration" }],
  }),
  lag: partitionChart($("lag-chart"), palette, "count"),
  late: new Chart($("late-chart"), {
    lines: [
      { key: "late", label: "late records (exact)", stroke: "#ff6b6b", spanGaps: false },
      {
        key: "dropped",
        label: "Spark: dropped by W",
        stroke: "#f5a524",
        dash: [6, 4],
        spanGaps: false,
      },
    ],
    axes: [{ format: "count" }],
  }),
  batches: new Chart($("batches-chart"), {
    lines: [
      { key: "max", label: "duration, max", stroke: "#ff9f7a", format: "duration", scale: "ms" },
      { key: "avg", label: "duration, avg", stroke: "#7aa2ff", format: "duration", scale: "ms" },
      { key: "rows", label: "input rows", stroke: "#3ddc97", scale: "rows" },
    ],
    axes: [
      { format: "duration", scale: "ms" },
      { format: "count", scale: "rows", side: "right" },
    ],
  }),
};

const diagnosis = new Diagnosis();

// The range in the page's address: a preset (?range=day) or epoch milliseconds (?from=&to=).
function rangeOfAddress() {
  const params = new URLSearchParams(window.location.search);
  const from = Number(params.get("from"));
  const to = Number(params.get("to"));
  if (params.has("from") && params.has("to") && from < to) return { from, to };
  return { preset: SPANS[params.get("range")] ? params.get("range") : "hour" };
}

// Presets end just after the query's newest batch, as the API's default range does: a query
// that stopped yesterday opens on its last hour.
async function resolve(range) {
  if (!range.preset) return range;
  const detail = await getJson(queryUrl(queryId));
  const to = detail.latest_batch ? detail.latest_batch.batch_time_ms + 1 : detail.now_ms;
  return { preset: range.preset, from: to - SPANS[range.preset], to };
}

function remember(range) {
  const params = range.preset ? `range=${range.preset}` : `from=${range.from}&to=${range.to}`;
  window.history.replaceState(null, "", `?${params}`);
  for (const button of form.querySelectorAll("[data-range]")) {
    button.setAttribute("aria-pressed", String(button.dataset.range === range.preset));
  }
  form.elements.from.value = localInput(range.from);
  form.elements.to.value = localInput(range.to);
  $("csv").href = `${queryUrl(queryId, "history.csv")}?from=${range.from}&to=${range.to}`;
}

function loadCharts(series, partitions) {
  const watermarks = align([
    { key: "watermark", times: series.time_ms, values: series.watermark_ms },
    ...partitionSources(partitions, "partition_watermark_ms"),
  ]);
  charts.eventTime.load(watermarks.xs, watermarks.columns);
  charts.age.load(series.time_ms, { age: series.watermark_age_max_ms, skew: series.skew_max_ms });
  const lags = align(partitionSources(partitions, "offset_lag"));
  charts.lag.load(lags.xs, lags.columns);
  const totals = lateTotals(partitions);
  charts.late.load(series.time_ms, {
    late: series.time_ms.map((t) => (totals.has(t) ? totals.get(t) : null)),
    dropped: series.rows_dropped_by_watermark,
  });
  charts.batches.load(series.time_ms, {
    max: series.duration_max_ms,
    avg: series.duration_avg_ms,
    rows: series.input_rows,
  });
}

// Each range asked for gets a number: answers to an earlier one that arrive late are dropped.
let asked = 0;

// The diagnosis over the range, read once the charts are in, so that they show first.
async function showDiagnosis(range, mine) {
  const words = `from ${span(range.from, range.to)}`;
  diagnosis.reading(words);
  const body = await getJson(diagnosisUrl(queryId, range.from, range.to));
  if (mine === asked) diagnosis.show(body, words);
}

async function show(wanted) {
  asked += 1;
  const mine = asked;
  const range = await resolve(wanted);
  if (mine !== asked) return;
  remember(range);
  setText($("range-note"), "Loading…");
  const query = `from=${range.from}&to=${range.to}&points=${pointsFor(figure)}`;
  const [batches, partitions] = await Promise.all([
    getJson(`${queryUrl(queryId, "batches")}?${query}`),
    getJson(`${queryUrl(queryId, "partitions", "history")}?${query}&fields=${DRAWN}`),
  ]);
  if (mine !== asked) return;
  loadCharts(batches.series, partitions.partitions);
  const total = batches.series.batches.reduce((a, b) => a + b, 0);
  setText(
    $("range-note"),
    `${span(range.from, range.to)} (local time): ${count(total)} batches, ` +
      `${count(Object.keys(partitions.partitions).length)} partitions, ` +
      `in intervals of ${duration(batches.bucket_ms)}; ${RESOLUTIONS[partitions.resolution]}`,
  );
  showDiagnosis(range, mine).catch((error) => showError(error.message));
}

function showing(range) {
  show(range).catch((error) => {
    setText($("range-note"), "");
    showError(error.message);
  });
}

for (const button of form.querySelectorAll("[data-range]")) {
  button.addEventListener("click", () => showing({ preset: button.dataset.range }));
}
form.addEventListener("submit", (event) => {
  event.preventDefault();
  const from = new Date(form.elements.from.value).getTime();
  const to = new Date(form.elements.to.value).getTime();
  if (!(from < to)) showError("Choose a start before the end.");
  else showing({ from, to });
});

showing(rangeOfAddress());

// Only the header's count of firing alerts is live here.
const book = new AlertBook();
showAlertCount(book);
book.listen(connect((socket) => book.join(socket)));
