"""Where a MinAtar step's time goes under ``cProfile``: each game at 4096 envs stepped
1000 times, its CPU time split into resets (``reset_rows``) and the rest, in ns per
env-step. ``cProfile`` inflates the many small calls of "the rest".

    PYTHONPATH=. python benchmarks/profile_minatar.py

The step and observation loops of the private numba layer this script once split out are
gone (every game steps in one fused per-env loop, ``batchenv.perenv``, counted in "the
rest"): to compare the forms, time them with ``bench_minatar.py``.
"""

from __future__ import annotations

import cProfile
import pstats
import time

import numpy as np

import batchenv.envs.minatar as minatar_envs

GAMES = ["BatchAsterix", "BatchBreakout", "BatchFreeway", "BatchSeaquest",
         "BatchSpaceInvaders"]


def split(name: str, n: int = 4096, steps: int = 1000) -> dict[str, float]:
    env = getattr(minatar_envs, name)(n)
    env.reset(seed=0)
    actions = [np.random.default_rng(i).integers(0, env.single_action_space.n, n)
               for i in range(16)]
    for t in range(50):
        env.step(actions[t % 16])
    profile = cProfile.Profile()
    profile.enable()
    t0 = time.process_time()
    for t in range(steps):
        env.step(actions[t % 16])
    total = time.process_time() - t0
    profile.disable()
    parts = {"resets": 0.0}
    for (_, _, func), (_, _, _, cumulative, _) in pstats.Stats(profile).stats.items():
        if func == "reset_rows":
            parts["resets"] += cumulative
    parts["the rest"] = total - sum(parts.values())
    return {k: v / steps / n * 1e9 for k, v in parts.items()}


def main() -> None:
    for name in GAMES:
        parts = split(name)
        print(f"{name:20s} total {sum(parts.values()):6.1f} ns/env-step (profiled)  "
              + "  ".join(f"{k} {v:5.1f}" for k, v in parts.items()), flush=True)


if __name__ == "__main__":
    main()
