"""pytest-benchmark cases for BatchCrafter beside crafter's own loop:
``pytest benchmarks/test_bench_crafter.py`` (a few minutes: the big batches are warmed up).

One round is one ``step`` of the batch (random actions, NEXT_STEP auto-reset: world
generation included at the rate episodes end), or one ``step`` of ``crafter.Env`` (1.8.3,
its image included, ``reset()`` when an episode ends). The runs start from worlds past
their first 250 steps, so that episodes end at their steady rate (a random player's
episodes last about 170 steps, the first ones of a batch all about then).
``extra_info["env_steps"]`` is the env-steps of a round; the last case prints each
batch's env-steps per second over crafter's (this run's means: crafter's median step is
one without a reset, which would leave its world generation out of its rate: about 50 ms
a world, after a first ``reset`` of about 2 s that also loads the textures), and keeps
them in its ``extra_info``. BatchCrafter runs on one thread and on two
(``num_threads=2``: both cores of a 2-core host).

``test_craftax_classic`` runs Craftax-Classic's symbolic env (the JAX port, ``craftax`` on
PyPI) at the same batch sizes, in a subprocess of the Python that
``BATCHENV_CRAFTAX_PYTHON`` names (craftax wants its own virtual environment: it moves
Gymnasium's version), with ``benchmarks/craftax_classic_steps.py`` (random actions,
craftax's own auto-reset, ``16384 // n`` steps a jitted call below 4096 envs, one from
there; its compile is left out of the rate and reported apart in ``extra_info``); skipped
when the variable is not set::

    python3 -m venv /tmp/craftax-venv && /tmp/craftax-venv/bin/pip install craftax
    BATCHENV_CRAFTAX_PYTHON=/tmp/craftax-venv/bin/python python -m pytest \
        benchmarks/test_bench_crafter.py --benchmark-only -s
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

crafter = pytest.importorskip("crafter")

from batchenv.envs.crafter import BatchCrafter  # noqa: E402

SIZES = [256, 4096, 16384]
_PER_STEP: dict[str, float] = {}  # case -> mean seconds per env-step


def _record(benchmark, name: str, env_steps: int) -> None:
    benchmark.extra_info["env_steps"] = env_steps
    _PER_STEP[name] = benchmark.stats.stats.mean / env_steps


def test_crafter_own_loop(benchmark):
    env = crafter.Env(seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(200):  # (past the first episode's start)
        if env.step(int(rng.integers(17)))[2]:
            env.reset()

    def step():
        if env.step(int(rng.integers(17)))[2]:
            env.reset()

    benchmark.pedantic(step, rounds=3000, warmup_rounds=10)  # (about 18 resets)
    _record(benchmark, "crafter", 1)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("obs_type", ["pixels", "symbolic"])
@pytest.mark.parametrize("n", SIZES)
def test_batch_crafter(benchmark, n, obs_type, threads):
    """``threads``: the env's ``num_threads`` (its rows stepped in blocks on that many
    threads; crafter's loop and one thread use one core, two threads both of this host's)."""
    env = BatchCrafter(n, obs_type=obs_type, num_threads=threads)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 17, n) for _ in range(16)]
    for t in range(250):  # (past the first episodes, which end together)
        env.step(actions[t & 15])
    counter = iter(range(10**12))
    benchmark.pedantic(lambda: env.step(actions[next(counter) & 15]),
                       rounds=max(20, 200_000 // n), warmup_rounds=2)
    _record(benchmark, f"{obs_type} {n}" + ("" if threads == 1 else f" {threads} threads"), n)


_CRAFTAX = pathlib.Path(__file__).with_name("craftax_classic_steps.py")


@pytest.mark.parametrize("n", [256, 4096, pytest.param(16384, marks=pytest.mark.slow)])
def test_craftax_classic(benchmark, n):
    """Craftax-Classic's symbolic env at ``n`` envs (the module docstring): env-steps per
    second by the wall clock, its jit compile apart (``extra_info``); one step a call at
    4096 envs and more. 16384 envs is ``slow`` (``-m ""``): craftax makes a world for
    every env on every step, and its cost per env grows with the batch here (4096 envs:
    more than half an hour of CPU for the reset and first step, docs/crafter.md)."""
    python = os.environ.get("BATCHENV_CRAFTAX_PYTHON")
    if not python:
        pytest.skip("BATCHENV_CRAFTAX_PYTHON is not set: the path of a Python with craftax "
                    "installed (in its own venv: pip install craftax)")
    steps_per_call = ["20", "1"] if n >= 4096 else []  # (else the script's 16384 // n)
    out = subprocess.run([python, str(_CRAFTAX), str(n), *steps_per_call],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    benchmark.extra_info.update(result)
    _PER_STEP[f"craftax-classic symbolic {n}"] = 1 / result["env_steps_per_s"]
    benchmark(lambda: None)


def test_ratios(benchmark):
    """Env-steps per second over crafter's own loop's, per batch (this run's means)."""
    if "crafter" not in _PER_STEP:
        pytest.skip("run with test_crafter_own_loop (the whole module)")
    ratios = {name: _PER_STEP["crafter"] / t for name, t in _PER_STEP.items()
              if name != "crafter"}
    benchmark.extra_info.update({f"ratio {k}": round(v, 1) for k, v in ratios.items()})
    benchmark.extra_info["crafter us per step"] = round(_PER_STEP["crafter"] * 1e6, 1)
    lines = [f"crafter's own loop: {_PER_STEP['crafter'] * 1e6:.0f} us per step"]
    lines += [f"{'' if name.startswith('craftax') else 'BatchCrafter '}{name}: "
              f"{_PER_STEP[name] * 1e6:.2f} us per env-step, {ratio:.0f}x crafter"
              for name, ratio in ratios.items()]
    for n in SIZES:  # BatchCrafter over Craftax-Classic, both symbolic, where both ran
        ours, theirs = _PER_STEP.get(f"symbolic {n}"), _PER_STEP.get(
            f"craftax-classic symbolic {n}")
        if ours and theirs:
            benchmark.extra_info[f"symbolic {n} over craftax-classic"] = round(theirs / ours, 2)
            lines.append(f"BatchCrafter symbolic {n} over Craftax-Classic: "
                         f"{theirs / ours:.2f}x")
    print("\n" + "\n".join(lines))
    benchmark(lambda: None)
