"""Which names the dashboard answers to: its defence against DNS rebinding.

A page on another site can have its own name resolve to this server's address; the browser
then sends that foreign name as the Host of every request and as the Origin of its Socket.IO
connection. An address written as digits cannot be rebound, so any IP literal passes; a name
passes only when it is on the allowed list (`ALLOWED_HOSTS`), or the list holds `*`.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Collection, Iterable

ANY_HOST = "*"


def host_name(host: str) -> str:
    """The name or address of a Host header or URL authority, without its port and brackets,
    lower-cased: `Example.COM:5000` is `example.com`, `[::1]:5000` is `::1`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def is_ip_address(name: str) -> bool:
    """Whether `name` is an IPv4 or IPv6 address rather than a name."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_trusted(host: str, allowed: Collection[str]) -> bool:
    """Whether a request for `host` (a Host header) is one this server should answer."""
    name = host_name(host)
    if ANY_HOST in allowed:
        return True
    return bool(name) and (is_ip_address(name) or name in allowed)


def allowed_hosts(extra: Iterable[str] = ()) -> frozenset[str]:
    """`localhost`, this machine's own names, and `extra` (WMON_ALLOWED_HOSTS, the name
    `wmon serve --host` was given)."""
    names = {"localhost", socket.gethostname(), socket.getfqdn(), *extra}
    return frozenset(host_name(name) for name in names if name.strip())
