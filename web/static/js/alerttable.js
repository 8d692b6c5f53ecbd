// A table of alerts, one row each, updated in place: severity, state (and the alert that
// causes it), rule, query, partitions, message, when, who acknowledged it; its buttons; and below it, on demand, its story
// (transitions and notifications, from GET /api/alerts/<id>) or the silence form.
import { NO_TOKEN, act, actor, hasToken } from "./actions.js";
import { el, getJson, setPhrasedText, setText, setWrappingText } from "./dom.js";
import { clock, duration } from "./format.js";
import { isLive } from "./alertbook.js";
import { serverNow } from "./live.js";

const SILENCE_MINUTES = 60;
const MAX_SILENCE_MINUTES = 7 * 24 * 60;

function button(text, onClick) {
  const node = el("button", null, text);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

// When, in two pieces that each keep to one line: the cell may wrap between them only.
function when(alert) {
  const now = serverNow();
  if (isLive(alert)) {
    const since = alert.state === "firing" ? alert.fired_at_ms : alert.active_since_ms;
    return [`${clock(since)},`, `${duration(now - since)} ago`];
  }
  const end = alert.resolved_at_ms;
  return [
    `${clock(alert.active_since_ms)} to ${clock(end)}`,
    `(${duration(end - alert.active_since_ms)})`,
  ];
}

function showWhen(cell, alert) {
  const [first, second] = when(alert);
  if (cell.children.length !== 2) cell.replaceChildren(el("span"), " ", el("span"));
  setText(cell.children[0], first);
  setPhrasedText(cell.children[1], second);
}

function attemptsText(delivery) {
  const tries = delivery.attempts.length;
  const last = delivery.attempts[tries - 1];
  if (delivery.delivered_at_ms !== null)
    return `delivered at ${clock(delivery.delivered_at_ms)} (attempt ${tries})`;
  const failure = last ? `; last: ${last.error || `HTTP ${last.status_code}`}` : "";
  const outcome = delivery.abandoned_at_ms === null ? "not delivered yet" : "given up";
  return `${outcome} after ${tries} attempt${tries === 1 ? "" : "s"}${failure}`;
}

function storyOf({ events, deliveries }) {
  const transitions = el("ol", "transitions");
  for (const event of events) {
    const item = transitions.appendChild(el("li"));
    item.append(
      el("span", "at", clock(event.at_ms)),
      el("span", `transition transition-${event.transition}`, event.transition),
      el("span", "story-message", event.message),
    );
  }
  const notes = el("ul", "deliveries");
  for (const delivery of deliveries) {
    const text = `${delivery.receiver}, ${delivery.transition}: ${attemptsText(delivery)}`;
    notes.append(el("li", null, text));
  }
  if (!deliveries.length) {
    const why =
      "none: firing and resolving are sent to the rules file's receivers, unless silenced";
    notes.append(el("li", "muted", why));
  }
  return [el("h3", null, "Transitions"), transitions, el("h3", null, "Notifications"), notes];
}

export class AlertTable {
  // `query`: a column linking each alert's query; `actions`: Acknowledge and Silence buttons;
  // `onAction(alert | null)`: after an action succeeded, with the answer's alert if any.
  constructor(table, { query = true, actions = true, onAction = () => {} } = {}) {
    this.tbody = table.tBodies[0];
    this.columns = table.tHead.rows[0].cells.length;
    this.options = { query, actions, onAction };
    this.rows = new Map();
  }

  render(alerts) {
    const wanted = new Set(alerts.map((alert) => alert.id));
    for (const [id, row] of this.rows) {
      if (!wanted.has(id)) {
        row.tr.remove();
        row.detail.remove();
        this.rows.delete(id);
      }
    }
    // Rows move only when out of place: moving one would take the focus out of its form.
    let before = this.tbody.firstChild;
    for (const alert of alerts) {
      const row = this.rows.get(alert.id) || this.makeRow(alert);
      const changed = row.alert !== alert;
      row.alert = alert;
      this.fill(row);
      if (changed && row.story) this.loadStory(row);
      if (before !== row.tr) this.tbody.insertBefore(row.tr, before);
      if (row.tr.nextSibling !== row.detail)
        this.tbody.insertBefore(row.detail, row.tr.nextSibling);
      before = row.detail.nextSibling;
    }
  }

  // The buttons' hints follow the token field.
  refresh() {
    for (const row of this.rows.values()) this.fill(row);
  }

  tick() {
    for (const row of this.rows.values()) showWhen(row.cells.when, row.alert);
  }

  makeRow(alert) {
    const tr = el("tr");
    tr.dataset.alert = alert.id;
    const cells = {};
    const severity = tr.appendChild(el("td")).appendChild(el("span"));
    for (const field of ["state", "rule", "query", "partitions", "message", "when", "acked"]) {
      if (field !== "query" || this.options.query) cells[field] = tr.appendChild(el("td", field));
    }
    const link = cells.query && cells.query.appendChild(el("a"));
    // A list of many partitions scrolls in a box of a few lines, not the row.
    const partitions = cells.partitions.appendChild(el("div", "partition-list"));
    const buttons = tr.appendChild(el("td", "actions"));
    const detail = el("tr", "alert-detail");
    detail.hidden = true;
    const panel = detail.appendChild(el("td"));
    panel.colSpan = this.columns;
    const row = { tr, cells, severity, link, partitions, detail, panel };
    row.message = el("p", "action-message");
    row.buttons = {
      acknowledge: button("Acknowledge", () => this.acknowledge(row)),
      silence: button("Silence…", () => this.openSilence(row)),
      story: button("Story", () => this.toggleStory(row)),
    };
    row.buttons.story.setAttribute("aria-expanded", "false");
    if (this.options.actions) buttons.append(row.buttons.acknowledge, row.buttons.silence);
    buttons.append(row.buttons.story, row.message);
    this.rows.set(alert.id, row);
    return row;
  }

  fill(row) {
    const { alert, cells } = row;
    row.severity.className = `severity severity-${alert.severity}`;
    setText(row.severity, alert.severity);
    row.tr.className = `alert state-${alert.state}${alert.caused_by ? " caused" : ""}`;
    const notes = [alert.state];
    if (alert.silenced) notes.push("silenced");
    if (alert.caused_by) notes.push(`caused by ${alert.caused_by}`);
    // "caused by partition_stalled" may break after an underscore: the column stays narrow.
    setWrappingText(cells.state, notes.join(", "), 0);
    setText(cells.rule, alert.rule);
    if (row.link) {
      row.link.href = `/queries/${encodeURIComponent(alert.query_id)}`;
      setWrappingText(row.link, alert.query || alert.query_id, 0);
    }
    setWrappingText(row.partitions, alert.partitions.join(", ") || "—");
    setWrappingText(cells.message, alert.message);
    showWhen(cells.when, alert);
    const acked = alert.acknowledged_at_ms !== null;
    setText(
      cells.acked,
      acked ? `${alert.acknowledged_by}, ${clock(alert.acknowledged_at_ms)}` : "—",
    );
    row.buttons.acknowledge.hidden = acked || !isLive(alert);
    row.buttons.silence.hidden = !isLive(alert);
    const hint = hasToken() ? "" : " (needs the API token)";
    row.buttons.acknowledge.title = `Acknowledge this alert${hint}`;
    row.buttons.silence.title = `Stop its notifications for a while${hint}`;
  }

  say(row, result, done) {
    row.message.className = `action-message ${result.ok ? "done" : "refused"}`;
    setText(row.message, result.ok ? done : result.message);
  }

  async acknowledge(row) {
    const result = await act("POST", `/api/alerts/${row.alert.id}/acknowledge`, actor());
    this.say(row, result, "Acknowledged.");
    if (result.ok) this.options.onAction(result.body.alert);
  }

  openSilence(row) {
    if (!hasToken()) {
      this.say(row, { ok: false, message: NO_TOKEN });
      return;
    }
    row.story = false;
    row.buttons.story.setAttribute("aria-expanded", "false");
    row.panel.replaceChildren(this.silenceForm(row));
    row.detail.hidden = false;
    row.panel.querySelector("input").focus();
  }

  silenceForm(row) {
    const { alert } = row;
    const form = el("form", "silence-form");
    const scope = [alert.rule, alert.query || alert.query_id];
    const minutes = el("input");
    Object.assign(minutes, { type: "number", name: "minutes", min: 1, max: MAX_SILENCE_MINUTES });
    minutes.value = SILENCE_MINUTES;
    minutes.required = true;
    const comment = el("input");
    Object.assign(comment, { type: "text", name: "comment", placeholder: "why (optional)" });
    const submit = el("button", null, "Silence");
    submit.type = "submit";
    const minutesLabel = el("label", null, "for ");
    minutesLabel.append(minutes, " minutes");
    form.append(
      el("span", null, `Silence notifications of ${scope.join(" · ")}`),
      minutesLabel,
      comment,
      submit,
      button("Cancel", () => this.closeDetail(row)),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.silence(row, Number(minutes.value), comment.value.trim());
    });
    return form;
  }

  async silence(row, minutes, comment) {
    const { alert } = row;
    const body = { minutes, rule: alert.rule, query: alert.query_id, ...actor() };
    if (comment) body.comment = comment;
    const result = await act("POST", "/api/silences", body);
    const until = result.ok ? clock(result.body.silence.until_ms) : "";
    this.say(row, result, `Silenced until ${until}.`);
    if (result.ok) {
      this.closeDetail(row);
      this.options.onAction(null);
    }
  }

  closeDetail(row) {
    row.story = false;
    row.buttons.story.setAttribute("aria-expanded", "false");
    row.detail.hidden = true;
    row.panel.replaceChildren();
  }

  toggleStory(row) {
    if (row.story) {
      this.closeDetail(row);
      return;
    }
    row.story = true;
    row.buttons.story.setAttribute("aria-expanded", "true");
    row.panel.replaceChildren(el("p", "muted", "Loading…"));
    row.detail.hidden = false;
    this.loadStory(row);
  }

  async loadStory(row) {
    try {
      const story = await getJson(`/api/alerts/${row.alert.id}`);
      if (row.story) row.panel.replaceChildren(...storyOf(story));
    } catch (error) {
      if (row.story) row.panel.replaceChildren(el("p", "notice", error.message));
    }
  }
}
