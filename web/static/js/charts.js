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

// The width inside the figure's padding, where the plot goes.
function widthOf(figure) {
  const style = getComputedStyle(figure);
  const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
  return Math.max(200, figure.clientWidth - padding);
}

// Keep a plot as wide as its figure.
function followWidth(figure, plot) {
  new ResizeObserver(() => {
    if (plot.width !== widthOf(figure)) plot.setSize({ width: widthOf(figure), height: HEIGHT });
  }).observe(figure);
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

// Room beside a value axis's labels: its ticks (10 px), the gap to the labels (5 px) and a
// little air.
const TICKS_AND_GAP = 19;
const measurer = document.createElement("canvas").getContext("2d");

// A value axis as wide as its longest label ("15.75 min", "400,000"), at least `least`
// pixels: a fixed width cut long labels off at the chart's edge.
function fitLabels(least) {
  return (u, values) => {
    if (!values) return least;
    measurer.font = AXIS.font;
    const widths = values.filter((v) => v !== null).map((v) => measurer.measureText(v).width);
    return Math.max(least, Math.ceil(Math.max(0, ...widths)) + TICKS_AND_GAP);
  };
}

function axisOf(axis) {
  const format = FORMATS[axis.format];
  return {
    ...AXIS,
    scale: axis.scale || "y",
    side: axis.side === "right" ? 1 : 3,
    grid: axis.side === "right" ? { show: false } : GRID,
    size: fitLabels(format.size),
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
    this.end = null;
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
        hooks: {
          // Where the time axis ends, on the figure.
          setScale: [
            (u, key) => {
              if (key === "x") figure.dataset.end = String(u.scales.x.max);
            },
          ],
        },
      },
      this.data,
      figure,
    );
    followWidth(figure, this.plot);
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
    const xs = this.data[0];
    this.plot.setData(this.data);
    if (this.end !== null && xs.length && this.end > xs[xs.length - 1])
      this.plot.setScale("x", { min: xs[0], max: this.end });
    this.figure.dataset.points = String(xs.length);
  }

  // Let the time axis run on past the last point to `end` (ms; null: end at the data).
  runTo(end) {
    if (end === this.end) return;
    this.end = end;
    this.draw();
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
    scales: { y: { time: true, range: standingStill } },
  });
}

// A watermark that does not move, and nothing else drawn beside it, is a flat line a minute
// from either edge: over a range of no height uPlot draws nothing at all.
const STILL_MARGIN_MS = 60_000;

function standingStill(u, min, max) {
  if (min === null || min !== max) return [min, max];
  return [min - STILL_MARGIN_MS, max + STILL_MARGIN_MS];
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
      width: 120,
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

// Ticks at the edges between buckets, each labelled with the distance where the next bucket
// starts; every second, fourth… edge, counted from the last, when they would be closer than
// TICK_SPACE pixels.
const TICK_SPACE = 90;

function bucketEdges(u) {
  const buckets = u.data[0];
  if (!buckets.length) return [];
  const edges = [...buckets.map((b) => b - 0.5), buckets[buckets.length - 1] + 0.5];
  const width = u.bbox.width / devicePixelRatio;
  const every = 2 ** Math.max(0, Math.ceil(Math.log2((edges.length * TICK_SPACE) / width)));
  return edges.filter((edge, i) => (edges.length - 1 - i) % every === 0);
}

// Records per log-scale bucket of distance from the watermark, as bars: `load` takes the
// API's buckets ({bucket, min_ms, max_ms, records}, consecutive); the axis marks the
// distances where buckets meet, and the legend a bucket's range.
export class Histogram {
  constructor(figure, { label, stroke }) {
    this.figure = figure;
    this.buckets = new Map();
    const edgeOf = (edge) => this.edgeOf(edge);
    this.plot = new uPlot(
      {
        width: widthOf(figure),
        height: HEIGHT,
        // Set in load(): uPlot widens the range of a single point on its own.
        scales: { x: { time: false, auto: false } },
        // Room on the right for the label of the last edge.
        padding: [null, 40, null, null],
        axes: [
          { ...AXIS, size: 40, splits: bucketEdges, values: (u, edges) => edges.map(edgeOf) },
          axisOf({ format: "count" }),
        ],
        series: [
          { label: "distance", value: (u, v) => this.rangeOf(v) },
          {
            label,
            stroke,
            fill: stroke,
            width: 0,
            paths: uPlot.paths.bars({ size: [0.9, 120] }),
            points: { show: false },
            value: (u, v) => count(v),
          },
        ],
      },
      [[], []],
      figure,
    );
    followWidth(figure, this.plot);
  }

  // The distance at an edge: where the bucket after it starts, or the one before it ends.
  edgeOf(edge) {
    const after = this.buckets.get(edge + 0.5);
    if (after) return duration(after.min_ms);
    const before = this.buckets.get(edge - 0.5);
    return before ? duration(before.max_ms + 1) : "";
  }

  rangeOf(number) {
    const bucket = this.buckets.get(number);
    if (!bucket) return "—";
    const { min_ms: low, max_ms: high } = bucket;
    return low === high ? duration(low) : `${duration(low)} to ${duration(high)}`;
  }

  load(buckets) {
    this.buckets = new Map(buckets.map((b) => [b.bucket, b]));
    const numbers = buckets.map((b) => b.bucket);
    this.plot.setData([numbers, buckets.map((b) => b.records)]);
    // Half a bucket either side of the first and the last.
    if (numbers.length) {
      this.plot.setScale("x", { min: numbers[0] - 0.5, max: numbers[numbers.length - 1] + 0.5 });
    }
    this.figure.dataset.bars = String(buckets.filter((b) => b.records > 0).length);
  }
}
