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

// Long technical tokens (class names, paths, ids) in text that wraps: they may break after
// their dots, slashes, underscores, colons, commas and equals signs, where a <wbr> goes; a
// piece longer than LONG_PIECE without any (a hash), every LONG_TOKEN characters. The text
// stays text: the node's textContent is `text`.
const LONG_TOKEN = 24;
const LONG_PIECE = 32;
const BREAK_AFTER = /(?<=[./_:=,;\]\)])(?=.)/;
const SLICE = new RegExp(`.{1,${LONG_TOKEN}}`, "gsu");

function pieces(token) {
  if (token.length < LONG_TOKEN) return [token];
  return token
    .split(BREAK_AFTER)
    .flatMap((piece) => (piece.length <= LONG_PIECE ? [piece] : piece.match(SLICE)));
}

export function setWrappingText(node, text) {
  const value = text === undefined || text === null ? "" : String(text);
  if (node.textContent === value) return;
  const parts = [""];
  for (const token of value.split(/(\s+)/)) {
    pieces(token).forEach((piece, i) => {
      if (i > 0) parts.push(document.createElement("wbr"), "");
      parts[parts.length - 1] += piece;
    });
  }
  node.replaceChildren(...parts.filter((part) => part !== ""));
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
