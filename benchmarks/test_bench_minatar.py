"""The MinAtar games beside MinAtar 1.0.15's own loop (``minatar.Environment``, one env).

    python -m pytest benchmarks/test_bench_minatar.py --benchmark-only

Groups ``MinAtar <game> n=N``: ``BatchX(N)`` with its defaults (per-env kernels compiled by
numba, one thread, sticky actions 0.1, NEXT_STEP auto-reset, actions checked, observations
copied) against MinAtar's loop: ``act(a)`` then ``state()`` per step, ``reset()`` at an
episode's end (sticky actions 0.1), one game per call. At 65536 envs (``slow``) also two
threads against one.
"""

from __future__ import annotations

import numpy as np
import pytest

GAMES = {"asterix": "BatchAsterix", "breakout": "BatchBreakout", "freeway": "BatchFreeway",
         "seaquest": "BatchSeaquest", "space_invaders": "BatchSpaceInvaders"}
SIZES = [256, 4096, pytest.param(65536, marks=pytest.mark.slow)]


def ours(measure, game: str, n: int, **kwargs) -> None:
    pytest.importorskip("numba")
    import batchenv.envs.minatar as minatar_envs

    env = getattr(minatar_envs, GAMES[game])(n, **kwargs)
    env.reset(seed=0)
    threads = kwargs.get("num_threads", 1)
    measure(measure.batch(env), group=f"MinAtar {game} n={n}",
            label="batchenv" if threads == 1 else f"batchenv, {threads} threads",
            env_steps=n, vs=None if threads == 1 else "batchenv")
    env.close()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("game", list(GAMES))
def test_batchenv(measure, game, n):
    ours(measure, game, n)


@pytest.mark.parametrize("n", [pytest.param(65536, marks=pytest.mark.slow)])
@pytest.mark.parametrize("game", list(GAMES))
def test_batchenv_two_threads(measure, game, n):
    ours(measure, game, n, num_threads=2)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("game", list(GAMES))
def test_minatar(measure, game, n):
    minatar = pytest.importorskip("minatar", reason="the test extra: MinAtar 1.0.15")
    env = minatar.Environment(game)
    env.seed(0)
    env.reset()
    actions = np.random.default_rng(0).integers(0, 6, 4096).tolist()
    act, state, reset = env.act, env.state, env.reset
    position = [0]

    def call() -> None:
        t = position[0]
        position[0] = t + 1
        _, done = act(actions[t & 4095])
        state()
        if done:
            reset()

    measure(call, group=f"MinAtar {game} n={n}", label="MinAtar 1.0.15 (one env)",
            env_steps=1, peer=True, num_envs=n)
