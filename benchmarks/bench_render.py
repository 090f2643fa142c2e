"""Classic-control frames: batchenv's numpy renderers against Gymnasium's pygame code, per
frame, measured side by side.

    python benchmarks/bench_render.py [--repeats 7] [--frames 16]

For each env: one batchenv ``render()`` of ``--frames`` envs (ms per frame) against
Gymnasium's ``render()`` of one env called ``--frames`` times, in process CPU time, the two
sides alternating, medians of ``--repeats``; prints the ratio. Figures: docs/classic_control.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import gymnasium as gym
import numpy as np

import batchenv

IDS = ["CartPole-v1", "MountainCar-v0", "Acrobot-v1", "Pendulum-v1"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--frames", type=int, default=16)
    args = ap.parse_args()
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    k = args.frames
    print("| env | batchenv (ms per frame) | Gymnasium pygame (ms per frame) | ratio |")
    print("|---|---:|---:|---:|")
    for env_id in IDS:
        ours = batchenv.make(env_id, num_envs=k, render_mode="rgb_array")
        ours.reset(seed=0)
        theirs = gym.make(env_id, render_mode="rgb_array")
        theirs.reset(seed=0)
        if env_id == "Pendulum-v1":
            theirs.step(np.array([1.0], dtype=np.float32))  # draws the torque arrow too
        mine, gyms = [], []
        ours.render(), theirs.render()  # warm up (static parts drawn once)
        for _ in range(args.repeats):
            t0 = time.process_time()
            ours.render()
            mine.append((time.process_time() - t0) / k)
            t0 = time.process_time()
            for _ in range(k):
                theirs.render()
            gyms.append((time.process_time() - t0) / k)
        a, b = statistics.median(mine), statistics.median(gyms)
        print(f"| {env_id} | {a * 1e3:.2f} | {b * 1e3:.2f} | {b / a:.1f}x |")
        ours.close()
        theirs.close()


if __name__ == "__main__":
    main()
