"""Craftax-Classic's symbolic env (``craftax`` on PyPI, the JAX port of crafter) on this CPU:
``python craftax_classic_steps.py NUM_ENVS [SECONDS [STEPS_PER_CALL]]`` prints one line of
JSON.

Run by ``benchmarks/test_bench_crafter.py`` with the Python named by
``BATCHENV_CRAFTAX_PYTHON`` (craftax wants its own virtual environment: it moves
Gymnasium's version). ``Craftax-Classic-Symbolic-v1`` with craftax's own auto-reset (its
``step`` makes a new world every step and keeps it where the episode ended), random
actions (drawn on the device, ``jax.random.randint``), ``NUM_ENVS`` worlds stepped by
``jax.vmap`` inside one jitted ``jax.lax.scan`` of ``STEPS_PER_CALL`` steps (default
``16384 // NUM_ENVS``, at least one), as craftax's own PPO rolls out; each step's
observation is carried, so the compiler cannot leave it out. The scan is compiled first
(``jax.jit(...).lower(...).compile()``: its CPU and wall time are reported apart,
``compile_*``), run once, then calls are timed
until ``SECONDS`` of wall time have passed (default 20; two calls at least):
``env_steps_per_s`` (wall clock) and ``cpu_us_per_env_step`` (this process's CPU time,
all of XLA's threads).
"""

from __future__ import annotations

import json
import os
import sys
import time

import jax
from craftax.craftax_env import make_craftax_env_from_name


def main(n: int, seconds: float, steps_per_call: int) -> None:
    env = make_craftax_env_from_name("Craftax-Classic-Symbolic-v1", auto_reset=True)
    params = env.default_params
    actions = env.action_space(params).n
    # (jitted: run op by op, the vmapped reset of thousands of worlds did not finish)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def one(carry, _):  # type: ignore[no-untyped-def]
        key, state, _obs, ends = carry
        key, k_act, k_step = jax.random.split(key, 3)
        action = jax.random.randint(k_act, (n,), 0, actions)
        obs, state, _reward, done, _info = step(jax.random.split(k_step, n), state, action,
                                                params)
        return (key, state, obs, ends + done.sum()), None

    @jax.jit
    def rollout(carry):  # type: ignore[no-untyped-def]
        return jax.lax.scan(one, carry, None, length=steps_per_call)[0]

    key = jax.random.PRNGKey(0)
    key, k_reset = jax.random.split(key)
    obs, state = reset(jax.random.split(k_reset, n), params)
    carry = (key, state, obs, jax.numpy.zeros((), jax.numpy.int32))
    c0, w0 = time.process_time(), time.perf_counter()
    compiled = rollout.lower(carry).compile()
    compile_cpu, compile_wall = time.process_time() - c0, time.perf_counter() - w0
    carry = jax.block_until_ready(compiled(carry))  # (warm)
    ends0 = int(carry[3])
    calls = 0
    c0, w0 = time.process_time(), time.perf_counter()
    while time.perf_counter() - w0 < seconds or calls < 2:
        carry = jax.block_until_ready(compiled(carry))
        calls += 1
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    env_steps = calls * steps_per_call * n
    print(json.dumps({
        "num_envs": n, "steps_per_call": steps_per_call, "env_steps": env_steps,
        "wall_s": wall, "cpu_s": cpu,
        "env_steps_per_s": env_steps / wall, "cpu_us_per_env_step": cpu / env_steps * 1e6,
        "episodes_ended_per_env_step": (int(carry[3]) - ends0) / env_steps,
        "compile_cpu_s": compile_cpu, "compile_wall_s": compile_wall,
        "jax": jax.__version__, "craftax": _version("craftax"), "cpus": os.cpu_count()}))


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    num_envs = int(sys.argv[1])
    main(num_envs, float(sys.argv[2]) if len(sys.argv) > 2 else 20.0,
         int(sys.argv[3]) if len(sys.argv) > 3 else max(1, 16384 // num_envs))
