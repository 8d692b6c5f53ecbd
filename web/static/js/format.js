// How times, durations and counts read on the pages.

const DASH = "—";

export function count(value) {
  return value === null || value === undefined ? DASH : Math.round(value).toLocaleString("en");
}

export function rate(value) {
  if (value === null || value === undefined) return DASH;
  return value >= 100 ? count(value) : value.toFixed(1);
}

function compound(sign, big, bigUnit, small, smallUnit) {
  return small ? `${sign}${big} ${bigUnit} ${small} ${smallUnit}` : `${sign}${big} ${bigUnit}`;
}

export function duration(ms) {
  if (ms === null || ms === undefined) return DASH;
  const sign = ms < 0 ? "−" : "";
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${sign}${Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(abs / 1_000).toFixed(abs < 10_000 ? 1 : 0)} s`;
  if (abs < 3_600_000) {
    return compound(sign, Math.floor(abs / 60_000), "min", Math.floor((abs % 60_000) / 1_000), "s");
  }
  if (abs < 86_400_000) {
    return compound(
      sign,
      Math.floor(abs / 3_600_000),
      "h",
      Math.floor((abs % 3_600_000) / 60_000),
      "min",
    );
  }
  return compound(
    sign,
    Math.floor(abs / 86_400_000),
    "d",
    Math.floor((abs % 86_400_000) / 3_600_000),
    "h",
  );
}

// An age, now − a time: how long ago it was, or how far ahead of the clock it is ("ahead of
// the clock by 1 h 57 min") when the time is still to come.
export function age(ms) {
  if (ms === null || ms === undefined) return DASH;
  return ms < 0 ? `ahead of the clock by ${duration(-ms)}` : duration(ms);
}

// How far one time is behind another, given the difference: "4.3 s behind", or "4.3 s ahead"
// when the difference is negative.
export function behind(ms) {
  if (ms === null || ms === undefined) return DASH;
  return ms < 0 ? `${duration(-ms)} ahead` : `${duration(ms)} behind`;
}

// How much longer (+) or shorter (−) one duration is than another, given the difference.
export function change(ms) {
  if (ms === null || ms === undefined) return DASH;
  if (ms === 0) return "±0";
  return ms > 0 ? `+${duration(ms)}` : duration(ms);
}

// A share in whole percent; never 0% or 100% unless it is exactly that.
export function percent(part, whole) {
  if (!whole) return DASH;
  const value = (100 * part) / whole;
  if (value > 0 && value < 1) return "<1%";
  if (value > 99 && value < 100) return ">99%";
  return `${Math.round(value)}%`;
}

const UNITS = [
  [172_800_000, 86_400_000, "d"],
  [7_200_000, 3_600_000, "h"],
  [120_000, 60_000, "min"],
  [1_000, 1_000, "s"],
  [0, 1, "ms"],
];

// Durations in one unit, the one that suits the largest, with as many decimals as the step
// between ticks needs, for the ticks of a chart's axis.
export function durationTicks(values) {
  const largest = Math.max(...values.map(Math.abs));
  const [, size, unit] = UNITS.find(([from]) => largest >= from) || UNITS[UNITS.length - 1];
  const step = values.length > 1 ? Math.abs(values[1] - values[0]) / size : 1;
  const decimals = step >= 1 || step === 0 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
  return values.map((ms) => `${(ms / size).toFixed(decimals)} ${unit}`);
}

function pad(number) {
  return String(number).padStart(2, "0");
}

function date(moment) {
  return `${moment.getFullYear()}-${pad(moment.getMonth() + 1)}-${pad(moment.getDate())}`;
}

export function clock(ms) {
  if (ms === null || ms === undefined) return DASH;
  const moment = new Date(ms);
  if (moment.toDateString() === new Date().toDateString()) return timeOfDay(moment);
  return `${date(moment)} ${timeOfDay(moment)}`;
}

// A time range: both ends with their dates when they fall on different days ("2026-10-28
// 14:00:00 to 2026-11-27 14:00:00"), else as clock writes them.
export function span(fromMs, toMs) {
  const [from, to] = [new Date(fromMs), new Date(toMs)];
  if (from.toDateString() === to.toDateString()) return `${clock(fromMs)} to ${clock(toMs)}`;
  return `${date(from)} ${timeOfDay(from)} to ${date(to)} ${timeOfDay(to)}`;
}

function timeOfDay(moment) {
  return `${pad(moment.getHours())}:${pad(moment.getMinutes())}:${pad(moment.getSeconds())}`;
}

// An axis tick: the date for steps of a day or more, else the time to the minute or second.
export function tick(ms, stepMs) {
  const m = new Date(ms);
  if (stepMs >= 86_400_000) return date(m);
  const minutes = `${pad(m.getHours())}:${pad(m.getMinutes())}`;
  return stepMs >= 60_000 ? minutes : `${minutes}:${pad(m.getSeconds())}`;
}

// A value for <input type="datetime-local">, in local time.
export function localInput(ms) {
  const m = new Date(ms);
  return `${date(m)}T${pad(m.getHours())}:${pad(m.getMinutes())}:${pad(m.getSeconds())}`;
}
