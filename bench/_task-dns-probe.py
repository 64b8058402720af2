# Run inside a Cairn task by bench/task-dns.ts: times name lookups the way programs make them.
# argv: CLUSTER_NAME FORWARDED_NAME COUNT RUNS. Prints one JSON line: per kind, per run,
# lookups/s and p50/p99 in microseconds.
#   getaddrinfo-cluster    socket.getaddrinfo of a replica's name (the system resolver: the
#                          agent's task resolver, then a master)
#   getaddrinfo-forwarded  of a name outside the zone (the task resolver, then the upstream)
#   direct-master          the same cluster name asked of a master's DNS server directly (raw
#                          UDP, one query): the floor, without the task resolver's hop
import json
import os
import random
import socket
import struct
import sys
import time

cluster, forwarded, count, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


def query(name):
    qid = random.randrange(1 << 16)
    q = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    return qid, struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack(">HH", 1, 1)


def direct(server):
    host, _, port = server.rpartition(":")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    addr = (host, int(port))

    def one():
        qid, pkt = query(cluster)
        s.sendto(pkt, addr)
        while True:
            reply, _ = s.recvfrom(4096)
            if struct.unpack(">H", reply[:2])[0] == qid:
                if reply[3] & 0x0F or struct.unpack(">H", reply[6:8])[0] == 0:
                    raise OSError(f"{cluster}: no answer from {server}")
                return
    return one


def timed(fn):
    samples = []
    t0 = time.perf_counter()
    for _ in range(count):
        a = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - a)
    wall = time.perf_counter() - t0
    samples.sort()
    return {"lookupsPerS": round(count / wall), "p50Us": round(samples[len(samples) // 2] * 1e6), "p99Us": round(samples[int(len(samples) * 0.99)] * 1e6)}


kinds = {
    "getaddrinfo-cluster": lambda: socket.getaddrinfo(cluster, None, socket.AF_INET),
    "getaddrinfo-forwarded": lambda: socket.getaddrinfo(forwarded, None, socket.AF_INET),
}
masters = [s for s in os.environ.get("CAIRN_DNS", "").split(",") if s]
if masters:
    kinds["direct-master"] = direct(masters[0])
for fn in kinds.values():
    fn()  # warm: the first answer is not what a loop sees
out = {k: [timed(fn) for _ in range(runs)] for k, fn in kinds.items()}
out["resolvConf"] = open("/etc/resolv.conf").read().split("\n")[1]
print(json.dumps(out), flush=True)
