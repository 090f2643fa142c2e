"""numpy kernels vs per-env kernels, in one interleaved run: BatchPong and every MinAtar game
that has per-env kernels, at 256 / 4096 / 65536 envs, per-env on 1 and 2 threads; and the
framework's floor (games with no rules) in both forms.

    python benchmarks/bench_kernels.py                          # everything (minutes)
    python benchmarks/bench_kernels.py --sizes 4096 --games pong --rounds 5
    python benchmarks/bench_kernels.py --floors-only --sizes 4096 65536

Cases at each size, timed in rounds that alternate them (every case once per round; medians
over rounds, wall clock, ns per env-step; ratios are taken per round, then the median):

* ``pong``: ``BatchPong(n)`` (cpu mode, state observation, defaults: NEXT_STEP, copies,
  validation) with ``kernels="numpy"``, ``"numba"`` and ``"numba"`` on 2 threads;
* each MinAtar game (``batchenv.envs.minatar``) whose class has per-env kernels
  (``reset_env``/``step_env``/``observe_env``), with its defaults, in the same three forms;
  a game still without them is listed as skipped;
* ``pong-tiles``, ``pong-pixels`` (``--images``): the same with image observations;
* ``floor``: a game with no rules (one float32 field, a 1-float observation) and
  ``minatar-floor``: MinAtar's shape with no rules (10x10x4 bool observation, a sticky
  draw per step, the observation cleared), each as numpy kernels (the old form: the base
  class's numpy passes around them) and as per-env kernels (the base class's work in the
  compiled pass), on 1 and 2 threads.

Threads run in this process, so the wall clock is the default measure; ``--clock cpu``
times this process's CPU time instead (cleaner for one thread on a loaded machine; it adds
up both threads of the 2-thread cases). The machine is shared: read the ratios, not the
absolute times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import batchenv  # noqa: E402
from batchenv import perenv  # noqa: E402

MINATAR = {"asterix": "BatchAsterix", "breakout": "BatchBreakout", "freeway": "BatchFreeway",
           "seaquest": "BatchSeaquest", "space_invaders": "BatchSpaceInvaders"}


# ---------------------------------------------------------------- the floors
class _Trivial(batchenv.BatchEnv):
    state_dtype = np.dtype([("x", np.float32)])
    single_action_space = spaces.Discrete(2)
    single_observation_space = spaces.Box(-1, 1, (1,), np.float32)
    default_max_episode_steps = 100
    observe_fills_out = True


class NumpyFloor(_Trivial):
    """No rules, numpy kernels."""

    def __init__(self, n: int, **kw: Any) -> None:
        super().__init__(n, **kw)
        self.zeros, self.falses = np.zeros(n), np.zeros(n, dtype=bool)

    def reset_envs(self, s, rng):  # type: ignore[no-untyped-def]
        s.x[:] = 0.0

    def step_envs(self, s, action, rng):  # type: ignore[no-untyped-def]
        return self.zeros, self.falses

    def observe(self, s, out):  # type: ignore[no-untyped-def]
        out[:, 0] = s.x


class PerEnvFloor(_Trivial):
    """No rules, per-env kernels."""

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        s.x[i] = 0.0

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        return 0.0, False

    @staticmethod
    def observe_env(p, s, i, obs):  # type: ignore[no-untyped-def]
        obs[0] = s.x[i]


STICKY = 0.1  # MinAtar's sticky-action probability


class _MinAtarShape(batchenv.BatchEnv):
    """MinAtar Breakout's shape with no rules: 3 actions, a 10x10x4 bool observation, the
    last action kept for sticky actions (one draw per step)."""

    state_dtype = np.dtype([("last_action", np.int8)])
    single_action_space = spaces.Discrete(3)
    single_observation_space = spaces.Box(0, 1, (10, 10, 4), np.bool_)
    default_max_episode_steps = 10_000
    observe_fills_out = True


class NumpyMinAtarFloor(_MinAtarShape):
    def __init__(self, n: int, **kw: Any) -> None:
        super().__init__(n, **kw)
        self.zeros, self.falses = np.zeros(n), np.zeros(n, dtype=bool)

    def reset_envs(self, s, rng):  # type: ignore[no-untyped-def]
        s.last_action[:] = 0

    def step_envs(self, s, action, rng):  # type: ignore[no-untyped-def]
        fresh = rng.random() >= STICKY
        np.copyto(s.last_action, action, casting="unsafe", where=fresh)
        return self.zeros, self.falses

    def observe(self, s, out):  # type: ignore[no-untyped-def]
        out.fill(False)


class PerEnvMinAtarFloor(_MinAtarShape):
    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        s.last_action[i] = 0

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        if perenv.random(s, i) >= STICKY:
            s.last_action[i] = action
        return 0.0, False

    @staticmethod
    def observe_env(p, s, i, obs):  # type: ignore[no-untyped-def]
        words = perenv.words(obs)  # cleared 8 cells at a time (400 bytes: 50 words)
        for k in range(words.size):
            words[k] = 0


# ---------------------------------------------------------------- timing
def stepper(env: Any, n: int, clock: Callable[[], float] = time.perf_counter
            ) -> Callable[[int], float]:
    """``run(steps)``: seconds per env-step (``clock``) over ``steps`` steps of random
    actions."""
    env.reset(seed=0)
    rng = np.random.default_rng(n)
    space = env.single_action_space
    actions = [rng.integers(0, space.n, n) for _ in range(8)]
    for t in range(3):  # compile, warm the caches
        env.step(actions[t])

    def run(steps: int) -> float:
        step = env.step
        t0 = clock()
        for t in range(steps):
            step(actions[t & 7])
        return (clock() - t0) / steps / n

    return run


def cases_at(n: int, games: list[str], floors: bool, images: bool = False,
             copy: bool = True) -> dict[str, Callable[[], Any]]:
    cases: dict[str, Callable[[], Any]] = {}

    def three(label: str, make: Callable[..., Any], numpy_form: bool = True) -> None:
        if numpy_form:
            cases[f"{label} numpy"] = lambda: make(kernels="numpy")
        cases[f"{label} per-env 1t"] = lambda: make(kernels="numba")
        cases[f"{label} per-env 2t"] = lambda: make(kernels="numba", num_threads=2)

    if "pong" in games:
        three("pong", lambda **kw: batchenv.BatchPong(n, copy=copy, **kw))
    if images:  # BatchPong's image observations (drawn incrementally by its numpy kernels)
        for obs in ("tiles", "pixels"):
            three(f"pong-{obs}", lambda obs=obs, **kw: batchenv.BatchPong(
                n, obs_type=obs, copy=copy, **kw))
    if floors:
        cases["floor numpy"] = lambda: NumpyFloor(n)
        cases["floor per-env 1t"] = lambda: PerEnvFloor(n)
        cases["floor per-env 2t"] = lambda: PerEnvFloor(n, num_threads=2)
        cases["minatar-floor numpy"] = lambda: NumpyMinAtarFloor(n)
        cases["minatar-floor per-env 1t"] = lambda: PerEnvMinAtarFloor(n)
        cases["minatar-floor per-env 2t"] = lambda: PerEnvMinAtarFloor(n, num_threads=2)
    for game in games:
        if game == "pong":
            continue
        import batchenv.envs.minatar as minatar

        cls = getattr(minatar, MINATAR[game])
        if not perenv.has_per_env_kernels(cls):
            print(f"  ({game}: no per-env kernels yet, skipped)")
            continue
        three(game, lambda cls=cls, **kw: cls(n, **kw))
    return cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 4096, 65536])
    ap.add_argument("--games", nargs="+", default=["pong", *MINATAR],
                    choices=["pong", *MINATAR])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--block", type=float, default=2e6,
                    help="env-steps per timed block (default 2e6)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: this process's CPU time (time.process_time), the cleaner "
                         "measure on a loaded machine for one thread; it adds up both "
                         "threads of the 2-thread cases")
    ap.add_argument("--no-floors", action="store_true")
    ap.add_argument("--no-copy", action="store_true",
                    help="BatchPong with copy=False (its buffers returned, not copies)")
    ap.add_argument("--images", action="store_true",
                    help="also BatchPong's tiles and pixels observations")
    ap.add_argument("--floors-only", action="store_true")
    args = ap.parse_args()
    games = [] if args.floors_only else args.games
    print(f"numpy {np.__version__}, numba "
          f"{__import__('numba').__version__ if perenv.numba_available() else '-'}; "
          f"{args.rounds} interleaved rounds, {args.clock} clock, ns per env-step (median)")
    for n in args.sizes:
        print(f"\nnum_envs={n}")
        made = {name: make() for name, make in
                cases_at(n, games, not args.no_floors, args.images,
                                               not args.no_copy).items()}
        clock = time.process_time if args.clock == "cpu" else time.perf_counter
        runs = {name: stepper(env, n, clock) for name, env in made.items()}
        if not runs:
            continue
        steps = max(3, int(args.block / n))
        times: dict[str, list[float]] = {name: [] for name in runs}
        for r in range(args.rounds):
            names = list(runs)
            for name in names[r % len(names):] + names[:r % len(names)]:
                times[name].append(runs[name](steps))
        for label in dict.fromkeys(name.split(" ")[0] for name in runs):
            base = times.get(f"{label} numpy")
            for form in ("numpy", "per-env 1t", "per-env 2t"):
                name = f"{label} {form}"
                if name not in times:
                    continue
                med = statistics.median(times[name]) * 1e9
                line = f"  {name:28s} {med:9.2f} ns"
                if base is not None and form != "numpy":
                    ratio = statistics.median(b / t for b, t in zip(base, times[name]))
                    line += f"   {ratio:6.2f}x numpy ({1 / ratio:.3f} of its time)"
                if form == "per-env 2t":
                    one = times[f"{label} per-env 1t"]
                    ratio = statistics.median(o / t for o, t in zip(one, times[name]))
                    line += f"   {ratio:5.2f}x 1 thread"
                print(line)
        del made, runs
        sys.stdout.flush()


if __name__ == "__main__":
    main()
