"""Bearer tokens: which requests may act on alerts (API_TOKEN) and which may post events
(INGEST_TOKEN). Two tokens, so a job's configuration never holds the power to silence alerts."""

from __future__ import annotations

import hmac

from flask import Flask, current_app, request


class Refused(Exception):
    """A request without the right token; the status says which: 401 wrong or missing, 403
    none configured."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def require_token(setting: str, disabled: str) -> None:
    """Refuse the request unless it carries `Authorization: Bearer <the token in setting>`;
    `disabled` says what is refused, and how to enable it, when no token is configured."""
    token = current_app.config[setting]
    if not token:
        raise Refused(disabled, 403)
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), token.encode()):
        raise Refused("a valid token is needed: send Authorization: Bearer <token>", 401)


def refused(error: Refused) -> tuple[dict[str, str], int]:
    """The refusal as the API's JSON error."""
    return {"error": str(error)}, error.status


def init_app(app: Flask) -> None:
    """Answer refusals of every route of `app`."""
    app.register_error_handler(Refused, refused)
