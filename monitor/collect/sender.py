"""The listener's events posted to a collector (`wmon serve`'s `POST /api/ingest`) over HTTP,
for drivers that cannot reach the store.

Events travel in Spark's own JSON, as the JVM listener sends them, through the same bounded
buffer as the store writer: while the collector is unreachable or answers 5xx (or refuses the
token), they wait and are retried; a 400 or 413 rejects them (then they are sent one at a
time, so one bad or oversized event costs only itself). Every post says how many events were
dropped so far, for the collector to keep.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from monitor.collect.writer import BufferedWriter

INGEST_PATH = "/api/ingest"
# Answers that sending the same events again would only repeat: malformed, or too large (a
# group too large is sent again one event at a time).
REJECTED = (400, 413)


class CollectorUnavailable(Exception):
    """The collector could not take the events now; they are retried."""


class CollectorRejected(Exception):
    """The collector refused the events as malformed (400) or too large (413); they are not
    retried as they are."""


def _reason(error: urllib.error.HTTPError) -> str:
    """The collector's own error message, or the HTTP status text."""
    try:
        message = json.loads(error.read())["error"]
    except (ValueError, KeyError, TypeError, OSError):
        message = error.reason
    return f"HTTP {error.code}: {message}"


class HttpSender(BufferedWriter):
    """Posts submitted Spark event documents to the collector at `url`, in order."""

    def __init__(
        self,
        url: str,
        token: str | None,
        sender: str,
        capacity: int,
        group_size: int = 200,
        max_backoff: float = 5.0,
        timeout: float = 10.0,
    ) -> None:
        self.endpoint = url.rstrip("/") + INGEST_PATH
        self._headers = {"Content-Type": "application/json", "Wmon-Sender": sender}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = timeout
        super().__init__(
            self._post,
            capacity,
            (CollectorUnavailable,),
            group_size,
            max_backoff,
            destination=f"collector at {url}",
        )

    def _post(self, documents: list[dict[str, Any]]) -> None:
        request = urllib.request.Request(
            self.endpoint,
            data=json.dumps(documents).encode(),
            method="POST",
            headers=self._headers | {"Wmon-Dropped": str(self.stats().dropped)},
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                response.read()
        except urllib.error.HTTPError as error:
            if error.code in REJECTED:
                raise CollectorRejected(_reason(error)) from None
            raise CollectorUnavailable(_reason(error)) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise CollectorUnavailable(f"cannot reach {self.endpoint}: {reason}") from None
