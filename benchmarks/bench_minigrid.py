"""MiniGrid: batchenv at N envs vs ``minigrid``'s own one-env loop, side by side in one run.

    python benchmarks/bench_minigrid.py                          # the default ids, 4096 envs
    python benchmarks/bench_minigrid.py --ids MiniGrid-DoorKey-8x8-v0 --num-envs 1024 --rounds 3
    python benchmarks/bench_minigrid.py --compile   # the first reset and step of each id

Per id, in rounds that alternate the two (medians over rounds), random actions, resets
included, one thread:

* batchenv: ``batchenv.make(id, num_envs)`` (the compiled per-env kernels,
  ImgObsWrapper's observation, NEXT_STEP auto-reset, validation on), seconds per env-step
  over ``--steps`` batched steps (after one step that compiles the loops, not timed);
* minigrid: ``gymnasium.make(id)`` wrapped in ``ImgObsWrapper``, ``step`` and ``reset`` on
  an episode's end, seconds per env-step over ``--ref-steps`` steps.

Prints CPU nanoseconds per env-step (``time.process_time``) of each, the ratio, and
batchenv's memory per env (state, observation and final-observation buffers, bytes).
Needs ``minigrid`` (the ``test`` extra) and numba (``fast``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np

import batchenv


def make_ours(env_id: str, num_envs: int) -> batchenv.BatchEnv:
    env = batchenv.make(env_id, num_envs)
    env.reset(seed=0)
    env.step(np.zeros(num_envs, dtype=np.int64))  # compiles the step's loop
    return env


def time_ours(env: batchenv.BatchEnv, steps: int) -> float:
    num_envs = env.num_envs
    rng = np.random.default_rng(0)
    actions = rng.integers(0, env.single_action_space.n, size=(steps, num_envs))
    t = time.process_time()
    for a in actions:
        env.step(a)
    return (time.process_time() - t) / (steps * num_envs)


def time_minigrid(env_id: str, steps: int) -> float:
    import minigrid  # noqa: F401  # registers the ids
    from minigrid.wrappers import ImgObsWrapper

    env = ImgObsWrapper(gym.make(env_id))
    env.reset(seed=0)
    n = env.action_space.n
    actions = np.random.default_rng(0).integers(0, n, size=steps).tolist()
    t = time.process_time()
    for a in actions:
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            env.reset()
    return (time.process_time() - t) / steps


def compile_times(env_ids: list[str]) -> None:
    """CPU seconds of each id's first reset, step and masked reset in this process (what
    compiles its class's loops; a class met before costs nothing)."""
    for env_id in env_ids:
        t = time.process_time()
        env = batchenv.make(env_id, 64)
        env.reset(seed=0)
        env.step(np.zeros(64, dtype=np.int64))
        env.reset(options={"reset_mask": np.arange(64) % 2 == 0})
        print(f"{env_id:36s} {time.process_time() - t:6.1f} s CPU (first reset and step)",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ids", nargs="+", default=[
        "MiniGrid-DoorKey-8x8-v0", "MiniGrid-MultiRoom-N4-S5-v0", "MiniGrid-MultiRoom-N4-S5-v1",
        "MiniGrid-MultiRoom-N6-v0", "MiniGrid-KeyCorridorS3R3-v0",
        "MiniGrid-Dynamic-Obstacles-8x8-v0", "MiniGrid-FourRooms-v0"])
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--ref-steps", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compile", action="store_true",
                    help="print each id's compile time (CPU) instead, in one process")
    args = ap.parse_args()
    if args.compile:
        compile_times(args.ids)
        return
    print(f"{'id':36s} {'batchenv ns/step':>17s} {'minigrid ns/step':>17s} {'ratio':>8s} "
          f"{'bytes/env':>10s}")
    for env_id in args.ids:
        env = make_ours(env_id, args.num_envs)
        # the observation buffer, and the returned set the pool keeps for reuse
        per_env = env.full_state_dtype.itemsize + 2 * env._obs[0].nbytes
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(time_ours(env, args.steps))
            theirs.append(time_minigrid(env_id, args.ref_steps))
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"{env_id:36s} {a * 1e9:17.0f} {b * 1e9:17.0f} {b / a:7.0f}x {per_env:10d}",
              flush=True)


if __name__ == "__main__":
    main()
