// uPlot charts over time, shared by the query and history pages. A chart is made once; new
// data goes in with setData, live points are appended and the oldest dropped beyond a cap.
import uPlot from "/vendor/uPlot.esm.js";

import { clock, count, duration, durationTicks, tick } from "./format.js";

const LIVE_CAP = 1_500;
const HEIGHT = 260;
const GRID = { stroke: "#263041", width: 1 };
const AXIS = { stroke: "#b8c2d0", grid: GRID, ticks: GRID, font: "14px system-ui, sans-serif" };

// Steps of whole numbers only, for axes that count things.
const WHOLE_STEPS = Array.from({ length: 13 }, (_, power) =>
  [1, 2, 5].map((m) => m * 10 ** power),
).flat();

// Steps of whole seconds and up for time axes: ticks read to the second at most.
const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const TIME_STEPS = [
  ...[1, 2, 5, 10, 15, 30].map((n) => n * SECOND),
  ...[1, 2, 5, 10, 15, 30].map((n) => n * MINUTE),
  ...[1, 2, 3, 4, 6, 8, 12].map((n) => n * HOUR),
  ...[1, 2, 3, 7, 14, 28, 56, 112, 364].map((n) => n * DAY),
];

const FORMATS = {
  time: {
    axis: (u, splits, axis, space, step) => splits.map((v) => tick(v, step)),
    value: (u, v) => clock(v),
    size: 80,
    steps: TIME_STEPS,
  },
  duration: { axis: (u, splits) => durationTicks(splits), value: (u, v) => duration(v), size: 80 },
  count: {
    axis: (u, splits) => splits.map(count),
    value: (u, v) => count(v),
    size: 70,
    steps: WHOLE_STEPS,
  },
};

// A colour per partition, in the order partitions are first seen, the same on table and chart.
export class Palette {
  constructor() {
    this.colours = new Map();
  }

  colour(key) {
    if (!this.colours.has(key)) {
      const hue = (this.colours.size * 137.508 + 200) % 360;
      this.colours.set(key, `hsl(${hue.toFixed(0)} 75% 62%)`);
    }
    return this.colours.get(key);
  }
}

export function byName(a, b) {
  return a.localeCompare(b, "en", { numeric: true });
}

// How many points to ask the API for: one per two pixels of the chart's width. The lines look
// the same as with one per pixel, and a day of 64 partitions comes in half the time.
export function pointsFor(figure) {
  return Math.max(50, Math.min(5_000, Math.round(figure.clientWidth / 2)));
}

function widthOf(figure) {
  return Math.max(200, figure.clientWidth);
}

function seriesOf(line) {
  const format = FORMATS[line.format || "count"];
  return {
    label: line.label,
    stroke: line.stroke,
    width: line.width || 1.5,
    dash: line.dash,
    scale: line.scale || "y",
    spanGaps: line.spanGaps !== false,
    value: format.value,
  };
}

function axisOf(axis) {
  const format = FORMATS[axis.format];
  return {
    ...AXIS,
    scale: axis.scale || "y",
    side: axis.side === "right" ? 1 : 3,
    grid: axis.side === "right" ? { show: false } : GRID,
    size: format.size,
    values: format.axis,
    incrs: format.steps,
  };
}

// Lines keyed by name: `lines` are drawn over the lines that `dynamic` adds as their keys
// first appear (one per partition), so the query watermark stays on top.
export class Chart {
  constructor(figure, { lines = [], axes, scales = {}, dynamic = null }) {
    this.figure = figure;
    this.dynamic = dynamic;
    this.keys = lines.map((line) => line.key);
    this.added = 0;
    this.data = [[], ...lines.map(() => [])];
    this.ids = [];
    this.plot = new uPlot(
      {
        width: widthOf(figure),
        height: HEIGHT,
        ms: 1,
        scales: { x: { time: true }, ...scales },
        axes: [
          { ...AXIS, size: 40, space: 90, values: FORMATS.time.axis, incrs: TIME_STEPS },
          ...axes.map(axisOf),
        ],
        series: [{ value: (u, v) => clock(v) }, ...lines.map(seriesOf)],
        cursor: { focus: { prox: 20 } },
        focus: { alpha: 0.4 },
      },
      this.data,
      figure,
    );
    new ResizeObserver(() => {
      if (this.plot.width !== widthOf(figure)) {
        this.plot.setSize({ width: widthOf(figure), height: HEIGHT });
      }
    }).observe(figure);
  }

  column(key) {
    let index = this.keys.indexOf(key);
    if (index < 0) {
      if (!this.dynamic) return -1;
      index = this.added;
      this.added += 1;
      this.keys.splice(index, 0, key);
      this.data.splice(index + 1, 0, new Array(this.data[0].length).fill(null));
      this.plot.addSeries(seriesOf(this.dynamic(key)), index + 1);
    }
    return index + 1;
  }

  // Replace everything: `xs` and, per key, values aligned with them. The chart keeps copies:
  // live points are spliced into its arrays, which other charts may have been given too.
  load(xs, columns) {
    for (const key of Object.keys(columns).sort(byName)) this.column(key);
    this.data[0] = [...xs];
    this.keys.forEach((key, i) => {
      this.data[i + 1] = columns[key] ? [...columns[key]] : new Array(xs.length).fill(null);
    });
    this.ids = new Array(xs.length).fill(null);
    this.draw();
  }

  // One live point, e.g. a batch; the same `id` again (a replayed batch) replaces it.
  push(x, values, id) {
    let at = id === undefined ? -1 : this.ids.lastIndexOf(id);
    if (at < 0) {
      at = this.data[0].length;
      while (at > 0 && this.data[0][at - 1] > x) at -= 1;
      for (const column of this.data) column.splice(at, 0, null);
      this.data[0][at] = x;
      this.ids.splice(at, 0, id === undefined ? null : id);
    }
    for (const [key, value] of Object.entries(values)) {
      const column = this.column(key);
      if (column > 0) this.data[column][at] = value;
    }
    this.trim();
    this.draw();
  }

  // Beyond the cap, drop the oldest tenth at once rather than one point per push.
  trim() {
    const excess = this.data[0].length - LIVE_CAP;
    if (excess <= 0) return;
    const drop = excess + Math.floor(LIVE_CAP / 10);
    for (const column of this.data) column.splice(0, drop);
    this.ids.splice(0, drop);
  }

  draw() {
    this.plot.setData(this.data);
    this.figure.dataset.points = String(this.data[0].length);
  }
}

// Columns from series with their own times, aligned on the union of the times.
export function align(sources) {
  const times = new Set();
  for (const source of sources) for (const t of source.times) times.add(t);
  const xs = [...times].sort((a, b) => a - b);
  const index = new Map(xs.map((t, i) => [t, i]));
  const columns = {};
  for (const { key, times: at, values } of sources) {
    const column = columns[key] || new Array(xs.length).fill(null);
    at.forEach((t, i) => {
      column[index.get(t)] = values[i];
    });
    columns[key] = column;
  }
  return { xs, columns };
}

// One source per partition of a /partitions/history answer, for one of its fields.
export function partitionSources(partitions, field) {
  return Object.entries(partitions).map(([name, series]) => ({
    key: name,
    times: series.time_ms,
    values: series[field],
  }));
}

// Late records per bucket, summed over the partitions, by bucket time.
export function lateTotals(partitions) {
  const totals = new Map();
  for (const series of Object.values(partitions)) {
    series.time_ms.forEach((t, i) => {
      const late = series.late_records[i];
      if (late !== null) totals.set(t, (totals.get(t) || 0) + late);
    });
  }
  return totals;
}

function partitionLine(palette) {
  return (key) => ({ key, label: key, stroke: palette.colour(key), width: 1.25 });
}

const WATERMARK_LINE = {
  key: "watermark",
  label: "W (query)",
  stroke: "#ffffff",
  width: 3,
  format: "time",
};

export function eventTimeChart(figure, palette) {
  return new Chart(figure, {
    lines: [WATERMARK_LINE],
    dynamic: (key) => ({ ...partitionLine(palette)(key), format: "time" }),
    axes: [{ format: "time" }],
    scales: { y: { time: true } },
  });
}

export function partitionChart(figure, palette, format) {
  return new Chart(figure, {
    dynamic: (key) => ({ ...partitionLine(palette)(key), format }),
    axes: [{ format }],
  });
}

// A small trend line without axes, legend or cursor, for a table cell.
export function sparkline(cell, colour) {
  return new uPlot(
    {
      width: 160,
      height: 36,
      ms: 1,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: false } },
      axes: [{ show: false }, { show: false }],
      series: [{}, { stroke: colour, width: 2, spanGaps: true, points: { show: false } }],
    },
    [[], []],
    cell,
  );
}
