"""The framework's floor, old against new, in one process: a game with no rules written for
another git revision's ``BatchEnv`` (by default ``c2c5b7d``, the main of 2026-12-02 00:31 on
which issue 21 was filed: numpy kernels only, the base class's numpy passes around them)
beside the same games on this checkout, as numpy kernels and as per-env kernels (the base
class's work inside the compiled pass).

    python benchmarks/ab_floor.py [--ref c2c5b7d] [--sizes 256 4096 65536] [--rounds 7]

Two games (those of ``bench_kernels.py``): ``floor`` (one float32 field, a 1-float
observation, a time limit of 100) and ``minatar-floor`` (MinAtar Breakout's shape: 3
actions, one sticky draw per step, a 10x10x4 bool observation cleared every step). Every
case is timed once per round, the order rotated, CPU time (``time.process_time``); prints
the median ns per env-step and, per case, the median over rounds of its time over the old
floor's. The other revision's package is extracted with ``git archive`` and imported beside
this one (``ab_versions.load_package``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium import spaces

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_kernels as bk  # noqa: E402
from ab_versions import extract, load_package  # noqa: E402


def old_floors(pkg: ModuleType) -> tuple[type, type]:
    """``floor`` and ``minatar-floor`` as numpy kernels on ``pkg``'s ``BatchEnv``: the
    kernels of ``bench_kernels.NumpyFloor`` and ``NumpyMinAtarFloor``, written against the
    old base class's API (which then had no ``observe_fills_out`` class attribute)."""

    class Floor(pkg.BatchEnv):  # type: ignore[misc, name-defined]
        state_dtype = np.dtype([("x", np.float32)])
        single_action_space = spaces.Discrete(2)
        single_observation_space = spaces.Box(-1, 1, (1,), np.float32)
        default_max_episode_steps = 100

        def __init__(self, n: int, **kw: Any) -> None:
            super().__init__(n, **kw)
            self.zeros, self.falses = np.zeros(n), np.zeros(n, dtype=bool)
            self.observe_fills_out = True

        def reset_envs(self, s, rng):  # type: ignore[no-untyped-def]
            s.x[:] = 0.0

        def step_envs(self, s, action, rng):  # type: ignore[no-untyped-def]
            return self.zeros, self.falses

        def observe(self, s, out):  # type: ignore[no-untyped-def]
            out[:, 0] = s.x

    class MinAtarFloor(pkg.BatchEnv):  # type: ignore[misc, name-defined]
        state_dtype = np.dtype([("last_action", np.int8)])
        single_action_space = spaces.Discrete(3)
        single_observation_space = spaces.Box(0, 1, (10, 10, 4), np.bool_)
        default_max_episode_steps = 10_000

        def __init__(self, n: int, **kw: Any) -> None:
            super().__init__(n, **kw)
            self.zeros, self.falses = np.zeros(n), np.zeros(n, dtype=bool)
            self.observe_fills_out = True

        def reset_envs(self, s, rng):  # type: ignore[no-untyped-def]
            s.last_action[:] = 0

        def step_envs(self, s, action, rng):  # type: ignore[no-untyped-def]
            fresh = rng.random() >= bk.STICKY
            np.copyto(s.last_action, action, casting="unsafe", where=fresh)
            return self.zeros, self.falses

        def observe(self, s, out):  # type: ignore[no-untyped-def]
            out.fill(False)

    return Floor, MinAtarFloor


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", default="c2c5b7d")
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 4096, 65536])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--block", type=float, default=1e6, help="env-steps per timed block")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old_floor, old_minatar = old_floors(load_package(extract(args.ref, tmp)))
        print(f"old: {args.ref}; CPU ns per env-step, medians of {args.rounds} rounds; "
              f"ratio: time over the old floor's (per round, median)")
        for n in args.sizes:
            cases = {"floor, old (numpy)": old_floor(n), "floor, numpy": bk.NumpyFloor(n),
                     "floor, per-env": bk.PerEnvFloor(n),
                     "minatar-floor, old (numpy)": old_minatar(n),
                     "minatar-floor, numpy": bk.NumpyMinAtarFloor(n),
                     "minatar-floor, per-env": bk.PerEnvMinAtarFloor(n)}
            runs = {name: bk.stepper(env, n, time.process_time) for name, env in cases.items()}
            steps = max(3, int(args.block / n))
            times: dict[str, list[float]] = {name: [] for name in runs}
            for r in range(args.rounds):
                names = list(runs)
                for name in names[r % len(names):] + names[:r % len(names)]:
                    times[name].append(runs[name](steps))
            print(f"\nnum_envs={n}")
            for name, t in times.items():
                old = times[name.split(",")[0] + ", old (numpy)"]
                ratio = statistics.median(x / o for x, o in zip(t, old))
                print(f"  {name:28s} {statistics.median(t) * 1e9:8.2f} ns   {ratio:5.2f} of "
                      f"the old floor's time")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
