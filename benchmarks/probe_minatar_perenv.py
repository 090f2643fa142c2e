"""Where a MinAtar game's per-env step goes at 4096 envs, beside MinAtar's own loop.

    python benchmarks/probe_minatar_perenv.py [--num-envs 4096] [--games breakout ...]

For each game (its defaults: sticky actions 0.1, NEXT_STEP, copies, validation,
``kernels="numba"``), by CPU time (``time.process_time``), ns per env-step, medians of 5
blocks:

* ``env.step``: the whole per-env step;
* ``rules``: the compiled ``step_env`` loop alone over the batch (the runner's numpy-form
  ``step_envs``: ``step_env`` for every row, nothing else);
* ``observation``: the compiled ``observe_env`` loop alone (into the env's buffer);
* ``framework``: ``env.step`` less the two (the base class's work in the fused loop, the
  action's validation, the Python around the loop);
* MinAtar's own loop (``act`` then ``state()`` per step, ``reset()`` on a terminal, one
  env, sticky actions 0.1), and the ns per env-step that 100x it needs;
* with ``--interleaved R``: also ``R`` rounds that alternate a block of ``env.step`` and
  a block of MinAtar's loop (1000 steps), CPU time, and the median of the per-round
  ratios (MinAtar's loop per step / ours per env-step). The machine's load moves both,
  and not alike: MinAtar's Python loop has measured 3.2 to 9.1 us per step for the same
  game in one day here, so a ratio taken from two blocks minutes apart can be far off.

docs/performance.md ("MinAtar: where a per-env step goes") quotes it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import batchenv.envs.minatar as minatar_envs  # noqa: E402

GAMES = {"asterix": "BatchAsterix", "breakout": "BatchBreakout", "freeway": "BatchFreeway",
         "seaquest": "BatchSeaquest", "space_invaders": "BatchSpaceInvaders"}


def per_step(f: Callable[[], object], steps: int) -> float:
    """CPU seconds per call of ``f``, median of 5 blocks of ``steps`` calls."""
    blocks = []
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(steps):
            f()
        blocks.append((time.process_time() - t0) / steps)
    return statistics.median(blocks)


def minatar_ns(game: str, steps: int = 3000) -> float:
    from minatar import Environment

    env = Environment(game)
    env.seed(0)
    env.reset()
    actions = np.random.default_rng(1).integers(0, 6, steps).tolist()
    act, state, reset = env.act, env.state, env.reset

    def run() -> None:
        for a in actions:
            _, done = act(a)
            state()
            if done:
                reset()

    return per_step(run, 1) / steps * 1e9


def interleaved(game: str, n: int, steps: int, rounds: int) -> tuple[float, float, float]:
    """Medians of ours (ns per env-step), MinAtar's loop (ns per step) and their per-round
    ratio, over ``rounds`` rounds of one block each, alternating which runs first."""
    from minatar import Environment

    env = getattr(minatar_envs, GAMES[game])(n, kernels="numba")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, env.single_action_space.n, n) for _ in range(16)]
    for t in range(200):
        env.step(actions[t % 16])
    ref = Environment(game)
    ref.seed(0)
    ref.reset()
    ref_actions = np.random.default_rng(1).integers(0, 6, 1000).tolist()
    act, state, reset = ref.act, ref.state, ref.reset

    def ours() -> float:
        t0 = time.process_time()
        for t in range(steps):
            env.step(actions[t & 15])
        return (time.process_time() - t0) / steps / n * 1e9

    def theirs() -> float:
        t0 = time.process_time()
        for a in ref_actions:
            _, done = act(a)
            state()
            if done:
                reset()
        return (time.process_time() - t0) / len(ref_actions) * 1e9

    a, b = [], []
    for r in range(rounds):
        if r % 2 == 0:
            a.append(ours())
            b.append(theirs())
        else:
            b.append(theirs())
            a.append(ours())
    ratios = [y / x for x, y in zip(a, b)]
    return statistics.median(a), statistics.median(b), statistics.median(ratios)


def probe(game: str, n: int, steps: int) -> tuple[float, float, float]:
    """ns per env-step of the whole step, the rules loop and the observation loop."""
    env = getattr(minatar_envs, GAMES[game])(n, kernels="numba")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, env.single_action_space.n, n) for _ in range(16)]
    for t in range(200):
        env.step(actions[t % 16])
    runner = env._per_env
    checked = env._action_check(actions[0])
    out = np.empty_like(env._obs)
    runner.step_envs(env, env.state, checked, None)
    runner.observe(env, env.state, out)
    count = [0]

    def step() -> None:
        env.step(actions[count[0] & 15])
        count[0] += 1

    whole = per_step(step, steps) / n * 1e9
    rules = per_step(lambda: runner.step_envs(env, env.state, checked, None), steps) / n * 1e9
    obs = per_step(lambda: runner.observe(env, env.state, out), steps) / n * 1e9
    return whole, rules, obs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--games", nargs="+", default=list(GAMES), choices=list(GAMES))
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--interleaved", type=int, default=0, metavar="R",
                    help="also R rounds alternating env.step and MinAtar's loop")
    args = ap.parse_args()
    n = args.num_envs
    print(f"num_envs={n}, CPU ns per env-step (medians of 5 blocks of {args.steps} steps)")
    print(f"{'game':16s} {'env.step':>9s} {'rules':>7s} {'obs':>7s} {'framework':>10s} "
          f"{'MinAtar':>9s} {'x MinAtar':>10s} {'100x needs':>11s}")
    for game in args.games:
        whole, rules, obs = probe(game, n, args.steps)
        ref = minatar_ns(game)
        print(f"{game:16s} {whole:9.1f} {rules:7.1f} {obs:7.1f} {whole - rules - obs:10.1f} "
              f"{ref:9.0f} {ref / whole:9.1f}x {ref / 100:11.1f}", flush=True)
    if args.interleaved:
        print(f"\ninterleaved: {args.interleaved} rounds of {args.steps} steps and 1000 of "
              f"MinAtar's, medians")
        print(f"{'game':16s} {'env.step':>9s} {'MinAtar':>9s} {'x MinAtar':>10s}")
        for game in args.games:
            ours, theirs, ratio = interleaved(game, n, args.steps, args.interleaved)
            print(f"{game:16s} {ours:9.1f} {theirs:9.0f} {ratio:9.1f}x", flush=True)

if __name__ == "__main__":
    main()
