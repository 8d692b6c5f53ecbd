"""Settings from WMON_ environment variables, always read from an explicit environ mapping."""

import re
from pathlib import Path

import pytest

from monitor.config import default_database_path, load_settings

HOME = "/home/alice"


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch) -> str:
    """Pin the process HOME so `~` and the default location do not depend on the machine."""
    monkeypatch.setenv("HOME", HOME)
    return HOME


LOCATION_CASES = [
    (
        {"WMON_DATABASE_URL": "postgresql://wmon@db/wmon", "WMON_HOME": "/srv/wmon"},
        "postgresql://wmon@db/wmon",
        "/srv/wmon/wmon.db",
    ),
    (
        {"WMON_DATABASE_URL": "", "WMON_HOME": "/srv/wmon"},
        "sqlite:////srv/wmon/wmon.db",
        "/srv/wmon/wmon.db",
    ),
    (
        {"WMON_HOME": "/srv/wmon", "XDG_DATA_HOME": "/xdg"},
        "sqlite:////srv/wmon/wmon.db",
        "/srv/wmon/wmon.db",
    ),
    ({"WMON_HOME": "~/monitor"}, f"sqlite:///{HOME}/monitor/wmon.db", f"{HOME}/monitor/wmon.db"),
    (
        {"WMON_HOME": "", "XDG_DATA_HOME": "/xdg"},
        "sqlite:////xdg/wmon/wmon.db",
        "/xdg/wmon/wmon.db",
    ),
    ({"XDG_DATA_HOME": "/xdg"}, "sqlite:////xdg/wmon/wmon.db", "/xdg/wmon/wmon.db"),
    (
        {"XDG_DATA_HOME": ""},
        f"sqlite:///{HOME}/.local/share/wmon/wmon.db",
        f"{HOME}/.local/share/wmon/wmon.db",
    ),
    ({}, f"sqlite:///{HOME}/.local/share/wmon/wmon.db", f"{HOME}/.local/share/wmon/wmon.db"),
]


@pytest.mark.parametrize(
    ("environ", "url", "path"),
    LOCATION_CASES,
    ids=[
        "database url wins over every location",
        "empty database url is unset",
        "wmon home wins over xdg",
        "wmon home expands tilde",
        "empty wmon home falls back to xdg",
        "xdg data home",
        "empty xdg data home falls back to home",
        "default under home",
    ],
)
def test_where_the_store_is(environ: dict[str, str], url: str, path: str) -> None:
    assert load_settings(environ).database_url == url
    assert default_database_path(environ) == Path(path)


def test_the_default_location_uses_the_home_of_the_given_environ() -> None:
    # The process HOME is /home/alice (fixture); the mapping passed in says otherwise.
    environ = {"HOME": "/home/bob"}
    assert default_database_path(environ) == Path("/home/bob/.local/share/wmon/wmon.db")
    assert load_settings(environ).database_url == "sqlite:////home/bob/.local/share/wmon/wmon.db"


@pytest.mark.parametrize(
    ("raw", "size"),
    [(None, 10_000), ("42", 42), ("1", 1), ("10000000", 10_000_000), ("", 10_000)],
    ids=["unset is the default", "a number", "the minimum", "surrounding spaces", "empty is unset"],
)
def test_buffer_size(raw: str | None, size: int) -> None:
    environ = {} if raw is None else {"WMON_BUFFER_SIZE": raw}
    assert load_settings(environ).buffer_size == size


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("abc", "WMON_BUFFER_SIZE must be a whole number, not 'abc'"),
        ("1.5", "WMON_BUFFER_SIZE must be a whole number, not '1.5'"),
        ("1e3", "WMON_BUFFER_SIZE must be a whole number, not '1e3'"),
        (" 250 ", "WMON_BUFFER_SIZE must be a whole number, not ' 250 '"),
        ("1_000", "WMON_BUFFER_SIZE must be a whole number, not '1_000'"),
        ("\u0664\u0662", "WMON_BUFFER_SIZE must be a whole number, not '\u0664\u0662'"),
        ("0", "WMON_BUFFER_SIZE must be between 1 and 10000000, not 0"),
        ("-3", "WMON_BUFFER_SIZE must be between 1 and 10000000, not -3"),
        ("10000001", "WMON_BUFFER_SIZE must be between 1 and 10000000, not 10000001"),
    ],
    ids=[
        "letters",
        "fraction",
        "exponent",
        "spaces",
        "underscore",
        "arabic-indic",
        "zero",
        "negative",
        "too-big",
    ],
)
def test_a_bad_buffer_size_is_a_clear_error(raw: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        load_settings({"WMON_BUFFER_SIZE": raw, "WMON_HOME": "/srv/wmon"})


@pytest.mark.parametrize(
    ("raw", "days"),
    [(None, 30), ("7", 7), ("1", 1), ("36500", 36_500), ("", 30)],
    ids=["unset is the default", "a number", "the minimum", "the maximum", "empty is unset"],
)
def test_retention_days(raw: str | None, days: int) -> None:
    environ = {} if raw is None else {"WMON_RETENTION_DAYS": raw}
    assert load_settings(environ).retention_days == days


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("a month", "WMON_RETENTION_DAYS must be a whole number, not 'a month'"),
        ("0.5", "WMON_RETENTION_DAYS must be a whole number, not '0.5'"),
        ("0", "WMON_RETENTION_DAYS must be between 1 and 36500, not 0"),
        ("-30", "WMON_RETENTION_DAYS must be between 1 and 36500, not -30"),
        (
            "99999999999999999999",
            "WMON_RETENTION_DAYS must be between 1 and 36500, not 99999999999999999999",
        ),
    ],
    ids=["words", "fraction", "zero", "negative", "beyond 64 bits"],
)
def test_a_bad_retention_is_a_clear_error(raw: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        load_settings({"WMON_RETENTION_DAYS": raw, "WMON_HOME": "/srv/wmon"})


@pytest.mark.parametrize(
    ("name", "field", "default", "maximum"),
    [
        ("WMON_RETENTION_BATCHES_HOURS", "retention_batches_hours", 48, 876_000),
        ("WMON_RETENTION_HOURS_DAYS", "retention_hours_days", 400, 36_500),
    ],
)
def test_the_other_tiers_retention(name: str, field: str, default: int, maximum: int) -> None:
    assert getattr(load_settings({}), field) == default
    assert getattr(load_settings({name: "12"}), field) == 12
    with pytest.raises(ValueError, match=f"^{name} must be between 1 and {maximum}, not 0$"):
        load_settings({name: "0"})


def test_alert_settings() -> None:
    assert (load_settings({}).alert_rules, load_settings({}).alert_interval_s) == (None, 10)
    settings = load_settings(
        {"WMON_ALERT_RULES": "/etc/wmon/rules.yml", "WMON_ALERT_INTERVAL": "3"}
    )
    assert (settings.alert_rules, settings.alert_interval_s) == (Path("/etc/wmon/rules.yml"), 3)
    interval = "^WMON_ALERT_INTERVAL must be between 1 and 86400, not 0$"
    with pytest.raises(ValueError, match=interval):
        load_settings({"WMON_ALERT_INTERVAL": "0"})


def test_message_queue_settings() -> None:
    assert (load_settings({}).message_queue, load_settings({}).message_queue_channel) == (
        None,
        "wmon",
    )
    settings = load_settings(
        {"WMON_MESSAGE_QUEUE": "redis://cache:6379/2", "WMON_MESSAGE_QUEUE_CHANNEL": "team-a"}
    )
    assert (settings.message_queue, settings.message_queue_channel) == (
        "redis://cache:6379/2",
        "team-a",
    )
    assert load_settings({"WMON_MESSAGE_QUEUE": "rediss://:pw@cache"}).message_queue


@pytest.mark.parametrize("raw", ["amqp://guest:s3cret@mq//", "cache:6379", "redis:cache"])
def test_a_message_queue_other_than_redis_is_an_error_that_does_not_show_the_url(raw: str) -> None:
    with pytest.raises(
        ValueError, match="^WMON_MESSAGE_QUEUE must be a redis:// or rediss:// URL$"
    ):
        load_settings({"WMON_MESSAGE_QUEUE": raw})
