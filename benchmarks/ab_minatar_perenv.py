"""MinAtar's per-env step, this checkout against another git revision, in one process.

    python benchmarks/ab_minatar_perenv.py                      # against main, all games
    python benchmarks/ab_minatar_perenv.py --ref HEAD~2 --games asterix seaquest --rounds 15

The other revision's ``batchenv`` is extracted with ``git archive`` and imported under its
own module names (``ab_versions.load_package``), so both run side by side. For each game,
an env of each version (``kernels="numba"``, its defaults: sticky actions 0.1, NEXT_STEP,
copies, validation) is reset with the same seed and stepped with the same random actions;
the timed blocks alternate (old, new, new, old, ...), CPU time (``time.process_time``), ns
per env-step, medians over rounds and the median of the per-round ratios old/new (above 1:
new is faster). At the end both envs' states and observations are compared: a version
that changed the rules' results says so (``DIFFER``).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_versions import ROOT, extract, load_package  # noqa: E402

GAMES = {"asterix": "BatchAsterix", "breakout": "BatchBreakout", "freeway": "BatchFreeway",
         "seaquest": "BatchSeaquest", "space_invaders": "BatchSpaceInvaders"}


def make(pkg: ModuleType, game: str, n: int) -> Any:
    env = getattr(pkg, GAMES[game])(n, kernels="numba")
    env.reset(seed=1)
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="main", help="git revision to compare against")
    ap.add_argument("--games", nargs="+", default=list(GAMES), choices=list(GAMES))
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--steps", type=int, default=50, help="steps per env per timed block")
    ap.add_argument("--warmup", type=int, default=300)
    args = ap.parse_args()
    n = args.num_envs
    with tempfile.TemporaryDirectory() as tmp:
        old_pkg = load_package(extract(args.ref, tmp))
        new_pkg = load_package(ROOT)
        print(f"old: {args.ref} ({old_pkg.__file__})\nnew: {new_pkg.__file__}")
        print(f"num_envs={n}, CPU ns per env-step, medians of {args.rounds} rounds of "
              f"{args.steps} steps")
        print(f"{'game':16s} {'old':>8s} {'new':>8s} {'old/new':>8s}")
        for game in args.games:
            envs = {"old": make(old_pkg, game, n), "new": make(new_pkg, game, n)}
            space = envs["new"].single_action_space
            rng = np.random.default_rng(0)
            actions = [rng.integers(0, space.n, n) for _ in range(16)]
            last = {}
            for env in envs.values():
                for t in range(args.warmup):
                    env.step(actions[t % 16])
            times: dict[str, list[float]] = {k: [] for k in envs}
            ratios = []
            for r in range(args.rounds):
                for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
                    env = envs[name]
                    t0 = time.process_time()
                    for t in range(args.steps):
                        last[name] = env.step(actions[t % 16])[0]
                    times[name].append((time.process_time() - t0) / args.steps / n * 1e9)
                ratios.append(times["old"][-1] / times["new"][-1])
            same = all(np.array_equal(a, b) for (_, a), (_, b)
                       in zip(envs["old"].state, envs["new"].state))
            same = same and np.array_equal(last["old"], last["new"])
            print(f"{game:16s} {statistics.median(times['old']):8.1f} "
                  f"{statistics.median(times['new']):8.1f} {statistics.median(ratios):7.2f}x"
                  + ("" if same else "  DIFFER"), flush=True)


if __name__ == "__main__":
    main()
