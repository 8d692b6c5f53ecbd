// Building and updating the page. Every value, names from jobs included, goes in as text.

export const STATUSES = [
  "failed",
  "error",
  "stalled",
  "lagging",
  "idle",
  "waiting",
  "healthy",
  "terminated",
];

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export function setText(node, text) {
  const value = text === undefined || text === null ? "" : String(text);
  if (node.textContent !== value) node.textContent = value;
}

// Long technical tokens (class names, paths, ids) in text that wraps: tokens of `long`
// characters or more (LONG_TOKEN unless said) may break after their dots, slashes,
// underscores, colons, commas and equals signs, where a <wbr> goes; a piece longer than
// LONG_TOKEN without any (a hash), every LONG_TOKEN characters. The text stays text: the
// node's textContent is `text`.
const LONG_TOKEN = 24;
const BREAK_AFTER = /(?<=[./_:=,;\]\)])(?=.)/;
const SLICE = new RegExp(`.{1,${LONG_TOKEN}}`, "gsu");

function pieces(token, long) {
  if (token.length < long) return [token];
  return token
    .split(BREAK_AFTER)
    .flatMap((piece) => (piece.length <= LONG_TOKEN ? [piece] : piece.match(SLICE)));
}

export function setWrappingText(node, text, long = LONG_TOKEN) {
  const value = text === undefined || text === null ? "" : String(text);
  if (node.textContent === value) return;
  const parts = [];
  const add = (piece) => {
    // The browser may break a line after a hyphen: "scooter-17" keeps to one.
    if (piece.includes("-")) parts.push(el("span", "nowrap", piece));
    else if (typeof parts.at(-1) === "string") parts[parts.length - 1] += piece;
    else parts.push(piece);
  };
  for (const token of value.split(/(\s+)/)) {
    pieces(token, long).forEach((piece, i) => {
      if (i > 0) parts.push(document.createElement("wbr"));
      add(piece);
    });
  }
  node.replaceChildren(...parts.filter((part) => part !== ""));
}

// Text whose durations ("1 h 57 min", "≥ 5 min") and dates ("2026-12-02") each keep to one
// line, while the rest may wrap between its words: "ahead of the clock by / 1 h 57 min"; the
// words between them in a span of their own (a card sets them apart). The node's textContent
// is `text`.
const PHRASE = /(?:≥ )?−?\d[\d.,]* (?:ms|s|min|h|d)\b(?: \d+ (?:s|min|h)\b)?|\d{4}-\d\d-\d\d/gu;

export function setPhrasedText(node, text) {
  const value = text === undefined || text === null ? "" : String(text);
  if (node.textContent === value) return;
  const parts = [];
  let last = 0;
  for (const match of value.matchAll(PHRASE)) {
    parts.push(words(value.slice(last, match.index)), el("span", "nowrap", match[0]));
    last = match.index + match[0].length;
  }
  if (!parts.length) {
    node.textContent = value;
    return;
  }
  parts.push(words(value.slice(last)));
  node.replaceChildren(...parts.filter((part) => part !== ""));
}

function words(text) {
  return text.trim() ? el("span", "words", text) : text;
}

// An element of wrapping text, as setWrappingText puts it.
export function elWrapping(tag, className, text) {
  const node = el(tag, className);
  setWrappingText(node, text);
  return node;
}

export function setBadge(node, status) {
  node.className = `badge badge-${status}`;
  setText(node, status);
}

export async function getJson(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `${url}: HTTP ${response.status}`);
  return body;
}

export function queryUrl(id, ...parts) {
  return ["/api/queries", encodeURIComponent(id), ...parts].join("/");
}

export function showError(message) {
  let box = document.getElementById("page-error");
  if (!box) {
    box = el("p", "notice");
    box.id = "page-error";
    document.querySelector("main").prepend(box);
  }
  setText(box, message);
}

// The live connection's state, shown in the header.
export function showConnection(state) {
  const node = document.getElementById("connection");
  node.hidden = false;
  node.className = `connection connection-${state}`;
  setText(node, state === "live" ? "live" : "reconnecting…");
}
