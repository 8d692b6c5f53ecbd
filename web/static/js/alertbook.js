// The live alerts (pending and firing) of every query as the page knows them, loaded from
// GET /api/alerts and kept up to date by `alert` events; and the header's count of firing ones.
import { getJson, setText, showError } from "./dom.js";

const LIVE = ["firing", "pending"];
export const SEVERITIES = ["critical", "warning"];
const LOAD_LIMIT = 1_000;

export function isLive(alert) {
  return LIVE.includes(alert.state);
}

function rank(alert, urgent) {
  return [
    LIVE.indexOf(alert.state),
    alert.caused_by ? 1 : 0,
    urgent.includes(alert.rule) ? 0 : 1,
    SEVERITIES.indexOf(alert.severity),
  ];
}

// As monitor/store/read/alerts.py orders them: firing before pending, causes before what they
// cause, a query that is down before the rest (`urgent`, the rules GET /api/alerts names in
// `urgent_rules`), critical before warning, then the longest active first.
function byUrgency(urgent) {
  return (a, b) => {
    const [x, y] = [rank(a, urgent), rank(b, urgent)];
    const first = x.findIndex((value, index) => value !== y[index]);
    if (first >= 0) return x[first] - y[first];
    return a.active_since_ms - b.active_since_ms || a.id - b.id;
  };
}

// How many alerts of each severity, most severe first, as [[severity, count], …].
export function bySeverity(alerts) {
  return SEVERITIES.map((s) => [s, alerts.filter((a) => a.severity === s).length]).filter(
    ([, n]) => n > 0,
  );
}

export class AlertBook {
  constructor() {
    this.alerts = new Map();
    // The rules whose alerts are listed first, as the server says.
    this.urgent = [];
    this.listeners = [];
    // Each load in flight collects the events heard meanwhile: its answer may predate them.
    this.loads = new Set();
  }

  async load() {
    const heard = [];
    this.loads.add(heard);
    try {
      const { alerts, urgent_rules } = await getJson(`/api/alerts?limit=${LOAD_LIMIT}`);
      this.alerts = new Map(alerts.map((alert) => [alert.id, alert]));
      this.urgent = urgent_rules;
      for (const event of heard) this.put(event.alert);
    } finally {
      this.loads.delete(heard);
    }
    this.changed();
  }

  reload() {
    this.load().catch((error) => showError(error.message));
  }

  // Join the alerts room, then load afresh; run on every connection, so that a page that was
  // offline catches up.
  join(socket) {
    socket.emit("subscribe_alerts", (ack) => (ack.error ? showError(ack.error) : this.reload()));
  }

  listen(socket) {
    socket.on("alert", (event) => this.apply(event));
  }

  apply(event) {
    for (const heard of this.loads) heard.push(event);
    this.update(event.alert);
  }

  // An alert as an action's answer or an event has it.
  update(alert) {
    this.put(alert);
    this.changed();
  }

  put(alert) {
    if (isLive(alert)) this.alerts.set(alert.id, alert);
    else this.alerts.delete(alert.id);
  }

  onChange(listener) {
    this.listeners.push(listener);
  }

  changed() {
    for (const listener of this.listeners) listener();
  }

  live(queryId) {
    const all = [...this.alerts.values()];
    return (queryId ? all.filter((a) => a.query_id === queryId) : all).sort(byUrgency(this.urgent));
  }

  firing(queryId) {
    return this.live(queryId).filter((alert) => alert.state === "firing");
  }

  // The firing alerts that page: those no other alert causes.
  paging(queryId) {
    return this.firing(queryId).filter((alert) => !alert.caused_by);
  }
}

// The header's link to the Alerts page says how many alerts fire (those another causes are
// counted apart), coloured by the worst.
export function showAlertCount(book) {
  const link = document.getElementById("alert-count");
  book.onChange(() => {
    const paging = book.paging();
    const caused = book.firing().length - paging.length;
    const worst = bySeverity(paging).map(([severity]) => severity)[0];
    link.hidden = false;
    link.className = worst ? `alert-count severity-${worst}` : "alert-count";
    const more = caused ? ` (+${caused} caused by them)` : "";
    setText(link, paging.length ? `Alerts: ${paging.length} firing${more}` : "Alerts: none firing");
  });
}
