"""The one Socket.IO server of the dashboard, bound to an app by `create_app`; live push, the
periodic tasks and `wmon serve` use it."""

from flask_socketio import SocketIO

socketio = SocketIO()
