"""The JSON Schemas of web/schemas/, as the tests hold real output to them: every file loaded
into one registry by its `$id`, and a validator whose integers are whole numbers in the JSON
(7000.0 is not an integer here, though JSON Schema would take it)."""

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

import web

FOLDER = Path(web.__file__).parent / "schemas"
INDEX = json.loads((FOLDER / "index.json").read_text())

# Where a payload is described, by what makes it: the pages that explain its fields.
DOCS = {"api": "docs/api.md", "live": "docs/live.md", "cli": "docs/cli.md"}


# A url_map rule's variable, with its converter if it has one: <id:alert_id>.
VARIABLE = re.compile(r"<(?:\w+:)?(\w+)>")


def endpoint(method: str, rule: str) -> str:
    """A url_map rule as the index names it: 'GET /api/alerts/<alert_id>'."""
    return method + " " + VARIABLE.sub(r"<\1>", rule)


def files() -> list[Path]:
    """Every schema file, the index aside."""
    return sorted(path for path in FOLDER.rglob("*.json") if path.name != "index.json")


def load(path: Path) -> dict[str, Any]:
    """A schema file's document."""
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def _is_integer(_checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


STRICT = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)


@cache
def registry() -> Registry:
    """Every schema, by its `$id`: the `$ref`s between the files resolve here, nothing is
    fetched."""
    resources = [Resource.from_contents(load(path)) for path in files()]
    return Registry().with_resources((resource.id(), resource) for resource in resources)


@cache
def validator(name: str) -> Any:
    """A validator of the schema at `name` (a path under web/schemas/, as the index has it)."""
    return STRICT(load(FOLDER / name), registry=registry())


def check(instance: Any, name: str, what: str) -> None:
    """Fail, saying what to do, unless `instance` (the real output of `what`) matches the schema
    at `name`."""
    errors = sorted(validator(name).iter_errors(instance), key=lambda error: error.json_path)
    if not errors:
        return
    found = "\n".join(f"  at {error.json_path}: {error.message[:300]}" for error in errors[:10])
    raise AssertionError(
        f"{what} does not match web/schemas/{name}:\n{found}\n"
        "The schemas are the contract of the JSON: a field added, removed or retyped without"
        " its schema fails here. Add a new field (or enum value) to the schema, and to"
        f" {DOCS[name.split('/')[0]]}, in the same change; never remove or rename one; name"
        " the change in CHANGELOG.md."
    )
