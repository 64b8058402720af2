# Optuna's side of bench/tuning-quality.ts: Optuna's multivariate TPE on one test function in
# one mode over a range of seeds, printing, as JSON on stdout, the number of trials each seed
# needed to come within `threshold` of the optimum (`cap` where it never did).
#
#   /usr/bin/python3 bench/_optuna-quality.py FUNCTION MODE SEEDS CAP BATCH THRESHOLD [FIRST_SEED]
#
# FUNCTION: branin | hartmann6. MODE: sequential (ask one, tell one) | parallel (ask BATCH,
# each one's parameters drawn before the next ask, so the constant liar sees them; then tell
# all BATCH). A trial is counted by its creation order, as on Cairn's side.

import json
import math
import sys
import time
import warnings

import optuna

warnings.filterwarnings("ignore")
optuna.logging.set_verbosity(optuna.logging.WARNING)


def branin(x):
    x1, x2 = x
    b = 5.1 / (4 * math.pi**2)
    c = 5 / math.pi
    t = 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


H_ALPHA = [1.0, 1.2, 3.0, 3.2]
H_A = [
    [10, 3, 17, 3.5, 1.7, 8],
    [0.05, 10, 17, 0.1, 8, 14],
    [3, 3.5, 1.7, 10, 17, 8],
    [17, 8, 0.05, 10, 0.1, 14],
]
H_P = [
    [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
    [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
    [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
    [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
]


def hartmann6(x):
    return -sum(
        H_ALPHA[i] * math.exp(-sum(H_A[i][j] * (x[j] - H_P[i][j]) ** 2 for j in range(6)))
        for i in range(4)
    )


FUNCTIONS = {
    "branin": (branin, [(-5.0, 10.0), (0.0, 15.0)], 0.397887),
    "hartmann6": (hartmann6, [(0.0, 1.0)] * 6, -3.32237),
}


def trials_to_target(fn, bounds, optimum, parallel, seed, cap, batch, threshold):
    sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True, constant_liar=parallel)
    study = optuna.create_study(sampler=sampler)
    made = 0
    while made < cap:
        asked = []
        for _ in range(min(batch if parallel else 1, cap - made)):
            trial = study.ask()
            x = [trial.suggest_float(f"x{j}", lo, hi) for j, (lo, hi) in enumerate(bounds)]
            made += 1
            asked.append((trial, x, made))
        hit = None
        for trial, x, number in asked:
            y = fn(x)
            study.tell(trial, y)
            if hit is None and y - optimum < threshold:
                hit = number
        if hit is not None:
            return hit
    return cap


def main():
    name, mode, seeds, cap, batch, threshold = sys.argv[1:7]
    first = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    fn, bounds, optimum = FUNCTIONS[name]
    out = []
    start = time.time()
    for seed in range(first, first + int(seeds)):
        out.append(
            trials_to_target(fn, bounds, optimum, mode == "parallel", seed, int(cap), int(batch), float(threshold))
        )
        print(f"optuna {name} {mode} seed {seed}: {out[-1]}", file=sys.stderr, flush=True)
    json.dump({"trials": out, "seconds": round(time.time() - start, 1), "optuna": optuna.__version__}, sys.stdout)


if __name__ == "__main__":
    main()
