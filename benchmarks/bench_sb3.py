"""The Stable-Baselines3 adapter's cost per step, measured side by side.

    python benchmarks/bench_sb3.py [--repeats 5] [--block 0.2]

Per ``step`` with random actions, medians of ``--repeats`` rounds, every round timing each
case once (interleaved): ``BatchCartPole.step``, ``to_sb3(...)`` of it in SAME_STEP and in
NEXT_STEP mode, and SB3's ``DummyVecEnv`` of Gymnasium's ``CartPole-v1`` (up to 256 envs).
Figures: docs/training.md, "Stable-Baselines3".
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv

from batchenv import BatchCartPole
from batchenv.adapters import to_sb3


def timer(step, n: int):
    actions = [np.random.default_rng(i).integers(0, 2, n) for i in range(16)]
    for a in actions[:3]:
        step(a)

    def run(block: float) -> float:
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < block:
            step(actions[calls & 15])
            calls += 1
        return (time.perf_counter() - start) / calls

    return run


def cases(n: int) -> dict:
    env = BatchCartPole(n)
    env.reset(seed=0)
    out = {"BatchCartPole.step": timer(env.step, n)}
    for mode in ("SameStep", "NextStep"):
        venv = to_sb3(BatchCartPole(n, autoreset_mode=mode))
        venv.reset()
        out[f"to_sb3 {mode}"] = timer(venv.step, n)
    if n <= 256:
        dummy = DummyVecEnv([lambda: gym.make("CartPole-v1")] * n)
        dummy.reset()
        out["SB3 DummyVecEnv"] = timer(dummy.step, n)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--block", type=float, default=0.2)
    args = ap.parse_args()
    names = ["BatchCartPole.step", "to_sb3 SameStep", "to_sb3 NextStep", "SB3 DummyVecEnv"]
    print("| num_envs | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for n in (16, 256, 4096):
        runs = cases(n)
        times = {k: [] for k in runs}
        for _ in range(args.repeats):
            for k, run in runs.items():
                times[k].append(run(args.block))
        cells = [f"{statistics.median(times[k]) * 1e6:,.0f} µs" if k in times else "—"
                 for k in names]
        print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
