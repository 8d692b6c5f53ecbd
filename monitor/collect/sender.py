"""The listener's events posted to a collector (`wmon serve`'s `POST /api/ingest`) over HTTP,
for drivers that cannot reach the store.

Events travel in Spark's own JSON, as the JVM listener sends them, through the same bounded
buffer as the store writer. Only an outage is retried: the collector unreachable, its store
unavailable (503), a proxy or timeout in the way (408, 429, 502, 504), or the token refused
(401, 403: a token being changed must not cost data).
The events the collector refused it has set aside itself: a 200 or 422 says how many, and
they are counted as rejected, never sent again. Any other answer (400, 413, 500, ...) rejects
the request, whose events are then sent one at a time, so one bad or oversized event costs
only itself and never holds up the ones behind it. Every post says how many events were
dropped so far, for the collector to keep.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from monitor.collect.writer import BufferedWriter, Refusal

INGEST_PATH = "/api/ingest"
# Answers that mean "not now", not "not these": the events are sent again until the
# collector takes them (the JVM listener's sender treats the same ones alike).
OUTAGES = (401, 403, 408, 429, 502, 503, 504)
# The answer when every event of a request was refused and set aside.
ALL_REFUSED = 422


class CollectorUnavailable(Exception):
    """The collector could not take the events now; they are retried."""


class CollectorRejected(Exception):
    """The collector refused the request (malformed, too large, or it failed on it); its
    events are not retried as they are."""


def _reason(error: urllib.error.HTTPError) -> str:
    """The collector's own error message, or the HTTP status text."""
    try:
        message = json.loads(error.read())["error"]
    except (ValueError, KeyError, TypeError, OSError):
        message = error.reason
    return f"HTTP {error.code}: {message}"


def _refused(body: bytes, otherwise: int) -> Refusal | None:
    """What the collector's answer says it refused and set aside (`otherwise` events, if it
    does not say); None when it refused nothing."""
    try:
        answer = json.loads(body)
        count, errors = answer.get("rejected", otherwise), answer.get("errors") or []
        reason = f"event {errors[0]['event']}: {errors[0]['error']}" if errors else "refused"
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        count, reason = otherwise, "refused"
    if not isinstance(count, int) or count < 0:
        count = otherwise
    return Refusal(count, f"set aside by the collector: {reason}") if count else None


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

    def _post(self, documents: list[dict[str, Any]]) -> Refusal | None:
        """Post the documents; what of them the collector refused and set aside."""
        request = urllib.request.Request(
            self.endpoint,
            data=json.dumps(documents).encode(),
            method="POST",
            headers=self._headers | {"Wmon-Dropped": str(self.stats().dropped)},
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return _refused(response.read(), 0)
        except urllib.error.HTTPError as error:
            if error.code == ALL_REFUSED:
                return _refused(error.read(), len(documents))
            if error.code in OUTAGES:
                raise CollectorUnavailable(_reason(error)) from None
            raise CollectorRejected(_reason(error)) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise CollectorUnavailable(f"cannot reach {self.endpoint}: {reason}") from None
