"""One trial of a tuning experiment: an MLP on scikit-learn's digits, trained with SGD.

The tuning paper's App Runner trained an MLP on MNIST; this is the same search on the digits
data set that ships with scikit-learn (1797 8x8 images, nothing downloaded), so it runs on any
host with Debian's python3-sklearn. Parameters come the way every Cairn trial gets them —
here from the command line (`--learning-rate ${learning_rate}`), with params.json in the
sandbox and CAIRN_PARAM_* variables as fallbacks. After each epoch it prints the validation
accuracy with its step (`step=3 accuracy=0.9312`), the lines Cairn reads as intermediate
results for early stopping; the last one is the trial's result. The data set comes from
`--data DIR` when given (an input mapped into the sandbox holding digits.npz), else from
scikit-learn itself; `--output DIR` (an output mapped into the sandbox) gets result.json.

    /usr/bin/python3 digits_mlp.py --learning-rate 0.05 --momentum 0.9 --batch-size 32
"""

import argparse
import json
import os
import sys
import warnings


def param(name, args_value, cast):
    if args_value is not None:
        return cast(args_value)
    sandbox = os.environ.get("CAIRN_SANDBOX", ".")
    path = os.path.join(sandbox, "params.json")
    if os.path.exists(path):
        with open(path) as f:
            values = json.load(f)
        if name in values:
            return cast(values[name])
    env = os.environ.get("CAIRN_PARAM_" + name.upper())
    if env is None:
        sys.exit(f"digits_mlp: no value for {name} (flag, params.json or CAIRN_PARAM_{name.upper()})")
    return cast(env)


def load(data_dir):
    if data_dir:
        import numpy as np
        with np.load(os.path.join(data_dir, "digits.npz")) as d:
            return d["x"], d["y"]
    from sklearn.datasets import load_digits
    digits = load_digits()
    return digits.data, digits.target


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learning-rate")
    parser.add_argument("--momentum")
    parser.add_argument("--batch-size")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--data", default=None)
    parser.add_argument("--output", default=None, help="a directory to write result.json into")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    lr = param("learning_rate", args.learning_rate, float)
    momentum = param("momentum", args.momentum, float)
    batch = param("batch_size", args.batch_size, lambda v: int(float(v)))

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    x, y = load(args.data)
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.25, random_state=args.seed, stratify=y)
    scaler = StandardScaler().fit(x_train)
    x_train, x_val = scaler.transform(x_train), scaler.transform(x_val)
    model = MLPClassifier(hidden_layer_sizes=(64,), solver="sgd", learning_rate_init=lr, momentum=momentum,
                          batch_size=batch, max_iter=1, warm_start=True, random_state=args.seed)
    classes = sorted(set(y))
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.partial_fit(x_train, y_train, classes=classes) if epoch > 1 else model.fit(x_train, y_train)
        accuracy = model.score(x_val, y_val)
        print(f"step={epoch} accuracy={accuracy:.4f} loss={model.loss_:.4f}", flush=True)
    if args.output:
        os.makedirs(args.output, exist_ok=True)
        with open(os.path.join(args.output, "result.json"), "w") as f:
            json.dump({"learning_rate": lr, "momentum": momentum, "batch_size": batch, "accuracy": accuracy}, f)
    print(f"accuracy={accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
