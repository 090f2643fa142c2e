"""The base class's own cost: games with no rules in both forms, the knobs, debug mode.

    python -m pytest benchmarks/test_bench_core.py --benchmark-only

* ``floor n=N``: ``batchenv.testing.NullEnv`` (numpy kernels that do nothing: one int8 of
  state, a 1-float observation), so what is timed is ``BatchEnv.step`` itself (action
  check, step counters, auto-reset bookkeeping, the output buffers and their copies); with
  ``validate=False`` and ``copy=False``; and the same game as per-env kernels
  (``PerEnvNull``: the base class's work in the compiled pass over the envs).
* ``MinAtar-shaped floor n=N``: MinAtar Breakout's shape with no rules (3 actions, one
  sticky-action draw per step, a 10x10x4 bool observation cleared every step), numpy
  kernels against per-env kernels: the least a MinAtar step can cost in each form.
* ``BatchPong debug n=4096``: debug mode (every kernel checked around every call) against
  the default.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

import batchenv
from batchenv.testing import NullEnv

SIZES = [1, 256, 4096, pytest.param(65536, marks=pytest.mark.slow)]
STICKY = 0.1  # MinAtar's sticky-action probability


class PerEnvNull(batchenv.BatchEnv):
    """``NullEnv`` as per-env kernels."""

    state_dtype = NullEnv.state_dtype
    single_action_space = NullEnv.single_action_space
    single_observation_space = NullEnv.single_observation_space

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        s.nothing[i] = 0

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        return 0.0, False

    @staticmethod
    def observe_env(p, s, i, obs):  # type: ignore[no-untyped-def]
        obs[0] = 0.0


class _MinAtarShape(batchenv.BatchEnv):
    state_dtype = np.dtype([("last_action", np.int8)])
    single_action_space = spaces.Discrete(3)
    single_observation_space = spaces.Box(0, 1, (10, 10, 4), np.bool_)
    default_max_episode_steps = 10_000
    observe_fills_out = True  # both forms write every cell


class NumpyMinAtarFloor(_MinAtarShape):
    def __init__(self, n: int, **kw: Any) -> None:
        super().__init__(n, **kw)
        self.zeros, self.falses = np.zeros(n), np.zeros(n, dtype=bool)

    def reset_envs(self, s, rng):  # type: ignore[no-untyped-def]
        s.last_action[:] = 0

    def step_envs(self, s, action, rng):  # type: ignore[no-untyped-def]
        fresh = rng.random() >= STICKY
        np.copyto(s.last_action, action, casting="unsafe", where=fresh)
        return self.zeros, self.falses

    def observe(self, s, out):  # type: ignore[no-untyped-def]
        out.fill(False)


class PerEnvMinAtarFloor(_MinAtarShape):
    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        s.last_action[i] = 0

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        if batchenv.perenv.random(s, i) >= STICKY:
            s.last_action[i] = action
        return 0.0, False

    @staticmethod
    def observe_env(p, s, i, obs):  # type: ignore[no-untyped-def]
        words = batchenv.perenv.words(obs)  # cleared 8 cells at a time (50 words)
        for k in range(words.size):
            words[k] = 0


NULL = {"NullEnv": {}, "NullEnv, validate=False": {"validate": False},
        "NullEnv, copy=False": {"copy": False}}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("label", list(NULL))
def test_null_env(measure, label, n):
    env = NullEnv(n, **NULL[label])
    env.reset(seed=0)
    measure(measure.batch(env), group=f"floor n={n}", label=label, env_steps=n,
            vs=None if label == "NullEnv" else "NullEnv")


@pytest.mark.parametrize("n", SIZES)
def test_null_env_per_env(measure, n):
    pytest.importorskip("numba")
    env = PerEnvNull(n)
    env.reset(seed=0)
    measure(measure.batch(env), group=f"floor n={n}", label="NullEnv as per-env kernels",
            env_steps=n, vs="NullEnv")


@pytest.mark.parametrize("n", SIZES[1:])
@pytest.mark.parametrize("form", ["numpy", "per-env"])
def test_minatar_shaped_floor(measure, form, n):
    if form == "per-env":
        pytest.importorskip("numba")
    env = (NumpyMinAtarFloor if form == "numpy" else PerEnvMinAtarFloor)(n)
    env.reset(seed=0)
    measure(measure.batch(env), group=f"MinAtar-shaped floor n={n}", label=f"{form} kernels",
            env_steps=n, vs="numpy kernels" if form == "per-env" else None)


@pytest.mark.parametrize("debug", [False, True], ids=["default", "debug"])
def test_batchpong_debug(measure, debug):
    n = 4096
    env = batchenv.BatchPong(n, debug=debug)
    env.reset(seed=0)
    measure(measure.batch(env), group=f"BatchPong debug n={n}",
            label="BatchPong, debug=True" if debug else "BatchPong", env_steps=n,
            vs="BatchPong" if debug else None)
