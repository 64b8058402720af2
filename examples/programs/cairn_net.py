"""Networking shared by the example programs: JSON-lines messages over TCP, and waiting for
a peer's name to resolve and its port to answer.

Peers are named by their Cairn DNS names, looked up through the system resolver
(getaddrinfo), as any program does: inside a Cairn task, /etc/resolv.conf names the agent's
task resolver, which answers the cluster zone. A replica's name resolves only once its task
runs, so lookups and connections are retried until a deadline rather than failing at the
first miss.
"""

import ipaddress
import json
import socket
import time

DEFAULT_WAIT_S = 120.0


def resolve_once(name):
    """The IPv4 address of `name` now, or None."""
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except OSError:
        return None


def resolve(name, wait_s=DEFAULT_WAIT_S):
    """The IPv4 address of `name`, retrying until it resolves; raises after `wait_s`."""
    deadline = time.monotonic() + wait_s
    while True:
        addr = resolve_once(name)
        if addr:
            return addr
        if time.monotonic() > deadline:
            raise OSError(f"{name} did not resolve within {wait_s:.0f} s")
        time.sleep(0.2)


def connect(name, port, wait_s=DEFAULT_WAIT_S):
    """A TCP connection to name:port, resolving afresh and retrying until one is accepted."""
    deadline = time.monotonic() + wait_s
    while True:
        addr = resolve_once(name)
        if addr:
            try:
                return socket.create_connection((addr, int(port)), timeout=10)
            except OSError:
                pass
        if time.monotonic() > deadline:
            raise OSError(f"could not connect to {name}:{port} within {wait_s:.0f} s")
        time.sleep(0.2)


def listen(host, port):
    """A listening socket on host:port (host resolved; 0.0.0.0 for every interface)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((resolve(host) if host != "0.0.0.0" else host, int(port)))
    s.listen(64)
    return s


class Channel:
    """JSON messages, one per line, over a connected socket."""

    def __init__(self, sock):
        sock.settimeout(None)
        self.sock = sock
        self.reader = sock.makefile("r", encoding="utf-8")

    def send(self, msg):
        self.sock.sendall((json.dumps(msg) + "\n").encode())

    def recv(self):
        """The next message; None when the peer has closed the connection."""
        line = self.reader.readline()
        return json.loads(line) if line else None

    def call(self, msg):
        self.send(msg)
        reply = self.recv()
        if reply is None:
            raise ConnectionError("connection closed")
        return reply

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
