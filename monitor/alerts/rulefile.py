"""The rules file: the built-in rules' settings overridden for all queries and per query name.

    rules:                       # for every query
      watermark_skew: {threshold: 2m, for: 30s}
      partition_idle: {enabled: false}
    queries:                     # for queries whose name matches, in order; later wins
      - match: "scooters_*"
        rules:
          late_records: {count: 100}
    receivers:                   # who is told of firing and resolved alerts
      - {name: ops, kind: webhook, url: "https://ops.example.com/wmon"}
      - {name: chat, kind: slack, url: "https://hooks.slack.com/services/..."}

Durations take a unit (500ms, 30s, 5m, 2h, 1d), counts are whole numbers >= 0. Anything else
is an error naming the line and the problem; nothing of a bad file is used.
"""

from __future__ import annotations

import fnmatch
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from monitor.alerts.receivers import kinds as registered_kinds
from monitor.alerts.rules import RULES, Kind, thresholds
from monitor.health.facts import Thresholds

_DURATION = re.compile(r"^(\d+)\s*(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class RulesFileError(ValueError):
    """A rules file that cannot be used; the message names the line and the problem."""


@dataclass(frozen=True)
class RuleConfig:
    """One rule's settings for one query: whether it runs, its `for`, its parameters."""

    enabled: bool
    for_ms: int
    params: dict[str, int]


@dataclass(frozen=True)
class Patch:
    """What a rules file changes of one rule's settings."""

    enabled: bool | None = None
    for_ms: int | None = None
    params: dict[str, int] = field(default_factory=dict)

    def applied(self, config: RuleConfig) -> RuleConfig:
        """The settings with this patch applied."""
        return RuleConfig(
            config.enabled if self.enabled is None else self.enabled,
            config.for_ms if self.for_ms is None else self.for_ms,
            config.params | self.params,
        )


Patches = dict[str, Patch]


@dataclass(frozen=True)
class Receiver:
    """Where notifications go: a name, a kind from monitor.alerts.receivers, and a URL."""

    name: str
    kind: str
    url: str


@dataclass(frozen=True)
class RuleSet:
    """The settings of every rule, for all queries and per query-name pattern; receivers."""

    everywhere: Patches = field(default_factory=dict)
    per_query: tuple[tuple[str, Patches], ...] = ()
    receivers: tuple[Receiver, ...] = ()

    def for_query(self, name: str | None) -> dict[str, RuleConfig]:
        """Each rule's settings for the query called `name`."""
        configs = {n: RuleConfig(True, r.for_ms, r.defaults()) for n, r in RULES.items()}
        layers = [self.everywhere]
        layers += [p for pattern, p in self.per_query if fnmatch.fnmatchcase(name or "", pattern)]
        for patches in layers:
            for rule_name, patch in patches.items():
                configs[rule_name] = patch.applied(configs[rule_name])
        return configs

    def thresholds_for(self, name: str | None) -> Thresholds:
        """The facts' thresholds for the query called `name`, as its rules' parameters set them."""
        return thresholds_of(self.for_query(name))


def thresholds_of(configs: Mapping[str, RuleConfig]) -> Thresholds:
    """The facts' thresholds that these rule settings (one query's) set."""
    return thresholds({rule: config.params for rule, config in configs.items()})


def load_rules_file(path: str | Path) -> RuleSet:
    """The rule set of a rules file; RulesFileError if it cannot be used."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise RulesFileError(f"{path}: cannot read it: {error.strerror}") from error
    return load_rules(text, str(path))


def load_rules(text: str, source: str = "rules file") -> RuleSet:
    """The rule set of a rules file's text; RulesFileError names the line of any problem."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise RulesFileError(
            f"{source}: {line}not YAML: {getattr(error, 'problem', error)}"
        ) from None
    if root is None:
        return RuleSet()
    try:
        return _rule_set(root)
    except _Problem as problem:
        raise RulesFileError(f"{source}: line {problem.line}: {problem.message}") from None


class _Problem(Exception):
    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.line, self.message = node.start_mark.line + 1, message


def _entries(
    node: yaml.Node, what: str, keys: set[str] | None = None
) -> list[tuple[str, yaml.Node, yaml.Node]]:
    """A mapping's (name, key node, value node), each name once and, given `keys`, known."""
    if not isinstance(node, yaml.MappingNode):
        raise _Problem(node, f"{what} must be a mapping")
    entries: list[tuple[str, yaml.Node, yaml.Node]] = []
    for key, value in node.value:
        name = key.value if isinstance(key, yaml.ScalarNode) else None
        if not isinstance(name, str) or (keys is not None and name not in keys):
            allowed = f" (expected one of: {', '.join(sorted(keys))})" if keys else ""
            raise _Problem(key, f"unknown key {name!r} in {what}{allowed}")
        if any(name == seen for seen, _, _ in entries):
            raise _Problem(key, f"{name!r} appears twice in {what}")
        entries.append((name, key, value))
    return entries


def _mapping(node: yaml.Node, what: str, keys: set[str] | None = None) -> dict[str, yaml.Node]:
    return {name: value for name, _, value in _entries(node, what, keys)}


def _rule_set(root: yaml.Node) -> RuleSet:
    top = _mapping(root, "the file", {"rules", "queries", "receivers"})
    everywhere = _patches(top["rules"]) if "rules" in top else {}
    per_query: list[tuple[str, Patches]] = []
    queries = top.get("queries")
    if queries is not None:
        if not isinstance(queries, yaml.SequenceNode):
            raise _Problem(queries, "queries must be a list of {match, rules}")
        for entry in queries.value:
            fields = _mapping(entry, "a queries entry", {"match", "rules"})
            if "match" not in fields or "rules" not in fields:
                raise _Problem(entry, "a queries entry needs both match and rules")
            per_query.append((_text(fields["match"], "match"), _patches(fields["rules"])))
    receivers = _receivers(top["receivers"]) if "receivers" in top else ()
    return RuleSet(everywhere, tuple(per_query), receivers)


def _receivers(node: yaml.Node) -> tuple[Receiver, ...]:
    if not isinstance(node, yaml.SequenceNode):
        raise _Problem(node, "receivers must be a list of {name, kind, url}")
    receivers: list[Receiver] = []
    for entry in node.value:
        fields = _mapping(entry, "a receiver", {"name", "kind", "url"})
        if set(fields) != {"name", "kind", "url"}:
            raise _Problem(entry, "a receiver needs name, kind and url")
        receiver = Receiver(*(_text(fields[key], key) for key in ("name", "kind", "url")))
        known = registered_kinds()
        if receiver.kind not in known:
            raise _Problem(fields["kind"], f"kind must be one of {', '.join(known)}")
        if not _is_http_url(receiver.url):
            raise _Problem(
                fields["url"], f"url must be an http:// or https:// URL, not {receiver.url!r}"
            )
        if any(r.name == receiver.name for r in receivers):
            raise _Problem(fields["name"], f"two receivers are called {receiver.name!r}")
        receivers.append(receiver)
    return tuple(receivers)


def _patches(node: yaml.Node) -> Patches:
    patches = {}
    for name, key, settings in _entries(node, "rules"):
        if name not in RULES:
            raise _Problem(key, f"no rule named {name!r} (known: {', '.join(sorted(RULES))})")
        patches[name] = _patch(name, settings)
    return patches


def _patch(rule_name: str, node: yaml.Node) -> Patch:
    kinds = RULES[rule_name].params
    fields = _mapping(node, f"rule {rule_name}", {"enabled", "for", *kinds})
    patch = Patch(params={p: _number(fields[p], p, kinds[p][0]) for p in kinds if p in fields})
    if "enabled" in fields:
        patch = replace(patch, enabled=_boolean(fields["enabled"], "enabled"))
    if "for" in fields:
        patch = replace(patch, for_ms=_number(fields["for"], "for", Kind.DURATION))
    return patch


def _is_http_url(url: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _scalar(node: yaml.Node, name: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise _Problem(node, f"{name} must be a single value")
    try:
        return yaml.safe_load(yaml.serialize(node))
    except (yaml.YAMLError, ValueError) as error:
        raise _Problem(node, f"{name} is not a value: {error}") from None


def _text(node: yaml.Node, name: str) -> str:
    value = _scalar(node, name)
    if not isinstance(value, str) or not value:
        raise _Problem(node, f"{name} must be a non-empty text, not {value!r}")
    return value


def _boolean(node: yaml.Node, name: str) -> bool:
    value = _scalar(node, name)
    if not isinstance(value, bool):
        raise _Problem(node, f"{name} must be true or false, not {value!r}")
    return value


def _number(node: yaml.Node, name: str, kind: Kind) -> int:
    value = _scalar(node, name)
    if kind is Kind.COUNT:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _Problem(node, f"{name} must be a whole number >= 0, not {value!r}")
        return value
    if value == 0 and not isinstance(value, bool):
        return 0
    match = _DURATION.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise _Problem(
            node, f"{name} must be a duration such as 500ms, 30s, 5m, 2h or 1d, not {value!r}"
        )
    return int(match.group(1)) * _UNIT_MS[match.group(2)]
