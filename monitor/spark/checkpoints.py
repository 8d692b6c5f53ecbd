"""The running query's checkpoint, where the Python operator reads each batch's watermark.

`instrument(checkpoint=…)` names the query's checkpoint location, or a directory above it:
a Declarative Pipeline keeps every flow's checkpoint under its storage root
(`_checkpoints/<catalog>/<database>/<table>/<flow>/<n>`, a new `<n>` at each full refresh),
which its flow functions cannot know. A task knows its query's id; the checkpoint is the
directory below whose `metadata` names it. Local paths (and file: URIs) only, as the offset
log is read with plain file reads.
"""

from __future__ import annotations

import io
import json
import os
from urllib.parse import urlsplit

from monitor.regular_files import open_regular

# Found checkpoints, per Python worker: {(given path, query id): checkpoint}.
_FOUND: dict[tuple[str, str], str] = {}


def local_path(location: str) -> str:
    """A local path for a location given as a path or a file: URI."""
    parts = urlsplit(location)
    return parts.path if parts.scheme == "file" else location


def query_of(checkpoint: str) -> str | None:
    """The id of the query whose checkpoint this is, if it is one (a `metadata` that is not a
    regular file, such as a FIFO under the location given, is not one, and is not waited on)."""
    path = os.path.join(checkpoint, "metadata")
    try:
        with io.TextIOWrapper(open_regular(path), encoding="utf-8") as metadata:
            found = json.loads(metadata.readline()).get("id")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def query_checkpoint(location: str, query_id: str | None) -> str:
    """The checkpoint of query `query_id`: `location` itself when it is one (or the id is
    not known), else the checkpoint below it that names the query; `location` when none does
    (then no batch has a watermark to count late records by)."""
    path = local_path(location)
    if query_id is None or query_of(path) is not None:
        return path
    key = (path, query_id)
    if key not in _FOUND:
        for directory, subdirectories, files in os.walk(path):
            if "metadata" not in files:
                continue
            if query_of(directory) == query_id:
                _FOUND[key] = directory
                break
            if "offsets" in subdirectories:
                subdirectories.clear()  # another query's checkpoint: nothing below to find
    return _FOUND.get(key, path)
