"""Posting a message to a receiver: JSON over HTTP, and what the receiver answered."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# 4xx answers that say "later", not "never".
RETRIED_4XX = (408, 425, 429)


@dataclass(frozen=True)
class Sent:
    """What a receiver answered: a status code (None when it could not be reached), an error."""

    status_code: int | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the receiver took the message (a 2xx answer)."""
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def refused(self) -> bool:
        """Whether the receiver refused the message for good (a 4xx not asking for later)."""
        code = self.status_code
        return code is not None and 400 <= code < 500 and code not in RETRIED_4XX


# A message to a receiver: a JSON object, or a list of them (Alertmanager's alerts).
Message = dict[str, Any] | list[dict[str, Any]]
# How a message is sent: http_post, or a stand-in that tests and callers pass instead.
Post = Callable[[str, Message], Sent]


def http_post(url: str, payload: Message, timeout_s: float = 5.0) -> Sent:
    """POST `payload` as JSON to `url`."""
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "watermark-monitor"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return Sent(response.status)
    except urllib.error.HTTPError as error:
        return Sent(error.code, f"HTTP {error.code} {error.reason}")
    except (urllib.error.URLError, OSError) as error:
        return Sent(None, str(getattr(error, "reason", error)))
    except Exception as error:  # a malformed answer or URL: a failed attempt, not a dead sender
        return Sent(None, f"{type(error).__name__}: {error}")
