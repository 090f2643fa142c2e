"""What each speed hook of a revision's ``BatchEnv`` buys, measured in one process.

    python benchmarks/ab_hooks.py --ref 3423df6     # the last revision with every hook

For the revision ``--ref`` (extracted as in ``ab_versions.py``), every shipped env is timed
as shipped and with one hook switched off at a time (subclasses; the rules are unchanged),
blocks interleaved round by round. A ratio above 1 is what the hook saves. Hooks:

* ``buffers``: the kernel writes reward / terminated into ``reward_buffer`` /
  ``terminated_buffer`` (off: into its own arrays, which the base class copies);
* ``fills_out``: ``observe_fills_out`` (off: observe into the buffer, then copy it);
* ``resetting``: BatchPong draws the serves of this step's resets with its points' serves;
* ``reset_rows``: the env writes start states into the reset rows (off: the base class's
  default, ``take_rows`` / ``reset_envs`` / ``put_rows``; also switches ``resetting`` off).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from types import ModuleType
from typing import Any

import numpy as np
from ab_versions import compare, extract, load_package


def variant(pkg: ModuleType, cls_name: str, off: str) -> type:
    cls = getattr(pkg, cls_name)
    if off == "shipped":
        return cls
    ns: dict[str, Any] = {}
    if off == "buffers":
        def init(self: Any, *a: Any, **k: Any) -> None:
            cls.__init__(self, *a, **k)
            self._own = (np.zeros(self.num_envs), np.zeros(self.num_envs, dtype=bool))

        ns["__init__"] = init
        ns["reward_buffer"] = property(lambda self: self._own[0])
        ns["terminated_buffer"] = property(lambda self: self._own[1])
    elif off == "fills_out":
        def init(self: Any, *a: Any, **k: Any) -> None:
            cls.__init__(self, *a, **k)
            self.observe_fills_out = False

        ns["__init__"] = init
    elif off in ("resetting", "reset_rows"):
        ns["resetting"] = property(lambda self: None)
        if off == "reset_rows":
            own = cls.reset_rows
            ns["reset_rows"] = pkg.BatchEnv.reset_rows

            def reset_envs(self: Any, s: Any, rng: Any) -> None:
                own(self, s, slice(None), rng)

            ns["reset_envs"] = reset_envs
    return type(f"{cls_name}_{off}", (cls,), ns)


def stepper(cls: type, n: int) -> Any:
    env = cls(n)
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(16)]
    step, t = env.step, [0]

    def run() -> None:
        step(actions[t[0] & 15])
        t[0] += 1

    for _ in range(200):
        run()
    return run


CASES = [
    ("BatchPong", 4096, ["buffers", "fills_out", "resetting", "reset_rows"]),
    ("BatchPong", 65536, ["buffers", "fills_out", "resetting", "reset_rows"]),
    ("BatchCartPole", 4096, ["buffers", "fills_out", "reset_rows"]),
    ("BatchMountainCar", 4096, ["fills_out", "reset_rows"]),
    ("BatchMountainCarContinuous", 4096, ["fills_out", "reset_rows"]),
    ("BatchAcrobot", 4096, ["fills_out", "reset_rows"]),
    ("BatchPendulum", 4096, ["fills_out", "reset_rows"]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="3423df6")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--block", type=float, default=0.2)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pkg = load_package(extract(args.ref, tmp))
        print(f"{args.ref}: off/shipped step time (above 1: the hook saves that much)")
        for name, n, hooks in CASES:
            if args.only and name not in args.only.split(","):
                continue
            runs = {off: stepper(variant(pkg, name, off), n) for off in ["shipped", *hooks]}
            med = compare(runs, args.rounds, args.block)
            base = med["shipped"]
            cells = "  ".join(f"{off} {med[off] / base:.3f}" for off in hooks)
            print(f"{name} {n}: shipped {base * 1e6:.1f} µs; {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
