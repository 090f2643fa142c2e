"""MiniGrid on the CPU: batchenv against NAVIX (JAX MiniGrid), interleaved in one run.

    python benchmarks/bench_navix.py --python /work/venvs/navix/bin/python
    python benchmarks/bench_navix.py --ids DoorKey-8x8 Empty-8x8 --rounds 5 --scan

NAVIX needs JAX, so it runs in its own venv (``--python``: ``python -m venv V && V/bin/pip
install navix``, which brings JAX's CPU build): a worker subprocess of that interpreter
builds the env, compiles, and then waits; this process times batchenv in-process and asks
the worker for a round in turn (rounds alternate, medians reported), so both sides see the
same machine load.

* batchenv: ``batchenv.make("MiniGrid-<id>-v0", num_envs)``, random actions, NEXT_STEP
  auto-reset, ``minigrid``'s 7x7x3 egocentric image, one thread (numba loop).
* NAVIX: ``navix.make("Navix-<id>-v0", observation_fn=observations.symbolic_first_person)``
  (its 7x7x3 first-person symbolic view, the nearest to ``minigrid``'s), ``jax.jit(
  jax.vmap(env.step))`` called once per step (NAVIX's ``step`` auto-resets a finished env
  through ``lax.cond``, which ``vmap`` turns into computing both branches), random actions
  drawn beforehand, ``block_until_ready`` on the observation each step; also ``lax.scan``
  over the round's steps in one call (``--scan``), NAVIX's fastest form. Compilation is
  excluded (one warm-up call of each).

Prints wall-clock env-steps per second of both (medians over rounds), the ratio, the CPU
nanoseconds per env-step of each (``time.process_time``: all the process's threads), and the
CPU seconds per wall second of each (XLA's CPU backend may use both cores; batchenv uses
one). Needs ``numba`` here and ``navix`` in ``--python``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np

import batchenv

NAVIX_WORKER = r"""
import json, sys, time
import jax, jax.numpy as jnp
import navix as nx
from navix import observations

env_id, num_envs, steps, scan = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
env = nx.make(f"Navix-{env_id}-v0", observation_fn=observations.symbolic_first_person)
keys = jax.random.split(jax.random.PRNGKey(0), num_envs)
timestep = jax.vmap(env.reset)(keys)
num_actions = len(env.action_set)
actions = jax.random.randint(jax.random.PRNGKey(1), (steps, num_envs), 0, num_actions)
step = jax.jit(jax.vmap(env.step))

@jax.jit
def run_scan(timestep, actions):
    def body(ts, a):
        ts = jax.vmap(env.step)(ts, a)
        return ts, ts.reward.sum()
    return jax.lax.scan(body, timestep, actions)

# compile (not timed): the second call compiles again (the reset's output types differ
# from the step's), the third does not
for t in range(3):
    timestep = step(timestep, actions[t]); timestep.observation.block_until_ready()
timestep, _ = run_scan(timestep, actions); timestep.observation.block_until_ready()
print(json.dumps({"ready": True, "obs_shape": list(timestep.observation.shape[1:]),
                  "obs_dtype": str(timestep.observation.dtype), "num_actions": num_actions,
                  "max_steps": env.max_steps, "jax": jax.__version__,
                  "devices": [str(d) for d in jax.devices()]}), flush=True)
for line in sys.stdin:
    w, c = time.perf_counter(), time.process_time()
    if scan:
        timestep, _ = run_scan(timestep, actions)
        timestep.observation.block_until_ready()
    else:
        for t in range(steps):
            timestep = step(timestep, actions[t])
            timestep.observation.block_until_ready()
    print(json.dumps({"wall": time.perf_counter() - w, "cpu": time.process_time() - c}),
          flush=True)
"""


class NavixWorker:
    """A NAVIX env batch compiled in a subprocess of the NAVIX venv, timed on request."""

    def __init__(self, python: str, env_id: str, num_envs: int, steps: int, scan: bool):
        self.proc = subprocess.Popen(
            [python, "-c", NAVIX_WORKER, env_id, str(num_envs), str(steps), "1" if scan else "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "JAX_PLATFORMS": "cpu"})
        self.info = self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the NAVIX worker exited (code {self.proc.wait()})")
        return json.loads(line)

    def time_round(self) -> tuple[float, float]:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        r = self._read()
        return r["wall"], r["cpu"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def time_ours(env: batchenv.BatchEnv, actions: np.ndarray) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    for a in actions:
        env.step(a)
    return time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default="/work/venvs/navix/bin/python",
                    help="the interpreter of a venv with navix installed")
    ap.add_argument("--ids", nargs="+", default=["DoorKey-8x8"],
                    help="ids without prefix and version (both libraries register them)")
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=50, help="batched steps per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scan", action="store_true",
                    help="NAVIX runs a round as one lax.scan instead of one call per step")
    args = ap.parse_args()
    n = args.num_envs
    print(f"load average at start: {os.getloadavg()}", flush=True)
    for env_id in args.ids:
        worker = NavixWorker(args.python, env_id, n, args.steps, args.scan)
        env = batchenv.make(f"MiniGrid-{env_id}-v0", n)
        env.reset(seed=0)
        env.step(np.zeros(n, dtype=np.int64))  # compiles the loops (not timed)
        actions = np.random.default_rng(0).integers(0, env.single_action_space.n,
                                                    size=(args.steps, n))
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(time_ours(env, actions))
            theirs.append(worker.time_round())
        worker.close()
        steps = args.steps * n
        ours_sps = steps / statistics.median(w for w, _ in ours)
        theirs_sps = steps / statistics.median(w for w, _ in theirs)
        ours_cpu = statistics.median(c / w for w, c in ours)
        theirs_cpu = statistics.median(c / w for w, c in theirs)
        print(json.dumps({
            "id": env_id, "num_envs": n, "steps_per_round": args.steps,
            "rounds": args.rounds, "navix_form": "scan" if args.scan else "jit step per call",
            "batchenv_steps_per_s": round(ours_sps), "navix_steps_per_s": round(theirs_sps),
            "ratio": round(ours_sps / theirs_sps, 2),
            "batchenv_cpu_ns_per_step": round(statistics.median(c for _, c in ours) / steps * 1e9),
            "navix_cpu_ns_per_step": round(statistics.median(c for _, c in theirs) / steps * 1e9),
            "batchenv_cpu_per_wall": round(ours_cpu, 2),
            "navix_cpu_per_wall": round(theirs_cpu, 2),
            "navix": worker.info, "load_average_end": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()
