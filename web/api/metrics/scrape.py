"""A scrape's families, filled from the series: query by query, each query's figures all or
none, then the live alerts and the monitor's own health."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from monitor.health.status import Status
from monitor.store.schema.isolation import is_outage, unreadable_reason
from web.api.metrics.exposition import Family
from web.api.metrics.scopes import Exported, Labels, OwnHealth, S, Scope, Standing
from web.api.metrics.series import (
    ALERT_SERIES,
    OWN_SERIES,
    QUERY_SERIES,
    SERIES,
    STANDING_SERIES,
    Series,
)

Families = dict[Series[Any, Any], Family]
Made = list[tuple[list[tuple[Labels, float]], Labels, float]]


def scraped(
    queries: Iterable[Exported], counts: Mapping[tuple[str, str, str], int], own: OwnHealth
) -> list[Family]:
    """Every series' family, with the queries', the live alerts' (by rule, severity and
    state) and the monitor's own samples. A query whose rows cannot be read or exported has
    only its stored status, its health (`error`) and `wmon_query_unreadable` 1."""
    families = _families(SERIES)
    for exported in queries:
        _add(_query_samples(exported, families))
    _add(_samples(ALERT_SERIES, counts, families))
    _add(_samples(OWN_SERIES, own, families))
    return list(families.values())


def own_only(own: OwnHealth) -> list[Family]:
    """The monitor's own families alone, for a scrape whose store cannot be read."""
    families = _families(OWN_SERIES)
    _add(_samples(OWN_SERIES, own, families))
    return list(families.values())


def _families(series: Sequence[Series[Any, Any]]) -> Families:
    return {s: Family(s.name, s.documentation, s.type, s.labels) for s in series}


def _query_samples(exported: Exported, families: Families) -> Made:
    """A query's samples, none of its figures when a row of it is bad."""
    summary = exported.summary
    health, why = summary.judgment.status, summary.facts.unreadable
    made: Made = []
    if why is None:
        try:
            made = _samples(QUERY_SERIES, exported, families)
        except Exception as error:  # a bad row of this query: its figures alone
            if is_outage(error):
                raise
            why, health = unreadable_reason(error), Status.ERROR
    standing = Standing(exported.labels, summary.query.status, health, why is not None)
    return made + _samples(STANDING_SERIES, standing, families)


def _samples(series: Sequence[Series[S, Any]], subject: S, families: Families) -> Made:
    """The samples of the series for a subject, its rows of each scope taken once."""
    rows: dict[Scope[S, Any], list[tuple[Labels, Any]]] = {}
    made: Made = []
    for one in series:
        scoped = rows.get(one.scope)
        if scoped is None:
            scoped = rows[one.scope] = one.scope.rows(subject)
        samples, reads = families[one].samples, one.reads
        for labels, row in scoped:
            value = reads(row)
            if value is not None:
                made.append((samples, labels, float(value)))
    return made


def _add(made: Made) -> None:
    """Add the samples to their families, once all of a subject's are made."""
    for samples, labels, value in made:
        samples.append((labels, value))
