"""Naming and discovery: Spark's layouts on real logs, a history directory, renames."""

import os
from pathlib import Path

import pytest

from monitor.ingest.logfiles import (
    LogError,
    discover,
    is_single_log_name,
    key_of,
    split_single_name,
)
from tests.support.event_logs import CODEC_VARIANTS


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("local-1795440072463", ("local-1795440072463", None, False)),
        ("local-1795440072463.zstd.inprogress", ("local-1795440072463", "zstd", True)),
        (
            "application_1700000000000_0042_1.lz4",
            ("application_1700000000000_0042_1", "lz4", False),
        ),
        ("app-20261123120000-0001.inprogress", ("app-20261123120000-0001", None, True)),
        ("notes.tar.gz", None),
        (".local-1.zstd.crc", None),
        ("_SUCCESS", None),
        ("local-1.", None),
    ],
    ids=[
        "plain",
        "zstd-inprogress",
        "yarn-attempt",
        "standalone-inprogress",
        "two-dots",
        "hidden",
        "underscore",
        "empty-codec",
    ],
)
def test_split_single_name(name, parts):
    assert split_single_name(name) == parts


@pytest.mark.parametrize(
    ("name", "is_log"),
    [
        ("local-1795440072463", True),
        ("spark-0a1b2c3d4e5f60718293a4b5c6d7e8f9.snappy", True),
        ("my-custom-app.lzf", True),
        ("my-custom-app.inprogress", False),
        ("README", False),
        ("notes.txt", False),
        ("local-1795440072463.json", False),
    ],
    ids=[
        "local",
        "kubernetes",
        "custom-with-codec",
        "custom-no-codec",
        "readme",
        "txt",
        "unknown-suffix",
    ],
)
def test_is_single_log_name(name, is_log):
    assert is_single_log_name(name) is is_log


def test_key_drops_only_the_in_progress_suffix():
    assert key_of("s3://b/logs/local-1.zstd.inprogress") == "s3://b/logs/local-1.zstd"
    assert key_of("s3://b/logs/local-1.zstd") == "s3://b/logs/local-1.zstd"


@pytest.mark.parametrize("variant", list(CODEC_VARIANTS), ids=list(CODEC_VARIANTS))
def test_a_finished_rolling_log(event_logs, variant):
    app_id = event_logs.apps[variant]
    rolling_dir = event_logs.directory(variant) / f"eventlog_v2_{app_id}"
    (application,) = discover(str(rolling_dir))
    assert (application.app_id, application.rolling, application.in_progress) == (
        app_id,
        True,
        False,
    )
    assert application.url == rolling_dir.as_uri()
    (file,) = application.files
    assert (file.codec, file.index, file.compacted, file.complete) == (
        CODEC_VARIANTS[variant],
        1,
        False,
        True,
    )
    assert file.key == file.url == (rolling_dir / file.name).as_uri()


def test_a_rolling_log_still_written(event_logs):
    (application,) = discover(str(event_logs.directory("zstd", in_progress=True)))
    assert application.in_progress
    assert not application.files[-1].complete


def test_a_single_file_in_progress_then_renamed(event_logs, copy_of):
    path = copy_of(event_logs.events_file("single_zstd", in_progress=True))
    (running,) = discover(str(path))
    assert running.in_progress and not running.rolling
    assert running.app_id == event_logs.apps["single_zstd"]
    (before,) = running.files
    assert before.url.endswith(".zstd.inprogress") and not before.complete

    finished = path.with_name(path.name.removesuffix(".inprogress"))
    path.rename(finished)
    (after,) = discover(str(path.parent))[0].files
    assert after.key == before.key
    assert after.url == finished.as_uri() and after.complete


def test_the_finished_file_wins_while_a_rename_is_a_copy(tmp_path):
    (tmp_path / "local-1.zstd.inprogress").write_bytes(b"")
    (tmp_path / "local-1.zstd").write_bytes(b"")
    (application,) = discover(str(tmp_path))
    assert not application.in_progress
    assert application.files[0].url.endswith("/local-1.zstd")


def make_rolling(directory: Path, app_id: str, names: list[str]) -> Path:
    rolling = directory / f"eventlog_v2_{app_id}"
    rolling.mkdir(parents=True)
    for name in names:
        (rolling / name).write_bytes(b"")
    return rolling


def test_rolling_files_in_index_order_from_the_last_compacted(tmp_path):
    names = [
        "events_10_app-1.lz4",
        "events_2_app-1.lz4.compact",
        "events_9_app-1.lz4",
        "events_1_app-1.lz4",
        "appstatus_app-1.inprogress",
        "notes.txt",
        ".events_9_app-1.lz4.crc",
    ]
    (application,) = discover(str(make_rolling(tmp_path, "app-1", names)))
    assert [file.name for file in application.files] == [
        "events_2_app-1.lz4.compact",
        "events_9_app-1.lz4",
        "events_10_app-1.lz4",
    ]
    assert [file.index for file in application.files] == [2, 9, 10]
    assert [file.compacted for file in application.files] == [True, False, False]
    assert [file.complete for file in application.files] == [True, True, False]


def test_a_rolling_directory_without_its_status_file_yet(tmp_path):
    (application,) = discover(str(make_rolling(tmp_path, "app-2", [])))
    assert application.in_progress and application.files == ()


def test_a_history_directory(event_logs, copy_of, tmp_path):
    history = tmp_path / "history"
    history.mkdir()
    for variant in ["zstd", "lz4", "snappy", "plain", "lzf"]:
        for entry in event_logs.directory(variant).iterdir():
            copy_of(entry, f"history/{entry.name}")
    copy_of(
        event_logs.events_file("single_zstd"),
        "history/" + event_logs.events_file("single_zstd").name,
    )
    for junk in ["README", "notes.txt", ".hidden.zstd", "_SUCCESS", "local-1.zstd.crc"]:
        (history / junk).write_text("not a log")
    (history / "subdir").mkdir()
    # A log directory that cannot be listed, even by root: a symbolic link to itself.
    os.symlink(history / "eventlog_v2_loop", history / "eventlog_v2_loop")

    errors: list[LogError] = []
    applications = discover(str(history), errors)

    assert sorted(a.app_id for a in applications) == sorted(event_logs.apps.values())
    assert sorted(a.rolling for a in applications) == [False] + [True] * 5
    codecs = {a.files[0].codec for a in applications}
    assert codecs == {"zstd", "lz4", "snappy", None, "lzf"}
    (error,) = errors
    assert error.url == (history / "eventlog_v2_loop").as_uri()
    assert "cannot be listed" in str(error)


def test_an_unlistable_directory_is_logged_without_an_error_list(tmp_path, caplog):
    os.symlink(tmp_path / "eventlog_v2_loop", tmp_path / "eventlog_v2_loop")
    assert discover(str(tmp_path)) == []
    assert "eventlog_v2_loop" in caplog.text


def test_a_missing_url(tmp_path):
    with pytest.raises(LogError, match="not found") as raised:
        discover(str(tmp_path / "nothing-here"))
    assert raised.value.url == (tmp_path / "nothing-here").as_uri()


def test_a_file_url_and_a_path_name_the_same_files(event_logs):
    directory = event_logs.directory("zstd")
    by_path = discover(str(directory))
    by_url = discover(directory.as_uri())
    assert by_path == by_url
