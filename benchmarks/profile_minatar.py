"""Where a MinAtar step's time goes with the numba layer: each game at 4096 envs stepped
1000 times under ``cProfile``, its CPU time split into the compiled step loops, the
observation loop, resets (``reset_rows``) and the rest (the base class, the Python
wrappers), in ns per env-step. ``cProfile`` inflates the many small calls of "the rest";
the loops are single calls and come out close to their unprofiled cost.

    PYTHONPATH=. python benchmarks/profile_minatar.py

The split names the private numba layer's loops (``_numba/``: Seaquest's); the games on
per-env kernels step in one fused loop (``batchenv.perenv``), which this split counts in
"the rest": for them, time the forms with ``bench_minatar.py`` instead.
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
    parts = {"step loops": 0.0, "observation loop": 0.0, "resets": 0.0}
    for (path, _, func), (_, _, own, cumulative, _) in pstats.Stats(profile).stats.items():
        if "_numba" in path and func.startswith("_observe"):
            parts["observation loop"] += own
        elif "_numba" in path and func.startswith("_") and not func.startswith("_reset"):
            parts["step loops"] += own
        elif func == "reset_rows":
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
