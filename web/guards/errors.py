"""How the dashboard answers what went wrong, in one place for every route: JSON under /api/,
an error page elsewhere. A store that cannot be used is a 503 saying why, for reads and writes
alike; every response carries the security headers.
"""

from __future__ import annotations

from flask import Flask, Response, current_app, render_template, request
from werkzeug.exceptions import BadRequest, HTTPException, RequestEntityTooLarge

from monitor.numbers import shown
from monitor.store.read.queries import QueryNotFound
from monitor.store.schema.engine import STORE_FAILURES, unusable
from monitor.store.schema.isolation import UnreadableRows
from web.guards.hosts import is_trusted
from web.guards.params import BadParameter

# Scripts only from this server and never inline: even a name that slipped into the page as
# HTML could not run anything.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def answer(message: str, status: int) -> tuple[dict[str, str] | str, int]:
    """`message` as the API's JSON error or as an error page, with `status`."""
    if request.path.startswith("/api/") or request.path == "/api":
        return {"error": message}, status
    return render_template("error.html", message=message), status


def http_error(error: HTTPException) -> Response:
    """404, 405, 413, 415 and the rest, keeping their headers (such as Allow)."""
    body, status = answer(error.description or error.name, error.code or 500)
    response = current_app.make_response((body, status))
    for name, value in error.get_headers():
        if name.lower() != "content-type":
            response.headers[name] = value
    return response


def too_large(_error: RequestEntityTooLarge) -> tuple[dict[str, str] | str, int]:
    """A body over the limit: 413, saying the limit."""
    limit_kib = (request.max_content_length or current_app.config["MAX_CONTENT_LENGTH"]) // 1024
    return answer(f"the request body is too large: the limit is {limit_kib:,} KiB", 413)


def bad_parameter(error: BadParameter) -> tuple[dict[str, str] | str, int]:
    """A malformed or out-of-range parameter or field: 400 naming it."""
    return answer(str(error), 400)


def query_not_found(error: QueryNotFound) -> tuple[dict[str, str] | str, int]:
    """An unknown query id or name: 404."""
    return answer(str(error.args[0]), 404)


def unreadable_rows(error: UnreadableRows) -> tuple[dict[str, str] | str, int]:
    """A query's stored rows that cannot be read: 500, saying why, as its status `error`
    does on the query's page."""
    return answer(f"the query's stored rows cannot be read: {error}", 500)


# How long a client should wait before it tries again, when the store cannot be used.
RETRY_AFTER_S = 5


def store_unavailable(error: Exception) -> Response:
    """The store cannot be used: 503, saying why in one line, and when to try again."""
    response = current_app.make_response(answer(unusable(error), 503))
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


def check_host() -> None:
    """Refuse a request for a name this server was not told it has (DNS rebinding)."""
    if not is_trusted(request.host, current_app.config["ALLOWED_HOSTS"]):
        raise BadRequest(
            f"this server does not answer to {shown(request.host)}: "
            "add the name to WMON_ALLOWED_HOSTS to use it"
        )


def secure(response: Response) -> Response:
    """Every response gets the security headers."""
    response.headers.update(SECURITY_HEADERS)
    return response


def init_app(app: Flask) -> None:
    """Answer every error of `app` here and give every response the security headers."""
    app.register_error_handler(HTTPException, http_error)
    app.register_error_handler(RequestEntityTooLarge, too_large)
    app.register_error_handler(BadParameter, bad_parameter)
    app.register_error_handler(QueryNotFound, query_not_found)
    app.register_error_handler(UnreadableRows, unreadable_rows)
    for failure in STORE_FAILURES:
        app.register_error_handler(failure, store_unavailable)
    app.before_request(check_host)
    app.after_request(secure)
