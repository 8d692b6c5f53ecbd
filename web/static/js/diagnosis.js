// The diagnosis over a range of batches, on the query and history pages (templates/
// _diagnosis.html): which partition drove the watermark, future-dated records, the delay
// advisor and the lateness histograms; for the query page, the words of its banner when a
// future-dated record set the watermark, and of its watermark driver.
import { Histogram, byName } from "./charts.js";
import { el, elWrapping, getJson, queryUrl, setText } from "./dom.js";
import { change, clock, count, duration, percent } from "./format.js";

// Live refreshes: at most every REFRESH_MS, and never more often than SLOWER times the time
// the last answer took, so that a query with many partitions does not keep the server busy.
const REFRESH_MS = 5_000;
const SLOWER = 10;
const SAMPLES_SHOWN = 2;
const PARTITIONS_NAMED = 3;
const $ = (id) => document.getElementById(id);

function sum(values) {
  return values.reduce((a, b) => a + b, 0);
}

export function diagnosisUrl(queryId, from, to) {
  return `${queryUrl(queryId, "diagnosis")}?from=${from}&to=${to}`;
}

function recordText({ key, event_ms: eventMs, offset }) {
  const at = offset === null ? "" : ` #${offset}`;
  return `${key === null ? "—" : key} @ ${clock(eventMs)}${at}`;
}

function culprit(partition, record) {
  if (!record) return partition;
  const offset = record.offset === null ? "" : ` offset ${record.offset}`;
  return `${partition}${offset}, ${record.key === null ? "no key" : `key ${record.key}`}`;
}

// The banner's words when a future-dated record set the watermark of the latest batch, else
// null.
export function bannerText(latest) {
  const driver = latest && latest.driver;
  if (!driver || !driver.future_dated) return null;
  const who = culprit(driver.partition, driver.record);
  const ahead = latest.watermark_ahead_ms;
  if (ahead) return `The watermark is ${duration(ahead)} ahead of the clock because of ${who}`;
  return `The watermark was set by a record ${duration(driver.lead_ms)} ahead of the clock: ${who}`;
}

// Who set the latest batch's watermark, short for a card: the partition and, where measured,
// the record's key and offset; its event time is the watermark plus the delay.
export function driverText(latest) {
  const driver = latest && latest.driver;
  if (!driver) return "";
  if (!driver.record) return `set by ${driver.partition}`;
  const { key, offset } = driver.record;
  const at = offset === null ? "" : ` #${offset}`;
  return `set by ${driver.partition}: ${key === null ? "—" : key}${at}`;
}

// The record that set the watermark in full, for a hint: key, event time and offset.
export function driverRecordText(latest) {
  const record = latest && latest.driver && latest.driver.record;
  return record ? recordText(record) : "";
}

// The range the figures cover: where batches before its start are no longer kept, what is read
// from batches starts at the first one kept, and the lateness comes from the rollups.
export function rangeText(range, keptFromMs, latenessResolution) {
  if (keptFromMs === null || keptFromMs === undefined) return range;
  const kept =
    `batches are kept from ${clock(keptFromMs)}: ` +
    "the drivers and future-dated records start there";
  if (!latenessResolution || latenessResolution === "batch") return `${range} (${kept})`;
  return `${range} (${kept}; the lateness is read from the per-${latenessResolution} rollups)`;
}

// "t/0 drove the watermark in 92% of these batches (110 of 120); t/2 in 8% (10)."
export function sharesText(batches) {
  const total = sum(Object.values(batches));
  if (!total) return "";
  const ranked = Object.entries(batches).sort(([a, m], [b, n]) => n - m || byName(a, b));
  const [[top, most], ...rest] = ranked;
  const named = rest
    .slice(0, PARTITIONS_NAMED - 1)
    .map(([name, n]) => `; ${name} in ${percent(n, total)} (${count(n)})`);
  const others = rest.length - named.length;
  const more = others === 1 ? "1 more partition" : `${count(others)} more partitions`;
  const tail = others > 0 ? `; ${more} in the rest` : "";
  return (
    `${top} drove the watermark in ${percent(most, total)} of these batches ` +
    `(${count(most)} of ${count(total)})${named.join("")}${tail}.`
  );
}

function futureCell(future) {
  const cell = el("td", "future");
  if (!future) {
    cell.append(el("span", "muted", "none"));
    return cell;
  }
  const lead = future.lead_ms === null ? "" : `, up to ${duration(future.lead_ms)} ahead`;
  cell.append(el("div", "bad", `${count(future.records)}${lead}`));
  const samples = el("div", "samples");
  samples.append(
    ...future.samples
      .slice(0, SAMPLES_SHOWN)
      .map((s) => elWrapping("span", "sample", recordText(s))),
  );
  cell.append(samples);
  return cell;
}

// A delay that would have kept a share of the records, with how much longer (+) or shorter
// (−) than the delay in force it would keep state, under it; or that no delay keeps them.
function keepsCell({ delay_ms: delay, no_delay: noDelay }, delayNow) {
  if (noDelay) {
    const cell = el("td", "num bad", "no delay keeps these");
    cell.title = noDelay;
    return cell;
  }
  if (delay === null) return el("td", "num", "—");
  const cell = el("td", "num");
  cell.append(el("div", null, duration(delay)), el("div", "muted", change(delay - delayNow)));
  return cell;
}

function delayCells(lateness) {
  if (!lateness) return [0, 1, 2, 3].map(() => el("td", "num", "—"));
  const now = el("td", "num", duration(lateness.delay_ms));
  return [now, ...lateness.delays.map((d) => keepsCell(d, lateness.delay_ms))];
}

// Why no delay keeps some share of the records, as a sentence, or null when a delay does.
function noDelayText(lateness) {
  const advised = [lateness.query, ...lateness.partitions].filter(Boolean);
  const reason = advised.flatMap((l) => l.delays).find((d) => d.no_delay);
  return reason ? `${reason.no_delay[0].toUpperCase()}${reason.no_delay.slice(1)}.` : null;
}

// One row of the advisor: a partition's (or the query's) figures over the range.
function advisorRow(name, { drove, future, lateness }) {
  const tr = el("tr", name === null ? "whole" : null);
  const partition = el("td", "partition");
  partition.append(elWrapping("span", "partition-name", name === null ? "(query)" : name));
  tr.append(partition, el("td", "num", drove));
  tr.append(futureCell(future));
  tr.append(el("td", "num", lateness ? count(lateness.records) : "—"));
  const late = tr.appendChild(el("td", "num", lateness ? count(lateness.late_records) : "—"));
  late.classList.toggle("bad", Boolean(lateness && lateness.late_records));
  tr.append(...delayCells(lateness));
  return tr;
}

// The future-dated records of the whole query: how many, the largest lead, the samples.
function allFuture(items) {
  if (!items.length) return null;
  const leads = items.map((f) => f.lead_ms).filter((lead) => lead !== null);
  return {
    records: sum(items.map((f) => f.records)),
    lead_ms: leads.length ? Math.max(...leads) : null,
    samples: items.flatMap((f) => f.samples),
  };
}

export class Diagnosis {
  constructor({ onShow = () => {} } = {}) {
    this.onShow = onShow;
    this.body = null;
    this.refreshing = { at: 0, tookMs: 0, timer: null, url: null, range: "" };
    this.histograms = {
      late: new Histogram($("late-histogram"), { label: "late records", stroke: "#ff6b6b" }),
      slack: new Histogram($("slack-histogram"), { label: "on-time records", stroke: "#3ddc97" }),
    };
    this.pick = $("histogram-partition");
    this.pick.addEventListener("change", () => this.drawHistograms());
  }

  async load(url, range) {
    this.show(await getJson(url), range);
  }

  // Say that the figures of `range` are being read; those shown stay until they come.
  reading(range) {
    $("diagnosis").hidden = false;
    if (!this.body) $("diagnosis-figures").hidden = true;
    setText($("diagnosis-range"), `${range}: reading…`);
  }

  // Load `url` now or, if the last load was recent, later (see REFRESH_MS): a burst of
  // batches makes one request, for the newest range asked for.
  refresh(url, range, onError) {
    Object.assign(this.refreshing, { url, range });
    if (this.refreshing.timer !== null) return;
    const { at, tookMs } = this.refreshing;
    const wait = Math.max(0, at + Math.max(REFRESH_MS, SLOWER * tookMs) - Date.now());
    this.refreshing.timer = setTimeout(async () => {
      this.refreshing.timer = null;
      this.refreshing.at = Date.now();
      await this.load(this.refreshing.url, this.refreshing.range).catch(onError);
      this.refreshing.tookMs = Date.now() - this.refreshing.at;
    }, wait);
  }

  show(body, range) {
    this.body = body;
    const { driver_batches: drivers, future_dated: future, lateness } = body;
    const measured = lateness.query !== null || future.length > 0 || sum(Object.values(drivers));
    $("diagnosis").hidden = false;
    $("no-diagnosis").hidden = Boolean(measured);
    $("diagnosis-figures").hidden = !measured;
    const kept = body.batches_kept_from_ms;
    setText($("diagnosis-range"), rangeText(range, kept, body.lateness_resolution));
    setText($("driver-shares"), sharesText(drivers));
    this.showAdvisor(body);
    this.showPicks(lateness.partitions.map((p) => p.partition));
    this.drawHistograms();
    this.onShow(body);
  }

  showAdvisor({ driver_batches: drivers, future_dated: future, lateness }) {
    const total = sum(Object.values(drivers));
    const futures = new Map(future.map((f) => [f.partition, f]));
    const measured = new Map(lateness.partitions.map((p) => [p.partition, p]));
    const names = new Set([...Object.keys(drivers), ...futures.keys(), ...measured.keys()]);
    const rows = [...names].sort(byName).map((name) =>
      advisorRow(name, {
        drove: total ? `${percent(drivers[name] || 0, total)} (${count(drivers[name] || 0)})` : "—",
        future: futures.get(name),
        lateness: measured.get(name),
      }),
    );
    const whole = advisorRow(null, {
      drove: total ? `${count(total)} batches` : "—",
      future: allFuture(future),
      lateness: lateness.query,
    });
    document.querySelector("#advisor tbody").replaceChildren(whole, ...rows);
    const noDelay = noDelayText(lateness);
    $("advisor-no-delay").hidden = noDelay === null;
    setText($("advisor-no-delay"), noDelay);
  }

  // The histogram picker: the whole query, or one partition; the choice is kept.
  showPicks(names) {
    const known = [...this.pick.options].slice(1).map((option) => option.value);
    if (known.join("\n") === names.join("\n")) return;
    const chosen = this.pick.value;
    const options = names.map((name) => new Option(name, name));
    this.pick.replaceChildren(this.pick.options[0], ...options);
    this.pick.value = names.includes(chosen) ? chosen : "";
  }

  drawHistograms() {
    if (!this.body) return;
    const { lateness } = this.body;
    const chosen = lateness.partitions.find((p) => p.partition === this.pick.value);
    const shown = chosen || lateness.query;
    for (const kind of ["late", "slack"]) {
      const buckets = shown ? shown[kind] : [];
      this.histograms[kind].load(buckets);
      setText($(`${kind}-histogram-note`), buckets.length ? "" : "(none in this range)");
    }
  }
}
