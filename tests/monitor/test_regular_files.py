"""Opening a user's path: a regular file is read; a FIFO, a device, a directory or a socket is
refused at once, saying what it is, never waited on."""

import os
import socket

import pytest

from monitor.regular_files import NotRegularFile, open_regular, regular_size


def fifo(path):
    os.mkfifo(path)
    return path


def unix_socket(path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()
    return path


def link_to_fifo(path):
    os.symlink(fifo(path.with_name("pipe")), path)
    return path


NOT_REGULAR = [
    (fifo, "a FIFO"),
    (link_to_fifo, "a FIFO"),
    (lambda path: "/dev/null", "a character device"),
    (lambda path: path.parent, "a directory"),
    (unix_socket, "a socket"),
]
IDS = ["fifo", "link to a fifo", "device", "directory", "socket"]


@pytest.mark.parametrize(("make", "kind"), NOT_REGULAR, ids=IDS)
@pytest.mark.timeout(10)  # a FIFO that nothing writes to blocks a plain open() for good
def test_anything_but_a_regular_file_is_refused_saying_what_it_is(tmp_path, make, kind):
    path = make(tmp_path / "given")
    for call in (open_regular, regular_size):
        with pytest.raises(NotRegularFile) as refused:
            call(path)
        assert str(refused.value) == f"{path}: is {kind}, not a regular file"
        assert refused.value.reason == f"is {kind}, not a regular file"


def test_a_regular_file_is_read_and_sized(tmp_path):
    path = tmp_path / "given"
    path.write_bytes(b"rules: {}\n")
    with open_regular(path) as file:
        assert file.read() == b"rules: {}\n"
    assert regular_size(path) == 10


def test_a_missing_file_is_the_open_s_own_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "missing")
