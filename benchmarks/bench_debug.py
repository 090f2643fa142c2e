"""What the author-facing checks cost: an env's step with ``debug=False`` against another
copy of batchenv (e.g. the code before the checks), and with ``debug=True``.

    git archive <commit> | tar -x -C /tmp/base   # a copy of the code to compare with
    python benchmarks/bench_debug.py --baseline /tmp/base [--env BatchPong] [--num-envs 4096]

Both copies are imported into this one process (the baseline's modules under their own
names) and stepped in alternating blocks; the medians per step and their ratio are printed.
Without ``--baseline`` only debug off and on are compared. Figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = str(Path(__file__).resolve().parents[1])  # this tree's batchenv, installed or not


def load_batchenv(path: str) -> Any:
    """``batchenv`` imported from ``path``, kept apart from this tree's: its modules are moved
    out of ``sys.modules`` after the import (a step imports nothing lazily)."""
    saved = {k: sys.modules.pop(k) for k in list(sys.modules)
             if k == "batchenv" or k.startswith("batchenv.")}
    sys.path.insert(0, path)
    try:
        module = importlib.import_module("batchenv")
        if importlib.util.find_spec("batchenv.debug"):
            importlib.import_module("batchenv.debug")
    finally:
        sys.path.remove(path)
        mine = {k: sys.modules.pop(k) for k in list(sys.modules)
                if k == "batchenv" or k.startswith("batchenv.")}
        sys.modules.update(saved)
    module._modules = mine  # keep them alive
    return module


def with_modules(module: Any) -> None:
    """Put a loaded copy's modules (back) into sys.modules: debug mode imports lazily."""
    for name in [k for k in sys.modules if k == "batchenv" or k.startswith("batchenv.")]:
        del sys.modules[name]
    sys.modules.update(module._modules)


def stepper(env: Any, steps: int) -> Any:
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(steps)]
    env.reset(seed=0)
    for a in actions[:20]:
        env.step(a)

    def run() -> float:
        start = time.perf_counter()
        for a in actions:
            env.step(a)
        return (time.perf_counter() - start) / steps

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="path of another batchenv tree to compare with")
    parser.add_argument("--env", default="BatchPong", help="a batchenv env class name")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--instances", type=int, default=3,
                        help="envs per case: where an env's arrays land in memory moves its "
                             "step time by a few percent, so each case gets several")
    args = parser.parse_args()
    n, steps = args.num_envs, args.steps
    ours = load_batchenv(ROOT)  # both copies loaded alike: no bias from the import order
    k = args.instances
    with_modules(ours)
    make = getattr(ours, args.env)
    cases = {"debug=False": [stepper(make(n), steps) for _ in range(k)],
             "debug=True": [stepper(make(n, debug=True), max(steps // 10, 5))]}
    if args.baseline:
        base = load_batchenv(args.baseline)
        cases["baseline"] = [stepper(getattr(base, args.env)(n), steps) for _ in range(k)]
    times: dict[str, list[float]] = {name: [] for name in cases}
    blocks = [(name, run) for name, runs in cases.items() for run in runs]
    order = random.Random(0)
    for _ in range(args.rounds):  # interleaved, in a new order each round: load drifts and
        order.shuffle(blocks)  # the caches a block leaves behind hit every case alike
        for name, run in blocks:
            times[name].append(run())
    med = {name: statistics.median(t) * 1e6 for name, t in times.items()}
    print(f"{args.env}({n}) step, median over {args.rounds} interleaved rounds x {k} envs "
          f"(debug=True: 1 env):")
    for name, us in med.items():
        print(f"  {name:12} {us:9.1f} us/step")
    if "baseline" in med:
        print(f"  debug=False / baseline: {med['debug=False'] / med['baseline']:.3f}")
    print(f"  debug=True / debug=False: {med['debug=True'] / med['debug=False']:.1f}")


if __name__ == "__main__":
    main()
