"""An indexed batch job: a fixed list of items split over the replicas by index.

Contract (Volcano's, as Cairn's batch kind sets it): VC_TASK_INDEX is this replica's index
(VK_TASK_INDEX, its older name, is read when it is absent) and VC_WORKER_NUM the number of
replicas. Replica i takes items i, i+N, i+2N, ... of --items (300 by default). Each item's
result goes to its own file, RESULTS/item-NNNNN.json (RESULTS: --out, else $BATCH_OUT_DIR,
else $CAIRN_JOB_DIR/results), written to a temporary name and then linked into place, which
fails if the result is already there: an item done before a restart is skipped, never done
twice. Each item done also appends "ITEM REPLICA" to RESULTS/processed.log, so a test can
check that every item was processed exactly once.

A replica asked to stop (SIGTERM: a restart of the whole job, a deletion) finishes the item
in hand — its result and its line in processed.log — and exits 143 before the next, so no
item is left done but unrecorded.

--fail-at ITEM makes the replica holding that item exit 3 just before it (once, remembered
by a marker in RESULTS; with --fail-always every time), to exercise restart policies.
"""

import argparse
import hashlib
import json
import os
import signal
import socket
import sys
import time

stopping = False


def on_term(_signum, _frame):
    global stopping
    stopping = True


def process(item):
    """The work: a digest standing in for a real computation, checkable by the test."""
    return hashlib.sha256(f"item-{item}".encode()).hexdigest()


def main():
    parser = argparse.ArgumentParser(description="an indexed batch job")
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--out", default=os.environ.get("BATCH_OUT_DIR") or (
        os.path.join(os.environ["CAIRN_JOB_DIR"], "results") if os.environ.get("CAIRN_JOB_DIR") else None))
    parser.add_argument("--item-delay", type=float, default=0.0, help="seconds each item takes")
    parser.add_argument("--fail-at", type=int, default=None, help="exit 3 before this item")
    parser.add_argument("--fail-always", action="store_true", help="with --fail-at: on every attempt")
    args = parser.parse_args()
    index = os.environ.get("VC_TASK_INDEX", os.environ.get("VK_TASK_INDEX"))
    count = os.environ.get("VC_WORKER_NUM")
    if index is None or count is None or not index.isdigit() or not count.isdigit() or int(index) >= int(count):
        sys.exit(f"VC_TASK_INDEX ({index}) and VC_WORKER_NUM ({count}) must be integers, the index below the count")
    if not args.out:
        sys.exit("no results directory: give --out, BATCH_OUT_DIR or CAIRN_JOB_DIR")
    index, count = int(index), int(count)
    os.makedirs(args.out, exist_ok=True)

    signal.signal(signal.SIGTERM, on_term)
    done = skipped = 0
    for item in range(index, args.items, count):
        if stopping:
            print(f"replica {index}: stopping as asked, after {done} items", flush=True)
            sys.exit(143)
        final = os.path.join(args.out, f"item-{item:05d}.json")
        if os.path.exists(final):
            skipped += 1
            continue
        if item == args.fail_at:
            marker = os.path.join(args.out, f"failed-at-{item}")
            if args.fail_always or not os.path.exists(marker):
                open(marker, "a").close()
                print(f"replica {index}: failing before item {item} as asked", flush=True)
                sys.exit(3)
        result = {"item": item, "replica": index, "replicas": count, "host": socket.gethostname(), "digest": process(item)}
        tmp = f"{final}.{index}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(result, f)
        try:
            os.link(tmp, final)  # fails if the item's result exists: never twice
            done += 1
            with open(os.path.join(args.out, "processed.log"), "a") as log:  # one line per item done
                log.write(f"{item} {index}\n")
        except FileExistsError:
            skipped += 1
        finally:
            os.unlink(tmp)
        time.sleep(args.item_delay)
    print(f"replica {index} of {count}: processed {done} items, {skipped} already done", flush=True)


if __name__ == "__main__":
    main()
