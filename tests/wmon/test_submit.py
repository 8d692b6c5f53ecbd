"""`wmon spark-conf` and `wmon submit`: the settings that load the JVM listener, and one real
spark-submit of PySpark's own streaming example reporting to a recording receiver."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_wmon
from wmon.main import main
from wmon.submit import LISTENERS_KEY, listener_jar, merged_args

ROOT = Path(__file__).resolve().parents[2]
JAR = ROOT / "wmon" / "jars" / "wmon-spark.jar"
WMON = Path(sys.executable).parent / "wmon"
LISTENER = f"{LISTENERS_KEY}=wmon.spark.WatermarkListener"


@pytest.fixture(autouse=True)
def no_token_or_jar_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WMON_INGEST_TOKEN", raising=False)
    monkeypatch.delenv("WMON_LISTENER_JAR", raising=False)


def test_the_jar_is_the_one_make_setup_builds() -> None:
    assert listener_jar() == JAR
    assert JAR.is_file(), "run `make setup` to build the listener jar"


def test_spark_conf_prints_spark_submit_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_wmon(capsys, "spark-conf")
    assert code == 0
    assert out.splitlines() == [
        f"--jars {JAR}",
        f"--conf {LISTENER}",
        "--conf spark.wmon.url=http://127.0.0.1:5000",
    ]


def test_spark_conf_prints_spark_defaults_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WMON_INGEST_TOKEN", "from-env")
    code, out, _ = run_wmon(capsys, "spark-conf", "--format", "defaults", "--url", "https://wmon:8443")
    assert code == 0
    assert out.splitlines() == [
        f"spark.jars {JAR}",
        "spark.sql.streaming.streamingQueryListeners wmon.spark.WatermarkListener",
        "spark.wmon.url https://wmon:8443",
        "spark.wmon.token from-env",
    ]


def test_a_token_given_wins_over_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WMON_INGEST_TOKEN", "from-env")
    _, out, _ = run_wmon(capsys, "spark-conf", "--token", "given")
    assert out.splitlines()[-1] == "--conf spark.wmon.token=given"


@pytest.mark.parametrize("url", ["ftp://wmon", "wmon:5000", "http://", "http://a b"])
def test_a_bad_url_is_one_line(capsys: pytest.CaptureFixture[str], url: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["spark-conf", "--url", url])
    assert exit_.value.code == 2
    assert "argument --url: must be an http:// or https:// URL" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["spark-conf"], ["submit", "--", "app.py"]])
def test_a_missing_jar_says_to_run_make_setup(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: list[str],
) -> None:
    monkeypatch.setenv("WMON_LISTENER_JAR", str(tmp_path / "none.jar"))
    code, out, err = run_wmon(capsys, *command)
    assert (code, out) == (1, "")
    missing = tmp_path / "none.jar"
    assert err == f"wmon: error: no listener jar at {missing}: run `make setup` to build it\n"


SETTINGS = [("spark.jars", "/w.jar"), (LISTENERS_KEY, "W"), ("spark.wmon.url", "http://c")]
OURS = ["--conf", f"{LISTENERS_KEY}=W", "--conf", "spark.wmon.url=http://c"]


@pytest.mark.parametrize(
    "user, expected",
    [
        (["app.py", "--jars", "x"], ["--jars", "/w.jar", *OURS, "app.py", "--jars", "x"]),
        (
            ["--master", "local[2]", "--jars", "a.jar,b.jar", "app.py"],
            ["--jars", "/w.jar,a.jar,b.jar", *OURS, "--master", "local[2]", "app.py"],
        ),
        (
            ["--verbose", "--jars=a.jar", "--conf", f"{LISTENERS_KEY}=my.L", "app.py", "1"],
            ["--jars", "/w.jar,a.jar", "--conf", f"{LISTENERS_KEY}=W,my.L", *OURS[2:]]
            + ["--verbose", "app.py", "1"],
        ),
        (
            ["--conf=spark.jars=c.jar", "--conf", "spark.x=1", "--class", "a.B", "b.jar"],
            ["--jars", "/w.jar,c.jar", *OURS, "--conf", "spark.x=1", "--class", "a.B", "b.jar"],
        ),
    ],
    ids=["app-args-untouched", "jars", "listeners-and-flags", "conf-jars"],
)
def test_a_jobs_own_jars_and_listeners_join_ours(user: list[str], expected: list[str]) -> None:
    assert merged_args(SETTINGS, user) == expected


@pytest.mark.spark
def test_submit_passes_the_exit_code_through(tmp_path: Path) -> None:
    app = tmp_path / "exits.py"
    app.write_text("import sys\nsys.exit(3)\n")
    done = subprocess.run([WMON, "submit", "--", str(app)], capture_output=True, timeout=120)
    assert done.returncode == 3, done.stderr.decode()[-2000:]
