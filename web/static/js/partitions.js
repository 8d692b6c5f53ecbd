// The query page's partition table: one row per source partition, updated cell by cell.
import { byName } from "./charts.js";
import { el, elWrapping, setPhrasedText, setText } from "./dom.js";
import { age, clock, count, rate } from "./format.js";
import { behindText, catchUpText, verdictBadge } from "./backlog.js";

const SAMPLES_SHOWN = 2;
const TEXT_CELLS = new Set(["state", "behind"]);

function sampleText([key, eventMs, offset]) {
  const at = offset === null || offset === undefined ? "" : ` #${offset}`;
  return `${key === null || key === undefined ? "—" : key} @ ${clock(eventMs)}${at}`;
}

export class PartitionTable {
  constructor(tbody, palette) {
    this.tbody = tbody;
    this.palette = palette;
    this.rows = new Map();
  }

  row(name) {
    if (this.rows.has(name)) return this.rows.get(name);
    const tr = el("tr", "partition-row");
    const cells = {};
    const nameCell = el("td", "partition");
    const swatch = el("span", "swatch");
    swatch.style.background = this.palette.colour(name);
    nameCell.append(swatch, elWrapping("span", "partition-name", name));
    tr.append(nameCell);
    for (const field of ["state", "end", "latest", "lag", "behind"]) {
      cells[field] = tr.appendChild(el("td", TEXT_CELLS.has(field) ? "flags" : "num"));
    }
    // How long the backlog has waited, and its verdict on a line of its own under it.
    cells.age = cells.behind.appendChild(el("div"));
    cells.verdict = cells.behind.appendChild(el("div"));
    cells.rate = tr.appendChild(el("td", "num"));
    // Times may wrap between their date and time, the time lag after "ahead of the clock".
    cells.max = tr.appendChild(el("td", "num clock"));
    cells.wp = tr.appendChild(el("td", "num clock"));
    cells.timeLag = tr.appendChild(el("td", "num")).appendChild(el("span", "wraps"));
    cells.lateWindow = tr.appendChild(el("td", "num"));
    cells.lateTotal = tr.appendChild(el("td", "num"));
    const row = { tr, cells, lateWindow: 0, samples: [], samplesRow: null, status: "" };
    this.rows.set(name, row);
    const names = [...this.rows.keys()].sort(byName);
    const next = this.rows.get(names[names.indexOf(name) + 1]);
    this.tbody.insertBefore(tr, next ? next.tr : null);
    return row;
  }

  // Partitions of the API's query page: they carry the late window's figures.
  load(partitions) {
    for (const p of partitions) {
      const row = this.row(p.partition);
      row.lateWindow = p.late_records_window;
      row.samples = p.recent_late_samples;
      this.update(row, p);
    }
  }

  // Partitions of a live batch: the window's count grows by the batch's late records, and the
  // samples shown are those of the newest batch that dropped some, as the API has them.
  apply(partitions) {
    for (const p of partitions) {
      const row = this.row(p.partition);
      if (p.late_records) {
        row.lateWindow += p.late_records;
        row.samples = p.late_samples;
      }
      this.update(row, p);
    }
  }

  update(row, p) {
    const { cells } = row;
    this.status(row, p);
    setText(cells.end, count(p.end_offset));
    setText(cells.latest, count(p.latest_offset));
    setText(cells.lag, count(p.offset_lag));
    this.backlog(row, p);
    setText(cells.rate, rate(p.rows_per_second));
    setPhrasedText(cells.max, clock(p.max_event_time_ms));
    setPhrasedText(cells.wp, clock(p.partition_watermark_ms));
    setPhrasedText(cells.timeLag, age(p.time_lag_ms));
    setText(cells.lateWindow, count(row.lateWindow));
    cells.lateWindow.classList.toggle("bad", row.lateWindow > 0);
    setText(cells.lateTotal, count(p.late_records_total));
    this.samples(row);
  }

  // The partition's status as the server judged it (`wmon partitions` says the same); a live
  // batch carries none, and the row keeps the last until the table is read again.
  status(row, p) {
    if (!p.status || p.status === row.status) return;
    row.status = p.status;
    const badge = el("span", `badge badge-${p.status}`, p.status.replaceAll("_", " "));
    row.cells.state.replaceChildren(badge);
    row.tr.classList.toggle("problem", p.status !== "ok" && p.status !== "idle");
  }

  // How long the backlog's head has waited (as of the batch or the page's load), its verdict
  // and, in its title, when it will be caught up. A live batch of a source without latest
  // offsets says nothing of it: the row keeps what it had.
  backlog(row, p) {
    if (!("verdict" in p)) return;
    setText(row.cells.age, behindText(p.backlog_age_ms, p.backlog_age));
    verdictBadge(row.cells.verdict, p.verdict);
    row.cells.verdict.title = catchUpText(p.backlog_records, p.catch_up_ms, p.verdict);
  }

  // The latest late records fold under their partition's row, in a row of their own across
  // the table, made when the partition first has some and hidden while it has none.
  samples(row) {
    const shown = row.samples
      .slice(0, SAMPLES_SHOWN)
      .map((s) => elWrapping("span", "sample", sampleText(s)));
    if (!row.samplesRow && !shown.length) return;
    if (!row.samplesRow) {
      row.samplesRow = el("tr", "samples-row");
      const cell = row.samplesRow.appendChild(el("td"));
      cell.colSpan = this.tbody.parentElement.tHead.rows[0].cells.length;
      row.cells.samples = cell.appendChild(el("div", "samples"));
      row.tr.after(row.samplesRow);
    }
    row.cells.samples.replaceChildren(el("span", "samples-label", "Latest late records"), ...shown);
    row.samplesRow.hidden = !shown.length;
  }
}
