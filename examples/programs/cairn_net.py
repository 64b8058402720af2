"""Networking shared by the example programs: finding peers by their Cairn DNS names, and
JSON-lines messages over TCP.

Contract: a Cairn task gets CAIRN_DNS (the masters' DNS servers, "host:port,...") and
CAIRN_DNS_DOMAIN (the cluster's zone, e.g. "cairn"). A master's DNS server may listen on a
port other than 53, which the C library's resolver cannot be told about, so names in the
zone are asked of those servers directly (an A query over UDP); other names, and every name
when CAIRN_DNS is unset (a program run by hand), go through the system resolver. A replica's
name resolves only once its task runs, so lookups and connections are retried until a
deadline rather than failing at the first miss.
"""

import ipaddress
import json
import os
import random
import socket
import struct
import time

DEFAULT_WAIT_S = 120.0


def _in_cluster_zone(name):
    servers = os.environ.get("CAIRN_DNS", "")
    domain = os.environ.get("CAIRN_DNS_DOMAIN", "").strip(".").lower()
    if not servers:
        return False
    n = name.rstrip(".").lower()
    return not domain or n == domain or n.endswith("." + domain)


def _query_a(server, name, timeout_s=1.0):
    """One A query to `server` ("host:port"); the addresses it answers, [] for none."""
    host, _, port = server.rpartition(":")
    qid = random.randrange(1 << 16)
    question = b"".join(bytes([len(l)]) + l.encode() for l in name.rstrip(".").split(".")) + b"\0"
    packet = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + question + struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout_s)
        s.sendto(packet, (host.strip("[]"), int(port)))
        reply, _ = s.recvfrom(4096)
    rid, flags, qd, an = struct.unpack(">HHHH", reply[:8])
    if rid != qid or flags & 0x000F != 0:
        return []
    pos = 12
    for _ in range(qd):
        pos = _skip_name(reply, pos) + 4
    out = []
    for _ in range(an):
        pos = _skip_name(reply, pos)
        rtype, _cls, _ttl, length = struct.unpack(">HHIH", reply[pos:pos + 10])
        pos += 10
        if rtype == 1 and length == 4:
            out.append(socket.inet_ntoa(reply[pos:pos + 4]))
        pos += length
    return out


def _skip_name(buf, pos):
    while True:
        n = buf[pos]
        if n == 0:
            return pos + 1
        if n & 0xC0 == 0xC0:
            return pos + 2
        pos += n + 1


def resolve_once(name):
    """The IPv4 address of `name` now, or None."""
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        pass
    if _in_cluster_zone(name):
        for server in os.environ["CAIRN_DNS"].split(","):
            try:
                found = _query_a(server.strip(), name)
            except OSError:
                continue
            if found:
                return found[0]
        return None
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
