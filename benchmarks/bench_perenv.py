"""The framework's floor: a game with no rules, stepped by the base class as numpy kernels
(the base class's numpy passes around them) and as per-env kernels (the base class's work in
the same compiled pass), interleaved in one run; and a small game (Catch) in both forms and
as a plain Python loop over the same per-env functions.

    python benchmarks/bench_perenv.py [--num-envs 4096] [--rounds 7]

Prints ns per env-step (median of rounds) and the ratios; docs/performance.md quotes it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from gymnasium import spaces

import batchenv

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_perenv import NumpyCatch, PerEnvCatch  # noqa: E402  (the same rules, both forms)


class _Empty(batchenv.BatchEnv):
    state_dtype = np.dtype([("x", np.float32)])
    single_action_space = spaces.Discrete(2)
    single_observation_space = spaces.Box(-1, 1, (1,), np.float32)
    default_max_episode_steps = 100


class NumpyFloor(_Empty):
    def reset_envs(self, s, rng):
        s.x[:] = 0.0

    def step_envs(self, s, action, rng):
        return self.zeros, self.falses

    def observe(self, s, out):
        out[:, 0] = s.x

    def __init__(self, n, **kw):
        super().__init__(n, **kw)
        self.zeros, self.falses = np.zeros(n), np.zeros(n, dtype=bool)


class PerEnvFloor(_Empty):
    @staticmethod
    def reset_env(p, s, i):
        s.x[i] = 0.0

    @staticmethod
    def step_env(p, s, i, action):
        return 0.0, False

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[0] = s.x[i]


def per_step_ns(env, n, steps):
    env.reset(seed=0)
    actions = [np.random.default_rng(k).integers(0, env.single_action_space.n, n)
               for k in range(4)]
    env.step(actions[0])  # compile
    t = time.perf_counter()
    for k in range(steps):
        env.step(actions[k & 3])
    return (time.perf_counter() - t) / steps / n * 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    n = args.num_envs
    cases = {
        "floor, numpy kernels (old)": lambda: NumpyFloor(n),
        "floor, per-env numba (1 thread)": lambda: PerEnvFloor(n),
        "floor, per-env numba (2 threads)": lambda: PerEnvFloor(n, num_threads=2),
        "Catch, numpy kernels": lambda: NumpyCatch(n),
        "Catch, per-env numba (1 thread)": lambda: PerEnvCatch(n),
        "Catch, per-env Python loop": lambda: PerEnvCatch(n, kernels="python"),
    }
    envs = {name: make() for name, make in cases.items()}
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):  # interleaved: every case once per round
        for name, env in envs.items():
            steps = max(3, args.steps // 100) if "Python" in name else args.steps
            times[name].append(per_step_ns(env, n, steps))
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"num_envs={n}, medians of {args.rounds} interleaved rounds (ns per env-step)")
    for name, v in med.items():
        print(f"  {name:36s} {v:10.1f}")
    floor, catch = med["floor, per-env numba (1 thread)"], med["Catch, per-env numba (1 thread)"]
    print(f"floor per-env / numpy: {floor / med['floor, numpy kernels (old)']:.3f}")
    print(f"Catch per-env numba vs numpy kernels: "
          f"{med['Catch, numpy kernels'] / catch:.1f}x faster")
    print(f"Catch per-env numba vs Python loop: "
          f"{med['Catch, per-env Python loop'] / catch:.0f}x faster")


if __name__ == "__main__":
    main()
