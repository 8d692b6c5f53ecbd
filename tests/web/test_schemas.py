"""The JSON Schemas themselves (web/schemas/): valid draft 2020-12, each named by its path,
closed (every field the code emits required, nothing else allowed), their enums the code's
own, listed in the index with every endpoint of the API, and shipped in the wheel."""

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the TOML reader `build` brings
    import tomli as tomllib

import web
from monitor.alerts.lifecycle import State, Transition
from monitor.alerts.rules import RULES, Severity
from monitor.health.backlog import Age, Trend, Verdict
from monitor.health.facts import StoredStatus
from monitor.health.judgment import PartitionStatus
from monitor.health.lateness import SHARES
from monitor.health.status import Status
from monitor.store.read.history import CSV_RESOLUTIONS
from tests.support.paths import ROOT
from tests.support.schemas import FOLDER, INDEX, endpoint, files, load, registry
from web import create_app

BASE = "https://watermark-monitor.invalid/schemas/"
# Under /api/, what answers with something else than JSON.
NOT_JSON = {"GET /api/queries/<ref>/history.csv"}
# Objects whose fields the request chooses: a partition's series hold those `fields` names.
OPTIONAL_FIELDS = {("api/partition-history.json", "series")}


def subschemas(schema: Any, name: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema within `schema`, with the name of the definition it is in ('' for none)."""
    if isinstance(schema, dict):
        yield name, schema
        for key, value in schema.items():
            inner = name
            if key == "$defs":
                for defined, definition in value.items():
                    yield from subschemas(definition, defined)
                continue
            yield from subschemas(value, inner)
    elif isinstance(schema, list):
        for value in schema:
            yield from subschemas(value, name)


@pytest.mark.parametrize("path", files(), ids=lambda path: str(path.relative_to(FOLDER)))
def test_each_schema_is_valid_draft_2020_12_named_by_its_path(path: Path) -> None:
    schema = load(path)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == BASE + path.relative_to(FOLDER).as_posix()
    resolver = registry().resolver(base_uri=schema["$id"])
    for _, inner in subschemas(schema):
        if "$ref" in inner:
            resolver.lookup(inner["$ref"])  # raises for a reference to nothing


def closure_problems(path: Path) -> Iterator[str]:
    """What leaves an object of the schema open: a field not required, or others allowed."""
    name = path.relative_to(FOLDER).as_posix()
    for defined, schema in subschemas(load(path)):
        where = f"{name} {defined or '(top)'} {schema.get('description', '')[:40]!r}"
        properties = schema.get("properties")
        if properties is not None and "type" not in schema and "required" not in schema:
            continue  # a branch narrowing its object's fields (live/batch.json)
        required = set(schema.get("required", ()))
        if properties is not None and required != set(properties):
            if (name, defined) not in OPTIONAL_FIELDS:
                yield f"{where}: required is not every property"
        if schema.get("type") != "object" or defined.endswith("_fields"):
            continue
        if "allOf" in schema:
            if schema.get("unevaluatedProperties") is not False:
                yield f"{where}: made of parts, but unevaluatedProperties is not false"
        elif properties is not None and schema.get("additionalProperties") is not False:
            yield f"{where}: additionalProperties is not false"
        elif properties is None and not isinstance(schema.get("additionalProperties"), dict):
            yield f"{where}: an object with no properties must be a map of one shape"


def test_every_object_requires_each_field_and_allows_no_other() -> None:
    problems = [problem for path in files() for problem in closure_problems(path)]
    assert problems == []


def definition(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = load(FOLDER / "defs.json")["$defs"][name]
    return schema


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("status", [status.label for status in Status]),
        ("stored_status", [status.value for status in StoredStatus]),
        ("verdict", [verdict.label for verdict in Verdict]),
        ("backlog_age", [age.value for age in Age]),
        ("backlog_trend", [trend.value for trend in Trend]),
        ("severity", [severity.value for severity in Severity]),
        ("alert_state", [state.value for state in State] + [Transition.CANCELLED.value]),
        ("transition", [transition.value for transition in Transition] + ["acknowledged"]),
        ("rule", sorted(RULES)),
        ("partition_status", [status.value for status in PartitionStatus]),
    ],
)
def test_each_enum_is_the_codes_own(name: str, values: list[str]) -> None:
    """The schema's enum and the code's cannot drift apart: a value added to one fails here
    until the other has it (the statuses in their order of urgency)."""
    assert definition(name)["enum"] == values


def test_the_advisors_shares_and_the_resolutions_are_the_codes_own() -> None:
    delays = definition("advice_fields")["properties"]["delays"]
    assert delays["items"]["properties"]["share"]["enum"] == list(SHARES)
    assert delays["minItems"] == delays["maxItems"] == len(SHARES)
    diagnosis = load(FOLDER / "api/diagnosis.json")["properties"]
    assert diagnosis["lateness_resolution"]["enum"] == list(CSV_RESOLUTIONS)


def test_the_index_names_every_schema_file_and_only_those() -> None:
    named = set(INDEX["api"].values()) | set(INDEX["live"].values()) | set(INDEX["cli"].values())
    named |= set(INDEX["live_ack"].values()) | {INDEX["api_error"], "defs.json"}
    assert named == {path.relative_to(FOLDER).as_posix() for path in files()}


def test_every_endpoint_of_the_api_has_a_schema() -> None:
    """An endpoint added under /api/ without a schema (and a line in the index) fails here."""
    app = create_app({"DATABASE_URL": "sqlite://", "TESTING": True})
    try:
        endpoints = {
            endpoint(method, rule.rule)
            for rule in app.url_map.iter_rules()
            if rule.rule.startswith("/api/")
            for method in rule.methods - {"HEAD", "OPTIONS"}
        }
    finally:
        web.stop(app)
    assert endpoints - NOT_JSON == set(INDEX["api"])


def test_the_wheel_carries_the_schemas() -> None:
    """pyproject's package-data takes every file of web/schemas/, so that users of the package
    can validate against them."""
    # Read as TOML: the set-up's setuptools need not know pyproject's newest keys (the build
    # takes its own, 77 or newer).
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package = Path(web.__file__).parent
    patterns = settings["tool"]["setuptools"]["package-data"]["web"]
    packaged = {path for pattern in patterns for path in package.glob(pattern)}
    shipped = {path for path in FOLDER.rglob("*") if path.is_file()}
    assert shipped and shipped <= packaged
