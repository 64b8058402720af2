"""Between-graph replicated training driven by TF_CONFIG, with parameter-server (ps) tasks.

Contract (TensorFlow's TF_CONFIG, as Kubeflow's TFJob and Cairn's tensorflow kind set it):
  TF_CONFIG = {"cluster": {"chief": [...], "ps": ["host:port", ...], "worker": [...]},
               "task": {"type": "worker", "index": 1}}
  CAIRN_JOB_DIR (or --checkpoint-dir): where checkpoints live across restarts.
The cluster is checked first: known task types, one chief at most, at least one ps and one
trainer, this task's own index within its type, every address host:port and resolvable
(Cairn DNS names are retried until their tasks run); --expect ps=2,worker=3 also checks the
counts. Each ps task holds one shard of the model (softmax regression on scikit-learn's
digits) and serves pulls and pushes; it never exits on its own, as TensorFlow's servers do
not. Workers (and the chief) train on their shard of the data: pull every shard, compute the
gradient with numpy, push it. Each checkpoints its step (the chief also the model) every few
steps; started again, it prints "resumed at step N" and goes on from there. The chief (or
worker 0 when there is none) decides success: once every trainer has finished it evaluates
the model on all the data and exits 0 if the loss fell.
"""

import argparse
import json
import math
import os
import sys
import threading
import time

import numpy as np
from sklearn.datasets import load_digits

from cairn_net import Channel, connect, listen, resolve

FEATURES, CLASSES = 64, 10
NUM_KEYS = FEATURES * CLASSES + CLASSES
TASK_TYPES = ("chief", "master", "ps", "worker", "evaluator")


def say(msg):
    print(msg, flush=True)


def check_cluster(tf_config, expect):
    """(cluster, task type, index) from TF_CONFIG, or exits 2 naming what is wrong."""
    def bad(why):
        sys.exit(f"TF_CONFIG: {why}")

    try:
        conf = json.loads(tf_config)
    except ValueError as err:
        bad(f"not JSON: {err}")
    cluster, task = conf.get("cluster"), conf.get("task")
    if not isinstance(cluster, dict) or not cluster:
        bad("cluster must name its task types")
    for kind, addrs in cluster.items():
        if kind not in TASK_TYPES:
            bad(f"cluster.{kind}: unknown task type (expected one of {', '.join(TASK_TYPES)})")
        if not isinstance(addrs, list) or not addrs:
            bad(f"cluster.{kind}: must be a list of host:port")
        for i, a in enumerate(addrs):
            host, _, port = str(a).rpartition(":")
            if not host or not port.isdigit():
                bad(f"cluster.{kind}[{i}]: {a!r} is not host:port")
    if len(cluster.get("chief", [])) + len(cluster.get("master", [])) > 1:
        bad("cluster: at most one chief")
    if not cluster.get("ps"):
        bad("cluster.ps: this program needs at least one ps task")
    if not any(cluster.get(k) for k in ("chief", "master", "worker")):
        bad("cluster: no chief or worker to train")
    for kind, n in expect.items():
        if len(cluster.get(kind, [])) != n:
            bad(f"cluster.{kind}: {len(cluster.get(kind, []))} tasks, expected {n}")
    if not isinstance(task, dict) or task.get("type") not in cluster:
        bad(f"task.type: {task.get('type') if isinstance(task, dict) else task!r} is not in the cluster")
    index = task.get("index")
    if not isinstance(index, int) or not 0 <= index < len(cluster[task["type"]]):
        bad(f"task.index: {index!r} is outside 0..{len(cluster[task['type']]) - 1}")
    for kind, addrs in cluster.items():
        for a in addrs:
            resolve(a.rpartition(":")[0])
    return cluster, task["type"], index


def key_range(shard, shards):
    return shard * NUM_KEYS // shards, (shard + 1) * NUM_KEYS // shards


def write_json(path, value):
    """Atomically: a reader sees the old checkpoint or the new one, never half of one."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def run_ps(cluster, index, ckpt_dir):
    lo, hi = key_range(index, len(cluster["ps"]))
    weights = np.zeros(hi - lo)
    model = read_json(os.path.join(ckpt_dir, "model.json"))
    if model:
        weights = np.asarray(model["w"][lo:hi])
        say(f"ps {index} restored its shard from the checkpoint of step {model['step']}")
    lock = threading.Lock()
    finished = set()
    sock = listen("0.0.0.0", cluster["ps"][index].rpartition(":")[2])
    say(f"ps {index} holds keys [{lo}, {hi}), serving on {cluster['ps'][index]}")

    def serve(ch):
        nonlocal weights
        while (msg := ch.recv()) is not None:
            with lock:
                if msg["cmd"] == "pull":
                    ch.send({"w": weights.tolist()})
                elif msg["cmd"] == "push":
                    weights = weights - msg["lr"] * np.asarray(msg["grad"])
                    ch.send({"ok": True})
                elif msg["cmd"] == "done":
                    finished.add(msg["trainer"])
                    ch.send({"ok": True})
                elif msg["cmd"] == "status":
                    ch.send({"finished": sorted(finished)})

    while True:  # never returns on its own: stopped by whoever runs it
        conn, _ = sock.accept()
        threading.Thread(target=serve, args=(Channel(conn),), daemon=True).start()


class Model:
    """The model as the ps tasks hold it, shard by shard."""

    def __init__(self, ps_addrs):
        self.shards = [Channel(connect(*a.rpartition(":")[::2])) for a in ps_addrs]
        self.ranges = [key_range(i, len(ps_addrs)) for i in range(len(ps_addrs))]

    def pull(self):
        return np.concatenate([np.asarray(s.call({"cmd": "pull"})["w"]) for s in self.shards])

    def push(self, grad, lr):
        for s, (lo, hi) in zip(self.shards, self.ranges):
            s.call({"cmd": "push", "grad": grad[lo:hi].tolist(), "lr": lr})


def loss_and_grad(w, x, y):
    weights, bias = w[:FEATURES * CLASSES].reshape(FEATURES, CLASSES), w[FEATURES * CLASSES:]
    logits = x @ weights + bias
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    loss = float(-np.mean(np.sum(y * np.log(p + 1e-12), axis=1)))
    return loss, np.concatenate([(x.T @ (p - y)).ravel(), (p - y).sum(axis=0)]) / len(x)


def run_trainer(cluster, kind, index, ckpt_dir, args):
    trainers = [f"{k}:{i}" for k in ("chief", "master", "worker") for i in range(len(cluster.get(k, [])))]
    me = f"{kind}:{index}"
    is_chief = me == trainers[0]
    digits = load_digits()
    x_all, y_all = digits.data / 16.0, np.eye(CLASSES)[digits.target]
    k, n = trainers.index(me), len(trainers)
    x, y = x_all[k::n], y_all[k::n]
    model = Model(cluster["ps"])
    state_file = os.path.join(ckpt_dir, f"{kind}-{index}.json")
    start = (read_json(state_file) or {}).get("step", 0)
    if start > 0:
        say(f"resumed at step {start}")
    say(f"{me} of {n} trainers{' (chief)' if is_chief else ''}: {len(x)} examples, steps {start}..{args.steps}")
    for step in range(start, args.steps):
        loss, grad = loss_and_grad(model.pull(), x, y)
        model.push(grad, args.lr)
        say(f"step {step} loss {loss:.4f}")
        if (step + 1) % args.checkpoint_every == 0 or step + 1 == args.steps:
            if is_chief:
                write_json(os.path.join(ckpt_dir, "model.json"), {"step": step + 1, "w": model.pull().tolist()})
            write_json(state_file, {"step": step + 1})
            say(f"checkpoint at step {step + 1}")
        time.sleep(args.step_delay)
    model.shards[0].call({"cmd": "done", "trainer": me})
    if not is_chief:
        say(f"{me} finished")
        return
    while len(model.shards[0].call({"cmd": "status"})["finished"]) < n:
        time.sleep(0.2)
    final, _ = loss_and_grad(model.pull(), x_all, y_all)
    fell = final < math.log(CLASSES)  # the loss of the untrained (zero) model
    say(f"chief: all {n} trainers finished; loss {math.log(CLASSES):.4f} -> {final:.4f}: {'success' if fell else 'the loss did not fall'}")
    sys.exit(0 if fell else 1)


def main():
    parser = argparse.ArgumentParser(description="between-graph training from TF_CONFIG with ps tasks")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--checkpoint-every", type=int, default=5)
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds between steps")
    parser.add_argument("--checkpoint-dir", default=os.environ.get("CAIRN_JOB_DIR"))
    parser.add_argument("--expect", default="", help="task counts to check, e.g. ps=2,worker=3")
    args = parser.parse_args()
    if not args.checkpoint_dir:
        sys.exit("no checkpoint directory: set CAIRN_JOB_DIR or --checkpoint-dir")
    expect = {k: int(v) for k, v in (p.split("=") for p in args.expect.split(",") if p)}
    cluster, kind, index = check_cluster(os.environ.get("TF_CONFIG", ""), expect)
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    if kind == "ps":
        run_ps(cluster, index, args.checkpoint_dir)
    elif kind == "evaluator":
        say("evaluator: nothing to evaluate between checkpoints here")
    else:
        run_trainer(cluster, kind, index, args.checkpoint_dir, args)


if __name__ == "__main__":
    main()
