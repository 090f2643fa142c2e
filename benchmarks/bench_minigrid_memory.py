"""MiniGrid: memory per env at a large batch, measured (not computed from dtypes).

    python benchmarks/bench_minigrid_memory.py
    python benchmarks/bench_minigrid_memory.py --num-envs 65536 --ids MiniGrid-DoorKey-8x8-v0

Per id, in one process: a small batch of the id is made, reset and stepped first, so the
class's loops are compiled and numba's and numpy's one-time allocations are done; then,
around ``batchenv.make(id, num_envs)``, ``reset`` and ``--steps`` steps of random actions:

* ``tracemalloc``: the bytes still allocated after the steps (the env's state arrays,
  observation and final-observation buffers, what a step keeps) and the peak during them
  (with a step's temporaries), divided by the number of envs; numpy reports its array
  buffers to ``tracemalloc``;
* the process's resident set size (``VmRSS``) before and after, its growth per env
  (pages actually touched).

The env is closed and freed before the next id.
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc

import numpy as np

import batchenv


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def measure(env_id: str, num_envs: int, steps: int) -> dict:
    warm = batchenv.make(env_id, 16)  # compile the class's loops (not measured)
    warm.reset(seed=0)
    warm.step(np.zeros(16, dtype=np.int64))
    warm.close()
    del warm
    gc.collect()

    actions = np.random.default_rng(0).integers(0, 3, size=(steps, num_envs))
    rss0 = rss_bytes()
    tracemalloc.start()
    env = batchenv.make(env_id, num_envs)
    env.reset(seed=0)
    for a in actions:
        env.step(a)
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss1 = rss_bytes()
    state = env.full_state_dtype.itemsize
    result = {
        "id": env_id, "num_envs": num_envs, "steps": steps,
        "traced_bytes_per_env": round(kept / num_envs),
        "traced_peak_bytes_per_env": round(peak / num_envs),
        "rss_growth_bytes_per_env": round((rss1 - rss0) / num_envs),
        "traced_total_mb": round(kept / 2**20, 1),
        "state_bytes_per_env": state,
        "obs_bytes_per_env": int(np.prod(env.single_observation_space.shape))
        * env.single_observation_space.dtype.itemsize,
    }
    env.close()
    del env
    gc.collect()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ids", nargs="+", default=[
        "MiniGrid-DoorKey-8x8-v0", "MiniGrid-MultiRoom-N4-S5-v0", "MiniGrid-Empty-16x16-v0"])
    ap.add_argument("--num-envs", type=int, default=65536)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    for env_id in args.ids:
        print(json.dumps(measure(env_id, args.num_envs, args.steps)), flush=True)


if __name__ == "__main__":
    main()
