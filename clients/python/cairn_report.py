"""Cairn's report client for tuning trials: the trial's parameters in, its metrics out.

    from cairn_report import params, report

    p = params()                      # {"learning_rate": 0.05, "batch_size": 32}
    for epoch in range(1, 11):
        ...
        report(step=epoch, accuracy=acc, loss=loss)   # prints: step=3 accuracy=0.91 loss=0.2
    report(accuracy=acc)                              # prints: accuracy=0.93

A trial reports by printing ``name=value`` lines on stdout, which the master reads; a line
with ``step=N`` is an intermediate result (early stopping judges those), the latest value of
the objective is the trial's result. ``params()`` reads ``$CAIRN_SANDBOX/params.json``, which
Cairn writes into every trial's sandbox (falling back to ``./params.json``), and returns it
as it is. No dependencies beyond the standard library; copy this file next to the trial.
"""

import json
import math
import numbers
import os
import re
import sys

__all__ = ["params", "report"]

_NAME = re.compile(r"^[A-Za-z0-9_|-]+$")
# A metric named like the step would be read as the step.
_RESERVED = {"step", "epoch"}


def params():
    """The trial's parameters, from $CAIRN_SANDBOX/params.json, else ./params.json."""
    candidates = []
    sandbox = os.environ.get("CAIRN_SANDBOX")
    if sandbox:
        candidates.append(os.path.join(sandbox, "params.json"))
    candidates.append("params.json")
    for path in candidates:
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f)
    raise FileNotFoundError(
        "cairn_report: no params.json in $CAIRN_SANDBOX or the current directory "
        "(is this running as a Cairn trial?)")


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"cairn_report: {name} must be a number, got {value!r}")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"cairn_report: {name} must be a finite number, got {v!r}")
    return repr(v)


def report(step=None, **metrics):
    """Prints one line of metrics (``step=3 accuracy=0.91 loss=0.2``) and flushes stdout."""
    if not metrics:
        raise ValueError("cairn_report: report() needs at least one metric, e.g. report(accuracy=0.9)")
    parts = []
    if step is not None:
        if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
            raise ValueError(f"cairn_report: step must be a whole number of 0 or more, got {step!r}")
        parts.append(f"step={int(step)}")
    for name, value in metrics.items():
        if not _NAME.match(name):
            raise ValueError(f"cairn_report: {name!r} is not a metric name (letters, digits, _, | or -)")
        if name.lower() in _RESERVED:
            raise ValueError(f"cairn_report: {name!r} is read as the step: pass it as step=")
        parts.append(f"{name}={_number(name, value)}")
    sys.stdout.write(" ".join(parts) + "\n")
    sys.stdout.flush()
