"""MiniGrid: batchenv at N envs vs ``minigrid``'s own one-env loop, side by side in one run.

    python benchmarks/bench_minigrid.py                          # DoorKey-8x8, 4096 envs
    python benchmarks/bench_minigrid.py --ids MiniGrid-DoorKey-8x8-v0 --num-envs 1024 --rounds 3

Per id, in rounds that alternate the two (medians over rounds), random actions, resets
included, one thread:

* batchenv: ``batchenv.make(id, num_envs)`` (ImgObsWrapper's observation, NEXT_STEP
  auto-reset, validation on), seconds per env-step over ``--steps`` batched steps;
* minigrid: ``gymnasium.make(id)`` wrapped in ``ImgObsWrapper``, ``step`` and ``reset`` on
  an episode's end, seconds per env-step over ``--ref-steps`` steps.

Prints CPU seconds per env-step (``time.process_time``) of each and the ratio. Needs
``minigrid`` (the ``test`` extra).
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np

import batchenv


def time_ours(env_id: str, num_envs: int, steps: int) -> float:
    env = batchenv.make(env_id, num_envs)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 7, size=(steps, num_envs))
    t = time.process_time()
    for a in actions:
        env.step(a)
    return (time.process_time() - t) / (steps * num_envs)


def time_minigrid(env_id: str, steps: int) -> float:
    import minigrid  # noqa: F401  # registers the ids
    from minigrid.wrappers import ImgObsWrapper

    env = ImgObsWrapper(gym.make(env_id))
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 7, size=steps).tolist()
    t = time.process_time()
    for a in actions:
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            env.reset()
    return (time.process_time() - t) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ids", nargs="+", default=["MiniGrid-DoorKey-8x8-v0"])
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--ref-steps", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"{'id':28s} {'batchenv ns/step':>17s} {'minigrid ns/step':>17s} {'ratio':>7s}")
    for env_id in args.ids:
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(time_ours(env_id, args.num_envs, args.steps))
            theirs.append(time_minigrid(env_id, args.ref_steps))
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"{env_id:28s} {a * 1e9:17.0f} {b * 1e9:17.0f} {b / a:6.2f}x")


if __name__ == "__main__":
    main()
