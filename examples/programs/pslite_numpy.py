"""A parameter-server job in the shape of ps-lite (dmlc/ps-lite), in numpy over TCP.

Contract (ps-lite's DMLC_* environment, as Cairn's pslite kind and Kubeflow's MXJob set it):
  DMLC_ROLE            scheduler | server | worker
  DMLC_PS_ROOT_URI     the scheduler's name (a Cairn DNS name: resolved, retried until it answers)
  DMLC_PS_ROOT_PORT    the scheduler's port
  DMLC_NUM_SERVER      how many servers, DMLC_NUM_WORKER how many workers
  DMLC_NODE_HOST       the address a server or worker binds and is reached at, with PORT
  DMLC_USE_KUBERNETES  1: the scheduler binds 0.0.0.0 instead of DMLC_PS_ROOT_URI
The scheduler waits for every server and worker to register, gives each its rank and the
servers' addresses, then holds a barrier until all are ready. The model (softmax regression
on scikit-learn's bundled digits, 650 parameters) is split into key ranges, one per server.
Each worker trains on its shard of the data: pull the weights from every server, compute
the gradient with numpy, push it back; servers apply it (asynchronous SGD). Workers print
"step N loss L" and exit 0 at the end; the scheduler and servers, as in ps-lite, keep
running until they are stopped. A node that loses the scheduler before the workers finish
exits 1: the gang has to start again.
"""

import argparse
import os
import sys
import threading
import time

import numpy as np
from sklearn.datasets import load_digits

from cairn_net import Channel, connect, listen

FEATURES, CLASSES = 64, 10
NUM_KEYS = FEATURES * CLASSES + CLASSES


def key_range(rank, num_servers):
    """The keys server `rank` holds: an even split of [0, NUM_KEYS), as ps-lite's ranges."""
    return rank * NUM_KEYS // num_servers, (rank + 1) * NUM_KEYS // num_servers


def say(msg):
    print(msg, flush=True)


def die(msg):
    say(msg)
    os._exit(1)  # other threads hold sockets; leave at once


def scheduler(num_servers, num_workers):
    host = "0.0.0.0" if os.environ.get("DMLC_USE_KUBERNETES") == "1" else os.environ["DMLC_PS_ROOT_URI"]
    port = int(os.environ["DMLC_PS_ROOT_PORT"])
    sock = listen(host, port)
    say(f"scheduler listening on {host}:{port}, waiting for {num_servers} servers and {num_workers} workers")
    nodes = {"server": [], "worker": []}
    wanted = {"server": num_servers, "worker": num_workers}
    while any(len(nodes[r]) < wanted[r] for r in nodes):
        conn, _ = sock.accept()
        ch = Channel(conn)
        msg = ch.recv()
        role = (msg or {}).get("role")
        if not msg or msg.get("cmd") != "register" or role not in nodes or len(nodes[role]) >= wanted[role]:
            say(f"refused a registration: {msg}")
            ch.close()
            continue
        nodes[role].append((ch, msg))
        say(f"registered {role} {msg['host']}:{msg['port']}")
    servers = [[m["host"], m["port"]] for _, m in nodes["server"]]
    for role in nodes:
        for rank, (ch, _) in enumerate(nodes[role]):
            ch.send({"cmd": "assign", "rank": rank, "servers": servers, "num_workers": num_workers})
    everyone = nodes["server"] + nodes["worker"]
    for ch, m in everyone:  # the barrier: every node has set itself up
        if (ch.recv() or {}).get("cmd") != "ready":
            die(f"lost {m['role']} {m['host']}:{m['port']} before the barrier")
    for ch, _ in everyone:
        ch.send({"cmd": "start"})
    say(f"rendezvous done: servers {servers}")

    done = set()
    lock = threading.Lock()
    finished = threading.Event()

    def watch(role, rank, ch):
        while True:
            msg = ch.recv()
            if msg is None:
                # A worker that said it was done may leave; anyone else leaving breaks the gang.
                if not finished.is_set() and not (role == "worker" and rank in done):
                    die(f"lost {role} {rank} before the workers finished")
                return
            if msg.get("cmd") == "done" and role == "worker":
                say(f"worker {rank} finished, loss {msg.get('loss')}")
                with lock:
                    done.add(rank)
                    if len(done) == num_workers:
                        finished.set()

    for role in nodes:
        for rank, (ch, _) in enumerate(nodes[role]):
            threading.Thread(target=watch, args=(role, rank, ch), daemon=True).start()
    finished.wait()
    for ch, _ in nodes["server"]:
        ch.send({"cmd": "workers_done"})
    say(f"all {num_workers} workers finished; running until stopped")
    while True:
        time.sleep(3600)


def register(role):
    """Binds DMLC_NODE_HOST:PORT, registers with the scheduler; (listener, channel, assignment)."""
    host, port = os.environ["DMLC_NODE_HOST"], int(os.environ["PORT"])
    sock = listen(host, port)
    sched = Channel(connect(os.environ["DMLC_PS_ROOT_URI"], os.environ["DMLC_PS_ROOT_PORT"]))
    assign = sched.call({"cmd": "register", "role": role, "host": host, "port": port})
    say(f"{role} {assign['rank']} at {host}:{port}, servers {assign['servers']}")
    return sock, sched, assign


def server(lr):
    sock, sched, assign = register("server")
    lo, hi = key_range(assign["rank"], len(assign["servers"]))
    weights = np.zeros(hi - lo)
    lock = threading.Lock()
    say(f"server {assign['rank']} holds keys [{lo}, {hi})")

    def serve(ch):
        nonlocal weights
        while (msg := ch.recv()) is not None:
            if msg["cmd"] == "pull":
                with lock:
                    ch.send({"w": weights.tolist()})
            elif msg["cmd"] == "push":
                with lock:
                    weights = weights - lr * np.asarray(msg["grad"])
                ch.send({"ok": True})

    def accept():
        while True:
            conn, _ = sock.accept()
            threading.Thread(target=serve, args=(Channel(conn),), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    sched.send({"cmd": "ready"})
    if (sched.recv() or {}).get("cmd") != "start":
        die("lost the scheduler before the start")
    workers_done = False
    while True:  # never returns on its own: stopped by whoever runs it
        msg = sched.recv()
        if msg is None and not workers_done:
            die("lost the scheduler before the workers finished")
        if msg is None:
            time.sleep(3600)
        elif msg.get("cmd") == "workers_done":
            workers_done = True
            say("the workers have finished; serving until stopped")


def worker(steps, step_delay_s):
    _sock, sched, assign = register("worker")
    rank, num_workers = assign["rank"], assign["num_workers"]
    servers = [Channel(connect(h, p)) for h, p in assign["servers"]]
    ranges = [key_range(s, len(servers)) for s in range(len(servers))]
    digits = load_digits()
    x = digits.data[rank::num_workers] / 16.0
    y = np.eye(CLASSES)[digits.target[rank::num_workers]]
    sched.send({"cmd": "ready"})
    if (sched.recv() or {}).get("cmd") != "start":
        die("lost the scheduler before the start")

    def watch():
        if sched.recv() is None:
            die("lost the scheduler")

    threading.Thread(target=watch, daemon=True).start()
    say(f"worker {rank} of {num_workers}: {len(x)} examples")
    losses = []
    for step in range(steps):
        w = np.concatenate([np.asarray(s.call({"cmd": "pull"})["w"]) for s in servers])
        weights, bias = w[:FEATURES * CLASSES].reshape(FEATURES, CLASSES), w[FEATURES * CLASSES:]
        logits = x @ weights + bias
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        losses.append(float(-np.mean(np.sum(y * np.log(p + 1e-12), axis=1))))
        grad = np.concatenate([(x.T @ (p - y)).ravel(), (p - y).sum(axis=0)]) / len(x)
        for s, (lo, hi) in zip(servers, ranges):
            s.call({"cmd": "push", "grad": grad[lo:hi].tolist()})
        say(f"step {step} loss {losses[-1]:.4f}")
        time.sleep(step_delay_s)
    sched.send({"cmd": "done", "loss": round(losses[-1], 4)})
    say(f"worker {rank} done: loss {losses[0]:.4f} -> {losses[-1]:.4f}")


def main():
    parser = argparse.ArgumentParser(description="a ps-lite style parameter-server job")
    parser.add_argument("--steps", type=int, default=50, help="training steps per worker")
    parser.add_argument("--lr", type=float, default=0.5, help="the servers' learning rate")
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds a worker waits between steps")
    args = parser.parse_args()
    role = os.environ.get("DMLC_ROLE")
    if role == "scheduler":
        scheduler(int(os.environ["DMLC_NUM_SERVER"]), int(os.environ["DMLC_NUM_WORKER"]))
    elif role == "server":
        server(args.lr)
    elif role == "worker":
        worker(args.steps, args.step_delay)
    else:
        sys.exit(f"DMLC_ROLE must be scheduler, server or worker, got {role!r}")


if __name__ == "__main__":
    main()
