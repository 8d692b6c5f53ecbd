// The Alerts page: the live alerts with their actions, the silences in force and the alerts
// that ended, kept up to date by `alert` and `silences` events from the alerts room.
import { act, tokenForm } from "./actions.js";
import { AlertBook, bySeverity, isLive, showAlertCount } from "./alertbook.js";
import { AlertTable } from "./alerttable.js";
import { el, getJson, setText, showError } from "./dom.js";
import { clock, count } from "./format.js";
import { connect } from "./live.js";

const HISTORY_LIMIT = 100;
const $ = (id) => document.getElementById(id);

const book = new AlertBook();
const ended = new Map();
let silences = [];
const silenceRows = new Map();

// A silence or a lift comes back as a `silences` event; an acknowledgement's answer is the
// alert as it now stands.
const live = new AlertTable($("live-alerts"), {
  onAction: (alert) => {
    if (alert) book.update(alert);
  },
});
const history = new AlertTable($("alert-history"), { actions: false });

// As monitor/notify/silences.py's silenced(): the silence's rule and query, when set, are the
// alert's, and its partition, when set, is every partition the alert covers.
function covers(silence, alert) {
  const { partition } = silence;
  const alone = alert.partitions.length > 0 && alert.partitions.every((p) => p === partition);
  return (
    (silence.rule === null || silence.rule === alert.rule) &&
    (silence.query_id === null || silence.query_id === alert.query_id) &&
    (partition === null || alone)
  );
}

// The marks follow the silences the page shows, whenever the alerts or the silences change.
function markSilenced(alerts) {
  for (const alert of alerts) alert.silenced = silences.some((s) => covers(s, alert));
  return alerts;
}

function showLive() {
  const alerts = markSilenced(book.live());
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
  const alerts = markSilenced(sorted.slice(0, HISTORY_LIMIT));
  history.render(alerts);
  $("no-history").hidden = alerts.length > 0;
}

// Why the server's evaluator did not take up the changed rules file, or null: as text.
function showRulesError(error) {
  const banner = $("rules-error");
  setText(banner.querySelector(".rules-error-message"), error);
  banner.hidden = !error;
}

// Pending alerts cleared before their rule's `for` are counted, not listed; and when no
// process evaluates the rules, the alerts are as of the last evaluation (`wmon alerts` says
// so too).
function showEvaluation(answer) {
  const cancelled = $("cancelled");
  cancelled.hidden = !answer.cancelled;
  setText(
    cancelled,
    `${count(answer.cancelled)} pending alerts cleared before their rule's for: counted, not listed.`,
  );
  const at = answer.evaluated_at_ms;
  const notice = $("not-evaluated");
  notice.hidden = answer.evaluating;
  setText(
    notice,
    at === null
      ? "No process has evaluated the alert rules in this store (wmon serve does)."
      : `No process evaluates the alert rules now: these alerts are as of their last evaluation, ${clock(at)}.`,
  );
}

async function loadHistory() {
  const answer = await getJson(`/api/alerts?state=all&limit=${HISTORY_LIMIT}`);
  for (const alert of answer.alerts) if (!isLive(alert)) ended.set(alert.id, alert);
  showHistory();
  showRulesError(answer.rules_error);
  showEvaluation(answer);
}

function hear(event) {
  if (event.transition === "cancelled") return;
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

// The silences in force, as the server says whenever they change (one that runs out
// included) and on joining the alerts room.
function hearSilences(event) {
  silences = event.silences;
  showSilences();
  showLive();
  showHistory();
}

// Everything afresh on each connection (the rules error too): a page that was offline
// catches up.
function join(socket) {
  book.join(socket);
  loadHistory().catch((error) => showError(error.message));
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
socket.on("silences", hearSilences);
setInterval(() => live.tick(), 1_000);
