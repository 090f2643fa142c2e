"""BatchPong, the one game kept in both forms (numpy kernels and per-env kernels), beside
PlainPong (the same rules in plain Python, one game), ALE's Pong (``ale-py``, one env) and
PufferLib 3.0's C Ocean Pong (where built).

    python -m pytest benchmarks/test_bench_pong.py --benchmark-only

Groups ``Pong state n=N``: the state observation (6 floats) at N envs; ``Pong tiles`` and
``Pong pixels`` at 4096 envs, with and without ``copy``. PlainPong and ALE step one game per
call, so their time per env-step is that of one game whatever N. ALE's defaults emulate 4
frames of 210x160 RGB per step with sticky actions; its "1 frame, grey" case (frameskip 1,
grayscale, no sticky actions) is the nearest to BatchPong's pixel observation (one physics
step, one 84x84 grey frame). PufferLib's Pong has other rules (a 500x640 court, 8 floats,
21 points): it is a peer in speed, not in results.
"""

from __future__ import annotations

import numpy as np
import pytest

from batchenv import BatchPong
from batchenv.reference import PlainPong

LONG = pytest.param(65536, marks=pytest.mark.slow)
STATE_SIZES = [1, 16, 256, 4096, LONG]
FORMS = {"numpy": "BatchPong numpy", "numba": "BatchPong per-env"}


def batch_pong(n: int, **kwargs) -> BatchPong:
    if kwargs.get("kernels") == "numba":
        pytest.importorskip("numba")
    env = BatchPong(n, **kwargs)
    env.reset(seed=0)
    return env


@pytest.mark.parametrize("n", STATE_SIZES)
@pytest.mark.parametrize("kernels", ["numpy", "numba"])
def test_batchpong_state(measure, n, kernels):
    env = batch_pong(n, kernels=kernels)
    measure(measure.batch(env), group=f"Pong state n={n}",
            label=FORMS[kernels], env_steps=n, vs="BatchPong numpy" if kernels == "numba" else None)


@pytest.mark.parametrize("n", [LONG])
def test_batchpong_state_two_threads(measure, n):
    env = batch_pong(n, kernels="numba", num_threads=2)
    measure(measure.batch(env), group=f"Pong state n={n}",
            label="BatchPong per-env, 2 threads", env_steps=n, vs="BatchPong per-env")


@pytest.mark.parametrize("n", STATE_SIZES)
def test_plainpong(measure, n):
    game = PlainPong(seed=0)
    measure(measure.cycling(game.step, np.random.default_rng(0).integers(0, 3, 4096).tolist()),
            group=f"Pong state n={n}", label="PlainPong (plain Python)", env_steps=1,
            peer=True, num_envs=n)


@pytest.mark.parametrize("n", STATE_SIZES)
def test_pufferlib_pong(measure, n):
    ocean = pytest.importorskip("pufferlib.ocean.pong.pong",
                                reason="PufferLib's C build: shared/anchors/pufferlib/build.sh")
    env = ocean.Pong(num_envs=n, log_interval=10**15)  # its log never runs while timed
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 3, n) for _ in range(16)]
    measure(measure.cycling(env.step, actions), group=f"Pong state n={n}",
            label="PufferLib Ocean Pong (C)", env_steps=n, peer=True)
    env.close()


@pytest.mark.parametrize("copy", [True, False], ids=["copy", "no-copy"])
@pytest.mark.parametrize("kernels", ["numpy", "numba"])
@pytest.mark.parametrize("obs_type", ["tiles", "pixels"])
def test_batchpong_images(measure, obs_type, kernels, copy):
    n = 4096
    env = batch_pong(n, kernels=kernels, obs_type=obs_type, copy=copy)
    suffix = "" if copy else ", copy=False"
    measure(measure.batch(env), group=f"Pong {obs_type} n={n}", label=FORMS[kernels] + suffix,
            env_steps=n, vs=f"BatchPong numpy{suffix}" if kernels == "numba" else None)


ALE = {"ALE Pong-v5 (defaults)": {},
       "ALE Pong-v5 (1 frame, grey, no sticky)": dict(
           frameskip=1, obs_type="grayscale", repeat_action_probability=0.0)}


@pytest.mark.parametrize("label", list(ALE))
def test_ale_pong(measure, label):
    ale_py = pytest.importorskip("ale_py", reason="the bench extra: pip install 'batchenv[bench]'")
    import gymnasium as gym

    gym.register_envs(ale_py)
    env = gym.make("ALE/Pong-v5", **ALE[label])
    actions = np.random.default_rng(0).integers(0, env.action_space.n, 4096).tolist()
    measure(measure.loop(env, actions), group="Pong pixels n=4096", label=label,
            env_steps=1, peer=True, num_envs=4096)
    env.close()
