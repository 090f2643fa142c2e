"""pytest-benchmark cases for BatchPong: ``pytest benchmarks/test_bench_pong.py``.

One ``step`` per benchmark round; compare runs with ``--benchmark-compare``. The ratio figures
(against PlainPong and ALE) come from ``benchmarks/bench_pong.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from batchenv import BatchPong
from batchenv.reference import PlainPong


def _stepper(n: int, **kwargs):
    env = BatchPong(n, **kwargs)
    env.reset(seed=0)
    actions = [np.random.default_rng(i).integers(0, 3, env.action_space.shape)
               for i in range(16)]
    counter = iter(range(10**12))
    return lambda: env.step(actions[next(counter) & 15])


@pytest.mark.parametrize("n", [1, 256, 4096, 65536])
def test_state(benchmark, n):
    benchmark(_stepper(n))


@pytest.mark.parametrize("obs_type", ["tiles", "pixels"])
@pytest.mark.parametrize("copy", [True, False])
def test_images_4096(benchmark, obs_type, copy):
    benchmark(_stepper(4096, obs_type=obs_type, copy=copy))


@pytest.mark.parametrize("mode", ["two_player", "rally"])
def test_modes_4096(benchmark, mode):
    benchmark(_stepper(4096, mode=mode, obs_type="state"))


def test_frameskip4_sticky_4096(benchmark):
    benchmark(_stepper(4096, frameskip=4, repeat_action_probability=0.25))


def test_plain_pong(benchmark):
    game = PlainPong(seed=0)
    actions = np.random.default_rng(0).integers(0, 3, 4096).tolist()
    counter = iter(range(10**12))
    benchmark(lambda: game.step(actions[next(counter) & 4095]))
