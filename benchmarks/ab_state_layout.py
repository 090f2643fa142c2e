"""The State's storage layout, A/B in one process: padded and staggered (today's
``batchenv.state``: block rows an odd number of cache lines apart, arrays starting in
different L1 sets) against the old contiguous layout (every block one C-contiguous
``(fields, n)`` array, every array from ``np.zeros``).

    python benchmarks/ab_state_layout.py                                  # Seaquest, per-env
    python benchmarks/ab_state_layout.py --games seaquest --sizes 4000 4096 4200
    python benchmarks/ab_state_layout.py --games pong --kernels numpy --sizes 256 4096

Each env is made twice, once under each layout (the old one by swapping the allocation
helpers of ``batchenv.state`` while the env is built), then both are stepped with the
same random actions in rounds that alternate them; CPU time (``time.process_time``), ns per
env-step, medians over rounds, the ratio taken per round. Both layouts give the same
states (checked at the end of the run). The machine is shared: read the ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import batchenv  # noqa: E402
from batchenv import state as state_module  # noqa: E402

GAMES = {"asterix": "BatchAsterix", "breakout": "BatchBreakout", "freeway": "BatchFreeway",
         "seaquest": "BatchSeaquest", "space_invaders": "BatchSpaceInvaders",
         "pong": "BatchPong"}


@contextlib.contextmanager
def contiguous_layout() -> Iterator[None]:
    """States made inside are laid out as before the padding: plain ``np.zeros``."""
    new_block, staggered = state_module._new_block, state_module._staggered
    state_module._new_block = lambda count, size, dtype, order: np.zeros((count, size), dtype)
    state_module._staggered = lambda shape, dtype, order: np.zeros(shape, dtype)
    try:
        yield
    finally:
        state_module._new_block, state_module._staggered = new_block, staggered


def make(game: str, n: int, kernels: str) -> Any:
    cls = getattr(batchenv, GAMES[game])
    return cls(n, kernels=kernels)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", nargs="+", default=["seaquest"], choices=sorted(GAMES))
    ap.add_argument("--sizes", nargs="+", type=int, default=[4096])
    ap.add_argument("--kernels", default="numba", choices=["numba", "numpy"])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=200, help="steps per env per round")
    ap.add_argument("--warmup", type=int, default=300)
    args = ap.parse_args()
    print(f"kernels={args.kernels}, CPU ns per env-step, medians of {args.rounds} rounds "
          f"of {args.steps} steps")
    print(f"{'game':16s} {'envs':>6s} {'padded':>9s} {'contiguous':>11s} {'speed-up':>9s}")
    for game in args.games:
        for n in args.sizes:
            padded = make(game, n, args.kernels)
            with contiguous_layout():
                old = make(game, n, args.kernels)
            space = padded.single_action_space
            rng = np.random.default_rng(0)
            actions = [np.asarray(rng.integers(0, space.n, n) if hasattr(space, "n")
                                  else padded.action_space.sample()) for _ in range(16)]
            envs = {"padded": padded, "contiguous": old}
            for env in envs.values():
                env.reset(seed=1)
                for t in range(args.warmup):
                    env.step(actions[t % 16])
            times: dict[str, list[float]] = {k: [] for k in envs}
            ratios = []
            for r in range(args.rounds):
                order = list(envs) if r % 2 == 0 else list(reversed(envs))
                for name in order:
                    env = envs[name]
                    t0 = time.process_time()
                    for t in range(args.steps):
                        env.step(actions[t % 16])
                    times[name].append((time.process_time() - t0) / args.steps / n * 1e9)
                ratios.append(times["contiguous"][-1] / times["padded"][-1])
            same = all(np.array_equal(a, b) for (_, a), (_, b)
                       in zip(padded.state, old.state))
            print(f"{game:16s} {n:6d} {statistics.median(times['padded']):9.1f} "
                  f"{statistics.median(times['contiguous']):11.1f} "
                  f"{statistics.median(ratios):8.2f}x"
                  + ("" if same else "  STATES DIFFER"), flush=True)


if __name__ == "__main__":
    main()
