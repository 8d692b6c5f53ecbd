"""The alert evaluator on a schedule: `wmon alerts run`, or a task in the dashboard server.

Each pass takes (or renews) the evaluation lease first, so that among several servers and
runners exactly one evaluates at a time. The rules file is read again when it changes; a bad
one is logged and the rules in force stay, as Prometheus does with a bad reload.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import sqlalchemy as sa
import sqlalchemy.exc as sa_exc
import sqlalchemy.orm as so

from monitor.alerts.evaluate import evaluate
from monitor.alerts.rulefile import RuleSet, RulesFileError, load_rules_file
from monitor.alerts.rules import RULES
from monitor.notify.delivery import deliver_due
from monitor.notify.transport import Post, http_post
from monitor.store.schema.engine import error_reason
from monitor.store.schema.models import AlertEvent, DeliveryAttempt
from monitor.store.signals.leases import acquire, done, new_holder, release

LEASE = "alert-evaluation"
DELIVERY_INTERVAL_S = 1.0
log = logging.getLogger(__name__)


def now_ms() -> int:
    """The wall clock in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def descriptions() -> dict[str, str]:
    """Each rule's description, by its name: what notifications say its alerts are about."""
    return {name: rule.description for name, rule in RULES.items()}


class AlertRunner:
    """Evaluates the rules every `interval_s` while it holds the evaluation lease."""

    def __init__(
        self,
        engine: sa.Engine,
        rules_path: Path | None = None,
        interval_s: float = 10.0,
        clock: Callable[[], int] = now_ms,
        post: Post = http_post,
    ) -> None:
        self.engine = engine
        self.rules_path = rules_path
        self.interval_s = interval_s
        self.clock = clock
        self.post = post
        self.holding = False
        self.holder = new_holder()
        self.rules = RuleSet() if rules_path is None else load_rules_file(rules_path)
        self.rules_error: str | None = None
        self._rules_mtime = self._mtime()

    def _mtime(self) -> float | None:
        try:
            return self.rules_path.stat().st_mtime if self.rules_path else None
        except OSError:
            return None

    def reload_rules(self) -> None:
        """Read the rules file again if it changed; keep the rules in force if it is bad."""
        mtime = self._mtime()
        if self.rules_path is None or mtime == self._rules_mtime:
            return
        self._rules_mtime = mtime
        try:
            self.rules, self.rules_error = load_rules_file(self.rules_path), None
            log.info("wmon alerts: rules reloaded from %s", self.rules_path)
        except (RulesFileError, ValueError) as error:
            self.rules_error = str(error)
            log.error("wmon alerts: %s; the previous rules stay in force", error)

    def run_once(self) -> list[AlertEvent] | None:
        """One pass: the transitions it stored, or None when another process evaluates."""
        self.reload_rules()
        now = self.clock()
        ttl_ms = int(3 * self.interval_s * 1000)
        self.holding = False
        self.holding = acquire(self.engine, LEASE, self.holder, now, ttl_ms)
        if not self.holding:
            return None
        with so.Session(self.engine, expire_on_commit=False) as session:
            events = evaluate(session, self.rules, now)
        done(self.engine, LEASE, self.holder, now)
        return events

    def deliver_once(self) -> list[DeliveryAttempt]:
        """Send the notifications that are due, if this runner is the one evaluating."""
        if not self.holding:
            return []
        return deliver_due(
            self.engine,
            self.rules.receivers,
            self.clock(),
            self.post,
            descriptions=descriptions(),
        )

    def run(self, stop: threading.Event, sleep: Callable[[float], object] | None = None) -> None:
        """Evaluate until `stop` is set, then hand the lease on. Notifications go out from
        their own thread, so that a slow receiver never holds evaluation up."""
        wait = sleep or stop.wait
        sender = threading.Thread(
            target=self._deliver, args=(stop, wait), name="wmon-notify", daemon=True
        )
        sender.start()
        try:
            while not stop.is_set():
                self._pass(self.run_once)
                wait(self.interval_s)
        finally:
            stop.set()
            sender.join()
            self.close()

    def _deliver(self, stop: threading.Event, wait: Callable[[float], object]) -> None:
        while not stop.is_set():
            self._pass(self.deliver_once)
            wait(DELIVERY_INTERVAL_S)

    def close(self) -> None:
        """Give the evaluation lease up, so that another process may evaluate at once."""
        try:
            release(self.engine, LEASE, self.holder)
        except sa_exc.DBAPIError:
            pass  # the lease expires by itself

    def _pass(self, work: Callable[[], Sequence[AlertEvent | DeliveryAttempt] | None]) -> None:
        # The store may be back by the next pass: evaluation and sending must outlive any
        # one failure, or alerting would end silently.
        try:
            done = work() or []
        except sa_exc.DBAPIError as error:
            log.warning("wmon alerts: cannot use the store: %s", error_reason(error))
            return
        except Exception:
            log.exception("wmon alerts: a pass failed")
            return
        for item in done:
            if isinstance(item, AlertEvent):
                log.info("wmon alerts: %s: %s", item.transition, item.message)
            elif not item.ok:
                log.warning("wmon alerts: delivery %s failed: %s", item.delivery_id, item.error)
