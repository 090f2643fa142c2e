"""Command line: ``python -m batchenv <command> <env> [options]`` (also ``batchenv ...``).

    python -m batchenv bench pong     # a short throughput table (its length: --block, --repeats)
    python -m batchenv play pong      # play BatchPong against the CPU (needs pygame)
    python -m batchenv play minatar-breakout   # a MinAtar game: arrows move, space fires
    python -m batchenv play minigrid-doorkey   # arrows turn and go, space toggles, tab picks up
    python -m batchenv play crafter   # crafter's keys: WASD, space does, tab sleeps, ...

Each command is a subparser; each env a choice of it, so commands and envs can be added
without touching the others.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["main", "build_parser", "bench_pong"]


def bench_pong(sizes: Sequence[int] = (1, 256, 4096, 65536), block: float = 0.15,
               repeats: int = 5, ale: bool = True, out=None) -> list[dict]:
    """Print BatchPong's throughput next to the plain-Python baseline (and ALE when ale-py
    is installed), all measured in this run and interleaved: each of ``repeats`` rounds
    times every case once, so all cases see the same machine load; figures are the medians.
    Returns the rows. (The full comparison: ``python -m pytest benchmarks --benchmark-only``,
    docs/performance.md.)"""
    out = sys.stdout if out is None else out

    def line(text: str = "") -> None:
        print(text, file=out, flush=True)

    cases = [("state", True, n) for n in sizes]
    cases += [("tiles", True, 4096), ("pixels", True, 4096), ("pixels", False, 4096)]
    steppers, batch_envs = _pong_steppers(cases, ale)
    try:
        med = _interleaved_medians(steppers, block, repeats)
    finally:
        for env in batch_envs:
            env.close()
    plain, ale_s = med["plain"], med.get("ale")
    line(f"BatchPong throughput (env-steps/s, median of {repeats} rounds; each round times "
         "every case once, interleaved; NEXT_STEP auto-reset, validation on)")
    line(f"baseline: PlainPong (plain Python floats, one game in a loop) "
         f"{1 / plain / 1e6:.2f} M steps/s" + (f"; ALE/Pong-v5 (ale-py, defaults: 4 frames "
                                               f"of 210x160 RGB per step) "
                                               f"{1 / ale_s / 1e3:.2f} k steps/s"
                                               if ale_s else "; ALE: ale-py not installed"))
    line()
    header = (f"{'obs_type':<8} {'copy':<5} {'num_envs':>8} {'µs/step':>9} {'ns/env-step':>11} "
              f"{'M env-steps/s':>13} {'x PlainPong':>11}" + (f" {'x ALE':>7}" if ale_s else ""))
    line(header)
    line("-" * len(header))
    rows = []
    for obs_type, copy, n in cases:
        t = med[(obs_type, copy, n)]
        per_env = t / n
        rows.append({"obs_type": obs_type, "copy": copy, "num_envs": n, "seconds_per_step": t,
                     "env_steps_per_s": 1 / per_env, "vs_plain": plain / per_env,
                     "vs_ale": (ale_s / per_env) if ale_s else None})
        line(f"{obs_type:<8} {str(copy):<5} {n:>8} {t * 1e6:>9.1f} {per_env * 1e9:>11.1f} "
             f"{1 / per_env / 1e6:>13.2f} {plain / per_env:>11.1f}"
             + (f" {ale_s / per_env:>7.0f}" if ale_s else ""))
    line()
    line("Every env beside its peers: python -m pytest benchmarks --benchmark-only "
         "(docs/performance.md)")
    return rows


def _pong_steppers(cases: list[tuple[str, bool, int]], ale: bool
                   ) -> tuple[dict[Any, Callable[[int], None]], list[Any]]:
    """``bench_pong``'s cases as steppers (``run(t)`` steps once): "plain" (PlainPong),
    "ale" (when asked and installed) and each ``(obs_type, copy, num_envs)``; and the
    batched envs, for the caller to close."""
    from batchenv import _bench as b

    steppers: dict[Any, Callable[[int], None]] = {"plain": b.loop_stepper(b.plain_games(1))}
    if ale and b.ale_available():
        _, steppers["ale"] = b.ale_stepper(1)
    batch_envs = []
    for obs_type, copy, n in cases:
        env, steppers[(obs_type, copy, n)] = b.batch_stepper(n, obs_type=obs_type, copy=copy)
        batch_envs.append(env)
    return steppers, batch_envs


def _interleaved_medians(steppers: dict[Any, Callable[[int], None]], block: float,
                         repeats: int) -> dict[Any, float]:
    """Median seconds per call of each stepper over ``repeats`` rounds, each round timing
    every stepper once for about ``block`` seconds (calls per block calibrated after a
    warm-up), so that all see the same machine load."""
    import statistics
    import time

    calls = {}
    for name, run in steppers.items():
        t0, count = time.perf_counter(), 0
        while count < 3 or time.perf_counter() - t0 < block / 4:
            run(count)
            count += 1
        calls[name] = max(2, int(count * block / (time.perf_counter() - t0)))
    times: dict[Any, list[float]] = {name: [] for name in steppers}
    t = 10
    for _ in range(repeats):
        for name, run in steppers.items():
            start = time.perf_counter()
            for _ in range(calls[name]):
                run(t)
                t += 1
            times[name].append((time.perf_counter() - start) / calls[name])
    return {name: statistics.median(v) for name, v in times.items()}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="batchenv", description=(
        "batchenv: thousands of RL environments stepped as one."))
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")

    bench = commands.add_parser("bench", help="print a short throughput table")
    bench.add_argument("env", choices=["pong"], help="the env to measure")
    bench.add_argument("--sizes", type=int, nargs="+", default=[1, 256, 4096, 65536],
                       help="num_envs values for the state observation")
    bench.add_argument("--block", type=float, default=0.15,
                       help="seconds per timed block (default 0.15)")
    bench.add_argument("--repeats", type=int, default=5, help="timed blocks per figure")
    bench.add_argument("--no-ale", action="store_true", help="skip the ALE baseline")

    play = commands.add_parser("play", help="play an env with the keyboard (needs pygame)")
    from batchenv.play import MINATAR_GAMES, MINIGRID_GAMES

    play.add_argument("env", choices=["pong", *MINATAR_GAMES, *MINIGRID_GAMES, "crafter"],
                      help="the env to play")
    play.add_argument("--mode", choices=["cpu", "two_player", "rally"], default="cpu",
                      help="cpu: you (W/S or arrow keys) vs the CPU; two_player: W/S vs "
                           "arrow keys; rally: the seed's rally game")
    play.add_argument("--fps", type=int, default=None,
                      help="steps per second (default: 30 for pong, 8 for MinAtar, 5 for "
                           "MiniGrid, which steps only while a key is held, and Crafter)")
    play.add_argument("--scale", type=int, default=None,
                      help="pixels per cell (default: 12 for pong, 40 for MinAtar), or per "
                           "pixel of Crafter's image (9)")
    play.add_argument("--sticky-action-prob", type=float, default=0.0,
                      help="MinAtar: sticky actions (default 0 when playing by hand)")
    play.add_argument("--points", type=int, default=21, help="points to win a game")
    play.add_argument("--seed", type=int, default=None)
    play.add_argument("--steps", type=int, default=None,
                      help="stop after this many steps (default: until the window closes)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        bench_pong(args.sizes, args.block, args.repeats, ale=not args.no_ale)
        return 0
    if args.command == "play":
        from batchenv.play import play_crafter, play_minatar, play_minigrid, play_pong

        if args.env == "crafter":
            return play_crafter(fps=args.fps or 5, scale=args.scale or 9, seed=args.seed,
                                steps=args.steps)
        if args.env.startswith("minigrid-"):
            return play_minigrid(args.env, fps=args.fps or 5, seed=args.seed, steps=args.steps)
        if args.env.startswith("minatar-"):
            return play_minatar(args.env, fps=args.fps or 8, scale=args.scale or 40,
                                seed=args.seed, steps=args.steps,
                                sticky_action_prob=args.sticky_action_prob)
        return play_pong(mode=args.mode, fps=args.fps or 30, scale=args.scale or 12,
                         points_to_win=args.points, seed=args.seed, steps=args.steps)
    raise AssertionError(args.command)  # argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
