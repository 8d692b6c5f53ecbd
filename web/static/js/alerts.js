// The Alerts page: the live alerts with their actions, the silences in force and the alerts
// that ended, kept up to date by `alert` events from the alerts room.
import { act, tokenForm } from "./actions.js";
import { AlertBook, bySeverity, isLive, showAlertCount } from "./alertbook.js";
import { AlertTable } from "./alerttable.js";
import { el, getJson, setText, showError } from "./dom.js";
import { clock } from "./format.js";
import { connect, serverNow } from "./live.js";

const HISTORY_LIMIT = 100;
const SILENCES_REFRESH_MS = 30_000;
const $ = (id) => document.getElementById(id);

const book = new AlertBook();
const ended = new Map();
let silences = [];
const silenceRows = new Map();

const live = new AlertTable($("live-alerts"), { onAction: afterAction });
const history = new AlertTable($("alert-history"), { actions: false });

function afterAction(alert) {
  if (alert) book.update(alert);
  else book.reload();
  loadSilences();
}

function showLive() {
  const alerts = book.live();
  live.render(alerts);
  $("no-live-alerts").hidden = alerts.length > 0;
  const firing = bySeverity(book.firing()).map(([severity, n]) => `${n} ${severity} firing`);
  const pending = alerts.length - book.firing().length;
  setText(
    $("live-count"),
    [...firing, pending ? `${pending} pending` : ""].filter(Boolean).join(" · "),
  );
}

function showHistory() {
  const sorted = [...ended.values()].sort(
    (a, b) => b.resolved_at_ms - a.resolved_at_ms || b.id - a.id,
  );
  for (const old of sorted.slice(HISTORY_LIMIT)) ended.delete(old.id);
  const alerts = sorted.slice(0, HISTORY_LIMIT);
  history.render(alerts);
  $("no-history").hidden = alerts.length > 0;
}

async function loadHistory() {
  const { alerts } = await getJson(`/api/alerts?state=all&limit=${HISTORY_LIMIT}`);
  for (const alert of alerts) if (!isLive(alert)) ended.set(alert.id, alert);
  showHistory();
}

function hear(event) {
  if (!isLive(event.alert)) {
    ended.set(event.alert.id, event.alert);
    showHistory();
  }
}

// A query's name as the alerts have it; a silence knows only the id.
function queryName(queryId) {
  const known = [...book.alerts.values(), ...ended.values()].find((a) => a.query_id === queryId);
  return known ? known.query || queryId : queryId;
}

function silenceRow(silence) {
  const tr = el("tr");
  const query = el("td");
  if (silence.query_id) {
    const link = query.appendChild(el("a", "query-link"));
    link.href = `/queries/${encodeURIComponent(silence.query_id)}`;
  } else {
    setText(query, "any");
  }
  const message = el("p", "action-message");
  const lift = el("button", null, "Lift");
  lift.type = "button";
  lift.addEventListener("click", async () => {
    const result = await act("DELETE", `/api/silences/${silence.id}`);
    message.className = `action-message ${result.ok ? "done" : "refused"}`;
    setText(message, result.ok ? "Lifted." : result.message);
    if (result.ok) afterAction(null);
  });
  const actions = el("td", "actions");
  actions.append(lift, message);
  tr.append(
    el("td", "rule", silence.rule || "any"),
    query,
    el("td", "partition", silence.partition || "any"),
    el("td", null, clock(silence.until_ms)),
    el("td", null, silence.created_by),
    el("td", "comment", silence.comment),
    actions,
  );
  return tr;
}

// Rows are kept while their silence is in force, with what their Lift button said.
function showSilences() {
  const now = serverNow();
  silences = silences.filter((silence) => silence.until_ms > now);
  const current = new Map(silences.map((silence) => [silence.id, silence]));
  for (const [id, tr] of silenceRows) {
    if (!current.has(id)) {
      tr.remove();
      silenceRows.delete(id);
    }
  }
  for (const silence of current.values()) {
    if (!silenceRows.has(silence.id)) {
      silenceRows.set(silence.id, silenceRow(silence));
      $("silences").tBodies[0].append(silenceRows.get(silence.id));
    }
  }
  for (const [id, tr] of silenceRows) {
    const link = tr.querySelector(".query-link");
    if (link) setText(link, queryName(current.get(id).query_id));
  }
  $("no-silences").hidden = current.size > 0;
}

function loadSilences() {
  getJson("/api/silences")
    .then((answer) => {
      silences = answer.silences;
      showSilences();
    })
    .catch((error) => showError(error.message));
}

function tick() {
  live.tick();
  if (silences.some((silence) => silence.until_ms <= serverNow())) showSilences();
}

// Everything afresh on each connection: a page that was offline catches up.
function join(socket) {
  book.join(socket);
  loadHistory().catch((error) => showError(error.message));
  loadSilences();
}

tokenForm($("token-form"), () => live.refresh());
showAlertCount(book);
book.onChange(() => {
  showLive();
  showSilences();
});
const socket = connect(join);
book.listen(socket);
socket.on("alert", hear);
setInterval(tick, 1_000);
setInterval(loadSilences, SILENCES_REFRESH_MS);
