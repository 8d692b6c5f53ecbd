"""The rules file: the built-in rules' settings overridden for all queries and per query name.

    rules:                       # for every query
      watermark_skew: {threshold: 2m, for: 30s, keep_firing_for: 5m}
      partition_idle: {enabled: false}
    queries:                     # for queries whose name matches, in order; later wins
      - match: "scooters_*"
        rules:
          late_records: {count: 1000, share: 0.5%}
    receivers:                   # who is told of firing and resolved alerts
      - {name: ops, kind: webhook, url: "https://ops.example.com/wmon"}
      - {name: chat, kind: slack, url: "https://hooks.slack.com/services/..."}

Durations take a unit (500ms, 30s, 5m, 2h, 1d) and are at most 365d; counts are whole numbers
>= 0; shares are percentages with at most two decimals (1%, 0.25%); all in ASCII digits, read
as monitor.numbers reads every number from outside. A file is a regular file (never a FIFO or
a device, which could block the evaluator for good) of at most 256 KiB of UTF-8, nested at most
20 deep. Anything else is an error naming the file, the line and the problem; nothing of a bad
file is used.
"""

from __future__ import annotations

import fnmatch
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
import yaml.reader

from monitor.alerts.lifecycle import Timing
from monitor.alerts.rules import RULES, Kind, thresholds
from monitor.health.facts import Thresholds
from monitor.notify.receiver import Receiver
from monitor.notify.receivers import kinds as registered_kinds
from monitor.numbers import INT64_MAX, NumberError, shown, whole
from monitor.regular_files import NotRegularFile, open_regular

# A rules file is a few kilobytes. PyYAML (pure Python, so that nesting is checked below) takes
# about 20 s and 300 MB to read 1 MiB of `[1,1,1,...]`: this cap keeps the worst to a fifth.
MAX_FILE_BYTES = 256 * 1024
# A rules file is 6 levels deep; deeper nesting only exhausts the YAML composer's recursion.
MAX_DEPTH = 20
MAX_DURATION_MS = 365 * 86_400_000
_DURATION = re.compile(r"([0-9]+)(ms|s|m|h|d)")
_SHARE = re.compile(r"([0-9]{1,3})(?:\.([0-9]{1,2}))?%")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
# How much of a value or of PyYAML's reason an error message quotes.
_BRIEF = 80


class RulesFileError(ValueError):
    """A rules file that cannot be used; the message names the line and the problem."""


@dataclass(frozen=True)
class RuleConfig:
    """One rule's settings for one query: whether it runs, its `for` and `keep_firing_for`,
    its parameters."""

    enabled: bool
    timing: Timing
    params: dict[str, int]


@dataclass(frozen=True)
class Patch:
    """What a rules file changes of one rule's settings."""

    enabled: bool | None = None
    for_ms: int | None = None
    keep_firing_ms: int | None = None
    params: dict[str, int] = field(default_factory=dict)

    def applied(self, config: RuleConfig) -> RuleConfig:
        """The settings with this patch applied."""
        timing = config.timing
        return RuleConfig(
            config.enabled if self.enabled is None else self.enabled,
            Timing(
                timing.for_ms if self.for_ms is None else self.for_ms,
                timing.keep_firing_ms if self.keep_firing_ms is None else self.keep_firing_ms,
            ),
            config.params | self.params,
        )


Patches = dict[str, Patch]


@dataclass(frozen=True)
class RuleSet:
    """The settings of every rule, for all queries and per query-name pattern; receivers."""

    everywhere: Patches = field(default_factory=dict)
    per_query: tuple[tuple[str, Patches], ...] = ()
    receivers: tuple[Receiver, ...] = ()

    def for_query(self, name: str | None) -> dict[str, RuleConfig]:
        """Each rule's settings for the query called `name`."""
        return self.for_queries([name])[0]

    def for_queries(self, names: Iterable[str | None]) -> list[dict[str, RuleConfig]]:
        """Each rule's settings for each of the queries called `names`, in order: worked out
        once for each set of patterns the names match, as a fleet's queries mostly share
        theirs, and shared by those queries (not to be changed)."""
        made: dict[tuple[int, ...], dict[str, RuleConfig]] = {}
        found = []
        for name in names:
            matched = tuple(
                index
                for index, (pattern, _) in enumerate(self.per_query)
                if fnmatch.fnmatchcase(name or "", pattern)
            )
            if matched not in made:
                made[matched] = self._configs([self.per_query[index][1] for index in matched])
            found.append(made[matched])
        return found

    def _configs(self, matched: list[Patches]) -> dict[str, RuleConfig]:
        """Each rule's settings: the defaults, then everywhere's patches, then `matched`."""
        configs = {
            n: RuleConfig(True, Timing(r.for_ms, r.keep_firing_ms), r.defaults())
            for n, r in RULES.items()
        }
        for patches in [self.everywhere, *matched]:
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
    """The rule set of a rules file; RulesFileError, naming the file, if it cannot be used."""
    return load_rules(_read(Path(path)), str(path))


def _read(path: Path) -> str:
    """The file's text: at most MAX_FILE_BYTES of UTF-8, read without reading more; anything
    but a regular file (a FIFO, /dev/zero) is refused before a byte is read."""
    try:
        with open_regular(path) as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except NotRegularFile as error:
        raise RulesFileError(str(error)) from None
    except OSError as error:
        raise RulesFileError(f"{path}: cannot read it: {error.strerror or error}") from None
    if len(data) > MAX_FILE_BYTES:
        raise RulesFileError(f"{path}: larger than {MAX_FILE_BYTES // 1024} KiB: not a rules file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise RulesFileError(f"{path}: line {line}: not UTF-8 text") from None


def load_rules(text: str, source: str = "rules file") -> RuleSet:
    """The rule set of a rules file's text; RulesFileError names the line of any problem."""
    try:
        root = yaml.compose(text, Loader=_Loader)
        return RuleSet() if root is None else _rule_set(root)
    except yaml.YAMLError as error:
        raise RulesFileError(f"{source}: {_not_yaml(error, text)}") from None
    except _Problem as problem:
        raise RulesFileError(f"{source}: line {problem.line}: {problem.message}") from None


def duration_ms(text: str, name: str) -> int:
    """A duration of a rules file ('500ms', '30s', '5m', '2h', '1d', or 0) in ms, at most
    365 days; NumberError names `name` otherwise."""
    if text == "0":
        return 0
    match = _DURATION.fullmatch(text)
    if match is None:
        raise NumberError(
            f"{name} must be a duration such as 500ms, 30s, 5m, 2h or 1d, not {shown(text)}"
        )
    count, unit = match.group(1).lstrip("0") or "0", match.group(2)
    # More digits than the limit has in ms is past it in any unit, and past what whole() reads.
    fits = len(count) <= len(str(MAX_DURATION_MS))
    ms = whole(count, name) * _UNIT_MS[unit] if fits else MAX_DURATION_MS + 1
    if ms > MAX_DURATION_MS:
        raise NumberError(f"{name} must be at most 365d, not {shown(text)}")
    return ms


def share_hundredths(text: str, name: str) -> int:
    """A share of a rules file ('1%', '0.25%', '100%') in hundredths of a percent; NumberError
    names `name` otherwise."""
    match = _SHARE.fullmatch(text)
    if match is None:
        raise NumberError(f"{name} must be a share such as 1% or 0.25%, not {shown(text)}")
    units, hundredths = match.group(1), (match.group(2) or "").ljust(2, "0")
    share = whole(units, name, 0, 100) * 100 + int(hundredths)
    if share > 10_000:
        raise NumberError(f"{name} must be at most 100%, not {shown(text)}")
    return share


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing nesting deeper than MAX_DEPTH: its composer recurses once
    per level, and a file of `[[[[...` would exhaust Python's stack."""

    depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """Compose one node, one level deeper."""
        if self.depth >= MAX_DEPTH:
            raise _Problem(self.peek_event(), f"nested deeper than {MAX_DEPTH} levels")
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _brief(error: Exception) -> str:
    """An error's reason in one short line (PyYAML's span several, with marks of their own)."""
    reason = str(error)
    if isinstance(error, yaml.MarkedYAMLError):
        reason = error.problem or error.context or "malformed"
    lines = reason.splitlines() or ["malformed"]
    return lines[0] if len(lines[0]) <= _BRIEF else f"{lines[0][:_BRIEF]}..."


def _not_yaml(error: yaml.YAMLError, text: str) -> str:
    """Where and why `text` is not YAML."""
    line = None
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        line = error.problem_mark.line + 1
    elif isinstance(error, yaml.reader.ReaderError):
        line = text.count("\n", 0, error.position) + 1
    where = "" if line is None else f"line {line}: "
    return f"{where}not YAML: {_brief(error)}"


class _Problem(Exception):
    def __init__(self, node: yaml.Node | yaml.Event, message: str) -> None:
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
            raise _Problem(key, f"unknown key {shown(name)} in {what}{allowed}")
        if any(name == seen for seen, _, _ in entries):
            raise _Problem(key, f"{shown(name)} appears twice in {what}")
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
                fields["url"], f"url must be an http:// or https:// URL, not {shown(receiver.url)}"
            )
        if any(r.name == receiver.name for r in receivers):
            raise _Problem(fields["name"], f"two receivers are called {shown(receiver.name)}")
        receivers.append(receiver)
    return tuple(receivers)


def _patches(node: yaml.Node) -> Patches:
    patches = {}
    for name, key, settings in _entries(node, "rules"):
        if name not in RULES:
            known = ", ".join(sorted(RULES))
            raise _Problem(key, f"no rule named {shown(name)} (known: {known})")
        patches[name] = _patch(name, settings)
    return patches


def _patch(rule_name: str, node: yaml.Node) -> Patch:
    kinds = RULES[rule_name].params
    fields = _mapping(node, f"rule {rule_name}", {"enabled", "for", "keep_firing_for", *kinds})
    patch = Patch(params={p: _number(fields[p], p, kinds[p][0]) for p in kinds if p in fields})
    if "enabled" in fields:
        patch = replace(patch, enabled=_boolean(fields["enabled"], "enabled"))
    if "for" in fields:
        patch = replace(patch, for_ms=_number(fields["for"], "for", Kind.DURATION))
    if "keep_firing_for" in fields:
        keep = _number(fields["keep_firing_for"], "keep_firing_for", Kind.DURATION)
        patch = replace(patch, keep_firing_ms=keep)
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
    except (yaml.YAMLError, ValueError, OverflowError) as error:
        raise _Problem(node, f"{name} is not a value: {_brief(error)}") from None


def _text(node: yaml.Node, name: str) -> str:
    value = _scalar(node, name)
    if not isinstance(value, str) or not value:
        raise _Problem(node, f"{name} must be a non-empty text, not {shown(value)}")
    return value


def _boolean(node: yaml.Node, name: str) -> bool:
    value = _scalar(node, name)
    if not isinstance(value, bool):
        raise _Problem(node, f"{name} must be true or false, not {shown(value)}")
    return value


def _number(node: yaml.Node, name: str, kind: Kind) -> int:
    """A count, a duration or a share, read from the text as written: not as YAML reads
    numbers, which takes `1_000`, `0x10` and `1:30` (90)."""
    _scalar(node, name)
    try:
        if kind is Kind.COUNT:
            return whole(node.value, name, 0, INT64_MAX)
        if kind is Kind.SHARE:
            return share_hundredths(node.value, name)
        return duration_ms(node.value, name)
    except NumberError as error:
        raise _Problem(node, str(error)) from None
