"""Classic control: batchenv's envs against Gymnasium's vector envs, measured side by side.

    python benchmarks/bench_classic.py [--repeats 7] [--quick]

Prints three markdown tables of env-steps per second (median of ``--repeats`` timed runs,
each ~0.15 s of this process's CPU time, so that other processes on a shared machine
disturb less; the runs of the two sides alternate, so what load remains hits both alike):

1. ``BatchCartPole`` (default, and bit for bit with ``fast_trig=False``) vs Gymnasium's
   ``CartPoleVectorEnv``
   (``gymnasium.make_vec("CartPole-v1", N, vectorization_mode="vector_entry_point")``) at
   N = 256, 4096, 65536, and the ratios;
2. every env at N = 4096 vs Gymnasium's ``SyncVectorEnv`` of the same id, and the ratio;
3. every env at N = 1, 256, 4096, 65536.

Both sides run with their defaults (actions validated, results copied), auto-reset
NEXT_STEP, random actions drawn in advance (uniform over the action space). Figures and
their discussion: docs/classic_control.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

import batchenv

IDS = ["CartPole-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1",
       "Pendulum-v1"]
RUN_SECONDS = 0.15


def actions_for(env: gym.vector.VectorEnv, count: int = 16) -> list[np.ndarray]:
    env.action_space.seed(0)
    return [np.asarray(env.action_space.sample()) for _ in range(count)]


def stepper(env: gym.vector.VectorEnv) -> Callable[[int], float]:
    """A function running ``steps`` steps of ``env`` and returning the seconds taken."""
    env.reset(seed=0)
    actions = actions_for(env)
    count = len(actions)

    def run(steps: int) -> float:
        step = env.step
        start = time.process_time()
        for i in range(steps):
            step(actions[i % count])
        return time.process_time() - start

    run(3)  # warm up
    return run


def calibrate(run: Callable[[int], float]) -> int:
    """Steps for one timed run of about RUN_SECONDS."""
    steps = 1
    while True:
        elapsed = run(steps)
        if elapsed > RUN_SECONDS / 4 or steps >= 1_000_000:
            return max(1, int(steps * RUN_SECONDS / max(elapsed, 1e-9)))
        steps *= 4


def side_by_side(envs: list[gym.vector.VectorEnv], repeats: int) -> list[float]:
    """Median env-steps/s of each env, their timed runs interleaved."""
    runs = [stepper(env) for env in envs]
    steps = [calibrate(run) for run in runs]
    times: list[list[float]] = [[] for _ in envs]
    for _ in range(repeats):
        for i, run in enumerate(runs):
            times[i].append(run(steps[i]) / steps[i])
    return [env.num_envs / statistics.median(t) for env, t in zip(envs, times)]


def ours(env_id: str, n: int) -> gym.vector.VectorEnv:
    return gym.make_vec(f"batchenv/{env_id}", num_envs=n)


def sync(env_id: str, n: int) -> gym.vector.VectorEnv:
    return gym.make_vec(env_id, num_envs=n, vectorization_mode="sync")


def fmt(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true",
                        help="3 repeats, Sync comparison at N=1024 (a smoke run)")
    args = parser.parse_args()
    repeats = 3 if args.quick else args.repeats
    sync_n = 1024 if args.quick else 4096
    print(f"batchenv {batchenv.__version__}, gymnasium {gym.__version__}, numpy "
          f"{np.__version__}; env-steps/s, median of {repeats} runs\n")

    print("BatchCartPole vs Gymnasium CartPoleVectorEnv (vector_entry_point)\n")
    print("| N | batchenv | batchenv fast_trig=False | CartPoleVectorEnv | ratio "
          "| ratio fast_trig=False |\n|---|---|---|---|---|---|")
    for n in (256, 4096, 65536):
        gym_vec = gym.make_vec("CartPole-v1", num_envs=n,
                               vectorization_mode="vector_entry_point")
        exact = batchenv.BatchCartPole(n, fast_trig=False)
        a, f, b = side_by_side([ours("CartPole-v1", n), exact, gym_vec], repeats)
        print(f"| {n} | {fmt(a)} | {fmt(f)} | {fmt(b)} | {a / b:.2f}x | {f / b:.2f}x |",
              flush=True)

    print(f"\nEach env at N={sync_n} vs Gymnasium SyncVectorEnv\n")
    print("| env | batchenv | SyncVectorEnv | ratio |\n|---|---|---|---|")
    for env_id in IDS:
        a, b = side_by_side([ours(env_id, sync_n), sync(env_id, sync_n)], repeats)
        print(f"| {env_id} | {fmt(a)} | {fmt(b)} | {a / b:.0f}x |", flush=True)

    sizes = (1, 256, 4096, 65536)
    print("\nbatchenv, env-steps/s by N\n")
    print("| env | " + " | ".join(f"N={n}" for n in sizes) + " |\n|---|" + "---|" * len(sizes))
    for env_id in IDS:
        row = [side_by_side([ours(env_id, n)], repeats)[0] for n in sizes]
        print(f"| {env_id} | " + " | ".join(fmt(x) for x in row) + " |", flush=True)


if __name__ == "__main__":
    main()
