"""The dashboard as a WSGI application, for a production server in front of it:

    gunicorn --workers 1 --threads 100 --bind 0.0.0.0:5000 wmon.wsgi:app

Set up as `wmon serve` sets it up: settings from the environment (WMON_DATABASE_URL, the store,
must exist and be migrated; WMON_ALLOWED_HOSTS, the names it answers to), and its background
work (web.start: the alert evaluation, the pruner and, with WMON_MESSAGE_QUEUE, the
store's watcher) running beside it, stopped and handed on when the process exits. One worker
a process: a Socket.IO connection's requests must all reach the process that holds it
(docs/operations.md).
"""

from __future__ import annotations

import atexit

from wmon.options import CliError
from wmon.serve import dashboard, start_beside

try:
    app = dashboard(None)
except CliError as error:
    raise SystemExit(f"wmon: error: {error}") from None
atexit.register(start_beside(app))
