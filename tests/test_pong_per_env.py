"""BatchPong's per-env kernels (batchenv/envs/pong/per_env.py) against its numpy kernels,
step by step, bit for bit: observations, rewards, flags, SAME_STEP's final observations and
the whole state (random counters included), in every auto-reset mode, mode, observation
type, frameskip and with sticky actions; compiled and as a Python loop; threads.

numba compiles one loop per argument types (action: a number or a pair; observation: a
float vector, an image, an image with a channel axis), not per option: the fast tests cover
every type once, with the options that change branches (modes, frameskip, sticky actions,
short games and time limits) varied inside; the other combinations are ``slow``."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from batchenv import BatchPong, perenv

pytestmark = pytest.mark.skipif(not perenv.numba_available(), reason="needs numba")

# short games and time limits: every step path (points, game ends, truncations, resets)
# happens within a few dozen steps
SHORT = dict(points_to_win=2, max_episode_steps=45)


def compare(kernels: str, autoreset: AutoresetMode, n: int = 24, steps: int = 90, seed: int = 5,
            **options) -> BatchPong:
    """Steps ``BatchPong(kernels=kernels)`` beside ``kernels="numpy"`` with the same
    actions and masked resets; asserts every output and the state equal at every step."""
    ours = BatchPong(n, kernels=kernels, autoreset_mode=autoreset, **SHORT, **options)
    ref = BatchPong(n, kernels="numpy", autoreset_mode=autoreset, **SHORT, **options)
    assert ours.kernels == kernels and ref.kernels == "numpy"
    rng = np.random.default_rng(seed)
    o1, _ = ours.reset(seed=seed)
    o2, _ = ref.reset(seed=seed)
    np.testing.assert_array_equal(o1, o2)
    finals = 0
    for t in range(steps):
        if t % 29 == 17:  # a masked reset leaves the others mid-game
            mask = rng.random(n) < 0.3
            o1, _ = ours.reset(options={"reset_mask": mask})
            o2, _ = ref.reset(options={"reset_mask": mask})
            np.testing.assert_array_equal(o1, o2, err_msg=f"masked reset at step {t}")
        action = rng.integers(0, 3, ref.action_space.shape)
        got, want = ours.step(action), ref.step(action)
        for name, x, y in zip(("obs", "reward", "terminated", "truncated"), got, want):
            assert x.dtype == y.dtype and x.shape == y.shape, name
            np.testing.assert_array_equal(x, y, err_msg=f"{name} at step {t}")
        assert got[4].keys() == want[4].keys()
        if "final_obs" in want[4]:
            np.testing.assert_array_equal(got[4]["_final_obs"], want[4]["_final_obs"])
            for e in np.flatnonzero(want[4]["_final_obs"]):
                np.testing.assert_array_equal(got[4]["final_obs"][e], want[4]["final_obs"][e])
                finals += 1
        np.testing.assert_array_equal(ours.get_state(), ref.get_state(),
                                      err_msg=f"state at step {t}")
    if autoreset is AutoresetMode.SAME_STEP and steps >= 60:
        assert finals, "no episode ended: the test did not reach the reset paths"
    return ours


MODES = list(AutoresetMode)
# one per compiled type, with branch-changing options inside
FAST = {
    "cpu-state-sticky-frameskip": dict(repeat_action_probability=0.25, frameskip=2),
    "two_player-pixels-first": dict(mode="two_player", obs_type="pixels",
                                     channel_axis="first", repeat_action_probability=0.1),
}
SLOW = {
    "cpu-state": dict(),
    "cpu-tiles": dict(obs_type="tiles"),
    "cpu-pixels": dict(obs_type="pixels", frameskip=3),
    "cpu-pixels-last": dict(obs_type="pixels", channel_axis="last"),
    "two_player-state": dict(mode="two_player", repeat_action_probability=0.3, frameskip=3),
    "rally-tiles": dict(mode="rally", frameskip=2),
    "rally-state-sticky": dict(mode="rally", obs_type="state", repeat_action_probability=0.2),
    "rally-pixels-small": dict(mode="rally", obs_type="pixels", pixel_shape=(48, 64)),
}


@pytest.mark.parametrize("autoreset", MODES, ids=[m.name for m in MODES])
@pytest.mark.parametrize("config", list(FAST))
def test_numba_equals_numpy_kernels(config, autoreset):
    compare("numba", autoreset, **FAST[config])


@pytest.mark.slow  # the other option/type combinations; the fast test covers each type
@pytest.mark.parametrize("autoreset", MODES, ids=[m.name for m in MODES])
@pytest.mark.parametrize("config", list(SLOW))
def test_numba_equals_numpy_kernels_everywhere(config, autoreset):
    compare("numba", autoreset, steps=150, **SLOW[config])


@pytest.mark.parametrize("config", [dict(repeat_action_probability=0.25),
                                    dict(mode="rally", frameskip=2)])
def test_python_loop_equals_numpy_kernels(config):
    """The same per-env functions as a plain Python loop (small batch, few steps)."""
    compare("python", AutoresetMode.NEXT_STEP, n=5, steps=40, **config)


@pytest.mark.parametrize("options", [dict(), pytest.param(dict(mode="two_player", obs_type="tiles"),
                                                         marks=pytest.mark.slow)])
def test_two_threads_equal_one(options):
    one = BatchPong(301, num_threads=1, kernels="numba", **SHORT, **options)
    two = BatchPong(301, num_threads=2, kernels="numba", **SHORT, **options)
    rng = np.random.default_rng(0)
    for env in (one, two):
        env.reset(seed=9)
    for _ in range(60):
        action = rng.integers(0, 3, one.action_space.shape)
        for x, y in zip(one.step(action)[:4], two.step(action)[:4]):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(one.get_state(), two.get_state())


def test_auto_keeps_the_numpy_kernels():
    """``kernels="auto"`` runs the numpy kernels (the per-env loops compile in every new
    process: docs/pong.md, "Kernels"); ``kernels="numba"`` asks for the per-env form."""
    assert BatchPong(4).kernels == "numpy"
    assert BatchPong(4, obs_type="pixels").kernels == "numpy"
    assert BatchPong(4, kernels="numba").kernels == "numba"


def test_copy_false_canvas_stays_read_only():
    # (the types of FAST's two_player pixels: no other compile)
    env = BatchPong(3, copy=False, kernels="numba", **FAST["two_player-pixels-first"])
    obs, _ = env.reset(seed=0)
    obs2 = env.step(np.zeros((3, 2), dtype=np.int64))[0]
    assert obs2 is obs and not obs.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        obs[0, 0, 0] = 1
