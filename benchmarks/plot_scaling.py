"""The seed's scaling plot, redone honestly: env-steps per second against num_envs, log-log.

    python benchmarks/plot_scaling.py                 # about 4 minutes; writes docs/scaling.png
    python benchmarks/plot_scaling.py --quick         # fewer sizes and repeats

Series (every point measured in this run, none extrapolated; median of ``--repeats`` timed
blocks of at least ``--block`` seconds and 2 calls):

* BatchPong with each observation type (state, tiles, pixels 84x84; default copies) and
  pixels with ``copy=False``: one ``step`` call advances all num_envs games;
* the float32 scalar reference (``ReferencePong``) and the plain-float ``PlainPong``,
  num_envs games stepped one after the other in a Python loop;
* ``ALE/Pong-v5`` (ale-py, its defaults), num_envs envs in a Python loop, up to
  ``--ale-max`` envs (each takes about 0.2 s to create and 1 MB; its per-env rate is flat).

Needs matplotlib (and ale-py for the ALE series): ``pip install "batchenv[bench]"``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from batchenv import _bench as b

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "docs", "scaling.png")


def median_seconds(run, repeats: int, block: float) -> float:
    """Median seconds per call of ``run(t)`` over ``repeats`` blocks (>= block s, >= 2 calls)."""
    t = 0
    for _ in range(2):  # warm-up
        run(t)
        t += 1
    results = []
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while calls < 2 or time.perf_counter() - start < block:
            run(t)
            t += 1
            calls += 1
        results.append((time.perf_counter() - start) / calls)
    return statistics.median(results)


def loop_runner(games: list):
    return games, b.loop_stepper(games)


SERIES = {
    "BatchPong state": lambda n: b.batch_stepper(n),
    "BatchPong tiles": lambda n: b.batch_stepper(n, obs_type="tiles"),
    "BatchPong pixels": lambda n: b.batch_stepper(n, obs_type="pixels"),
    "BatchPong pixels, copy=False": lambda n: b.batch_stepper(n, obs_type="pixels",
                                                              copy=False),
    "PlainPong (plain floats), loop": lambda n: loop_runner(b.plain_games(n)),
    "ReferencePong (float32), loop": lambda n: loop_runner(b.reference_games(n)),
    "ALE/Pong-v5 (ale-py), loop": b.ale_stepper,
}
STYLE = {
    "BatchPong state": dict(color="C0", marker="o"),
    "BatchPong tiles": dict(color="C1", marker="s"),
    "BatchPong pixels": dict(color="C2", marker="^"),
    "BatchPong pixels, copy=False": dict(color="C2", marker="^", linestyle="--"),
    "PlainPong (plain floats), loop": dict(color="C3", marker="D"),
    "ReferencePong (float32), loop": dict(color="C4", marker="v"),
    "ALE/Pong-v5 (ale-py), loop": dict(color="C7", marker="x"),
}


def measure(sizes: list[int], repeats: int, block: float, ale_max: int) -> dict:
    results: dict[str, dict[int, float]] = {}
    for name, make in SERIES.items():
        if name.startswith("ALE") and not b.ale_available():
            print(f"skipping {name}: ale-py is not installed", file=sys.stderr)
            continue
        results[name] = {}
        for n in sizes:
            if name.startswith("ALE") and n > ale_max:
                continue
            obj, run = make(n)
            seconds = median_seconds(run, repeats, block)
            del obj, run
            results[name][n] = n / seconds  # env-steps per second
            print(f"{name:34s} n={n:>6} {n / seconds / 1e6:10.4f} M env-steps/s",
                  file=sys.stderr, flush=True)
    return results


def ratio_lines(results: dict, at: int = 4096) -> list[str]:
    def get(name: str) -> float | None:
        return results.get(name, {}).get(at)

    def ale_rate() -> float | None:
        points = results.get("ALE/Pong-v5 (ale-py), loop", {})
        return statistics.median(points.values()) if points else None

    lines = []
    plain, ref, ale = get("PlainPong (plain floats), loop"), get(
        "ReferencePong (float32), loop"), ale_rate()
    for name in ("BatchPong state", "BatchPong tiles", "BatchPong pixels",
                 "BatchPong pixels, copy=False"):
        rate = get(name)
        if rate is None:
            continue
        parts = [f"{name} at {at}: {rate / 1e6:.2f} M env-steps/s"]
        if plain:
            parts.append(f"{rate / plain:.1f}x PlainPong")
        if ref:
            parts.append(f"{rate / ref:.0f}x ReferencePong")
        if ale:
            parts.append(f"{rate / ale:.0f}x ALE")
        lines.append(", ".join(parts))
    return lines


def plot(results: dict, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    for name, points in results.items():
        if not points:
            continue
        ns = sorted(points)
        ax.plot(ns, [points[n] for n in ns], label=name, **STYLE.get(name, {}))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("num_envs (games stepped per call, or per loop)")
    ax.set_ylabel("env-steps per second")
    ax.set_title("BatchPong vs one-at-a-time Pong (one process, medians; measured)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    lines = ratio_lines(results)
    if lines:
        ax.text(0.99, 0.02, "\n".join(lines), transform=ax.transAxes, fontsize=7,
                ha="right", va="bottom", bbox=dict(facecolor="white", alpha=0.8))
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out)
    print(f"wrote {out}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[4**k for k in range(9)], help="num_envs values")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--block", type=float, default=0.2)
    parser.add_argument("--ale-max", type=int, default=16)
    parser.add_argument("--quick", action="store_true",
                        help="sizes 1, 16, 256, 4096; 3 repeats of 0.1 s")
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--json", help="also write the measured points to this file")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.repeats, args.block = [1, 16, 256, 4096], 3, 0.1
    results = measure(args.sizes, args.repeats, args.block, args.ale_max)
    print("\n| series | " + " | ".join(str(n) for n in args.sizes) + " |")
    print("|---|" + "---|" * len(args.sizes))
    for name, points in results.items():
        cells = [f"{points[n] / 1e6:.3g}" if n in points else "—" for n in args.sizes]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\n(M env-steps/s)\n")
    for line in ratio_lines(results):
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: {str(n): v for n, v in pts.items()} for k, pts in results.items()},
                      f, indent=1)
    plot(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
