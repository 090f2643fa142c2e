"""BatchPong's figures, all measured in one run, as ratios against baselines measured in the
same run.

    python benchmarks/bench_pong.py            # about 2 minutes
    python benchmarks/bench_pong.py --quick    # about 40 s, fewer repeats

Measured (seconds per ``step`` call, median over rounds; every round measures every case once,
so all cases see the same machine load):

* PlainPong (plain Python floats, one game, ``batchenv.reference.PlainPong``): the honest
  baseline; ReferencePong (numpy float32 scalars, the exactness oracle) for information;
* BatchPong, state observation, num_envs 1 / 256 / 4096 / 65536 (NEXT_STEP auto-reset,
  validation on, default copies);
* each observation type at 4096 and 65536 (tiles and pixels also with ``copy=False``);
* ``ALE/Pong-v5`` from ale-py, one env, its defaults (RGB, frameskip 4, sticky 0.25);
* memory per env with tracemalloc at 65536 (state observation).

Then checks the targets of the BatchPong issues and prints PASS / FAIL for each.
Figures go to docs/pong.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from batchenv import _bench as b


def make_batch_case(n: int, **kwargs):
    return b.batch_stepper(n, **kwargs)


def make_scalar_case(games: list):
    """One scalar game (PlainPong, ReferencePong), its ``step`` called directly."""
    return games, b.loop_stepper(games)


def timed_block(run, t0: int, seconds: float) -> tuple[float, int]:
    """Seconds per call over a block of about ``seconds``; returns (per call, calls)."""
    calls, start = 0, time.perf_counter()
    while True:
        for _ in range(4):
            run(t0 + calls)
            calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / calls, calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 0.1 s blocks")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--block", type=float, default=0.25, help="seconds per timed block")
    parser.add_argument("--no-ale", action="store_true")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    rounds, block = (3, 0.1) if args.quick else (args.rounds, args.block)

    cases: dict[str, tuple[int, object]] = {}  # name -> (envs per call, run)
    keep = []

    def add(name: str, envs: int, made) -> None:
        obj, run = made
        keep.append(obj)
        for t in range(3):  # warm-up
            run(t)
        cases[name] = (envs, run)

    print("building cases ...", file=sys.stderr, flush=True)
    add("PlainPong", 1, make_scalar_case(b.plain_games(1)))
    add("ReferencePong (float32)", 1, make_scalar_case(b.reference_games(1)))
    ale = not args.no_ale and b.ale_available()
    if ale:
        add("ALE/Pong-v5", 1, b.ale_stepper(1))
    for n in (1, 256, 4096, 65536):
        add(f"state n={n}", n, make_batch_case(n))
    for n in (4096, 65536):
        add(f"state copy=False n={n}", n, make_batch_case(n, copy=False))
        add(f"tiles n={n}", n, make_batch_case(n, obs_type="tiles"))
        add(f"tiles copy=False n={n}", n, make_batch_case(n, obs_type="tiles", copy=False))
        if n == 4096:  # a default copy of 65536 pixel frames is 462 MB per step
            add(f"pixels n={n}", n, make_batch_case(n, obs_type="pixels"))
        add(f"pixels copy=False n={n}", n, make_batch_case(n, obs_type="pixels", copy=False))

    times: dict[str, list[float]] = {name: [] for name in cases}
    t = 10
    for r in range(rounds):
        print(f"round {r + 1}/{rounds}", file=sys.stderr, flush=True)
        for name, (_, run) in cases.items():
            seconds = block if not name.startswith("ALE") else max(block, 0.3)
            per_call, calls = timed_block(run, t, seconds)
            t += calls
            times[name].append(per_call)
    med = {name: statistics.median(v) for name, v in times.items()}
    per_env = {name: med[name] / cases[name][0] for name in cases}
    del keep[:]

    print("measuring memory ...", file=sys.stderr, flush=True)
    held, peak = b.memory_per_env(65536)
    held_tiles, _ = b.memory_per_env(65536, obs_type="tiles")

    plain = per_env["PlainPong"]
    ale_s = per_env.get("ALE/Pong-v5")
    print(f"\n## BatchPong figures ({rounds} rounds x {block} s blocks, medians; "
          f"numpy {np.__version__}, {sys.platform})\n")
    head = "| case | envs | µs per step call | ns per env-step | M env-steps/s | x PlainPong |"
    head += " x ALE |" if ale_s else ""
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name in cases:
        envs = cases[name][0]
        pe = per_env[name]
        line = (f"| {name} | {envs} | {med[name] * 1e6:.1f} | {pe * 1e9:.1f} | "
                f"{1 / pe / 1e6:.3f} | {plain / pe:.2f} |")
        line += f" {ale_s / pe:.0f} |" if ale_s else ""
        print(line)

    print("\n### Cost of each observation type (ns per env-step; default copy / copy=False)\n")
    print("| obs_type | n=4096 | n=65536 |")
    print("|---|---|---|")
    for ot in ("state", "tiles", "pixels"):
        cells = []
        for n in (4096, 65536):
            a = per_env.get(f"{ot} n={n}")
            c = per_env[f"{ot} copy=False n={n}"]
            cells.append(f"{a * 1e9:.0f} / {c * 1e9:.0f}" if a else f"— / {c * 1e9:.0f}")
        print(f"| {ot} | {cells[0]} | {cells[1]} |")

    rounds_ratio = [p / (s / 4096) for p, s in zip(times["PlainPong"], times["state n=4096"])]
    print(f"\nstate n=4096 vs PlainPong, round by round (both measured in each round): "
          f"{min(rounds_ratio):.1f}x to {max(rounds_ratio):.1f}x, median "
          f"{statistics.median(rounds_ratio):.1f}x")

    print(f"\nMemory at 65536 (tracemalloc): state obs {held:.0f} B per env held "
          f"(peak during a step {peak:.0f} B); tiles obs {held_tiles:.0f} B per env.\n")

    checks = [
        ("state n=4096 >= 20x PlainPong per env-step", plain / per_env["state n=4096"],
         ">=", 20),
        ("state n=4096 >= 20 M env-steps/s (aim)", 1 / per_env["state n=4096"] / 1e6, ">=",
         20),
        ("state n=65536 per env-step <= n=4096", per_env["state n=65536"] * 1e9, "<=",
         per_env["state n=4096"] * 1e9),
        ("memory per env at 65536 < 300 B", held, "<", 300),
        ("tiles n=4096 < 0.22 µs per env-step (default copy)",
         per_env["tiles n=4096"] * 1e6, "<", 0.22),
    ]
    if ale_s:
        checks += [
            ("pixels n=4096 copy=False >= 1000x ALE", ale_s / per_env["pixels copy=False n=4096"],
             ">=", 1000),
            ("pixels n=4096 default copy vs ALE (reported)", ale_s / per_env["pixels n=4096"],
             ">=", 0),
        ]
    ops = {">=": lambda x, y: x >= y, "<=": lambda x, y: x <= y, "<": lambda x, y: x < y}
    failed = 0
    for what, value, op, target in checks:
        ok = ops[op](value, target)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'}  {what}: {value:.3g} (target {op} {target:.3g})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds_per_call": med, "seconds_per_env_step": per_env,
                       "memory_bytes_per_env": {"state": held, "state_peak": peak,
                                                "tiles": held_tiles},
                       "rounds": rounds, "block": block}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
