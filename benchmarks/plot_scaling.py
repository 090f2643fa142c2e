"""The scaling plot: env-steps per second against num_envs, log-log, from the suite's JSON.

    python -m pytest benchmarks --benchmark-only -m "" --benchmark-json=/tmp/bench.json
    python benchmarks/plot_scaling.py /tmp/bench.json                 # writes docs/scaling.png
    python benchmarks/plot_scaling.py /tmp/bench.json --families "Pong state" "floor"

One panel per family (a group name without its `` n=N``: ``Pong state``, ``CartPole-v1``,
``MinAtar breakout``, ...), one line per case (the ``label`` the suite gave it). Every point is
a median that run measured: env-steps per call over the median seconds per call. A peer that
steps one env per call (PlainPong, MinAtar's and MiniGrid's own loops, ALE) was measured in
each group, so its line shows how much its one-env rate moved during the run. Needs
matplotlib (``pip install "batchenv[bench]"``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "docs", "scaling.png")
DEFAULT_FAMILIES = ["Pong state", "CartPole-v1", "MinAtar breakout", "MiniGrid-DoorKey-8x8-v0"]


def series(path: str) -> tuple[dict[str, dict[str, dict[int, float]]], set[str]]:
    """family -> label -> num_envs -> env-steps per second, from a ``--benchmark-json``; and
    the labels of the peers."""
    with open(path) as f:
        benchmarks = json.load(f)["benchmarks"]
    out: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    peers = set()
    for b in benchmarks:
        info = b.get("extra_info", {})
        family, _, n = (b.get("group") or "").rpartition(" n=")
        if "label" not in info or not n.isdigit():
            continue
        out[family][info["label"]][int(n)] = info["env_steps"] / b["stats"]["median"]
        if info.get("peer"):
            peers.add(info["label"])
    return out, peers


def plot(found: dict, peers: set[str], families: list[str], out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = [f for f in families if f in found]
    if not families:
        raise SystemExit(f"none of the families is in the JSON; it has: {sorted(found)}")
    cols = 2 if len(families) > 1 else 1
    rows = (len(families) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.6 * rows), dpi=100,
                             squeeze=False)
    for ax, family in zip(axes.flat, families):
        labels = sorted(found[family], key=lambda label: (label in peers, label))
        ours = peer = 0
        for label in labels:  # ours in colour, solid; peers grey to red, dashed
            points = found[family][label]
            ns = sorted(points)
            if label in peers:
                style = dict(color=["0.35", "C3", "C5"][peer % 3], linestyle="--",
                             marker="xDv"[peer % 3])
                peer += 1
            else:
                style = dict(color=f"C{[0, 1, 2, 4, 9][ours % 5]}", marker="os^<>"[ours % 5])
                ours += 1
            ax.plot(ns, [points[n] for n in ns], label=label, **style)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(family)
        ax.set_xlabel("num_envs")
        ax.set_ylabel("env-steps per second")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    for ax in list(axes.flat)[len(families):]:
        ax.set_visible(False)
    fig.suptitle("batchenv (solid) and its peers (dashed): medians of one run of the benchmark "
                 "suite", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out)
    print(f"wrote {out}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="the file that --benchmark-json wrote")
    parser.add_argument("--families", nargs="+", default=DEFAULT_FAMILIES,
                        help="group names without their ' n=N' (default: %(default)s)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="default: docs/scaling.png")
    args = parser.parse_args(argv)
    found, peers = series(args.json)
    plot(found, peers, args.families, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
