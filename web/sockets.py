"""The one Socket.IO server of the dashboard, bound to an app by `create_app`; live push, the
periodic tasks and `wmon serve` use it."""

from flask import Flask
from flask_socketio import SocketIO

socketio = SocketIO()


def init_app(app: Flask) -> None:
    """Bind the Socket.IO server to `app`."""
    socketio.init_app(app, async_mode="threading")
