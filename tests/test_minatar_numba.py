"""The private numba layer of the MinAtar games not yet on per-env kernels
(``batchenv/envs/minatar/_numba``: Seaquest; the others are in
``tests/test_minatar_perenv.py``) against their numpy kernels: the same observations,
rewards, flags, infos and whole state (random streams included) at every step, in every
auto-reset mode.
Parity of both layers with the ``minatar`` package itself is in
``tests/test_minatar_parity.py`` and the games' own parity files."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

pytest.importorskip("numba")

from batchenv import perenv  # noqa: E402
from batchenv.envs.minatar import (  # noqa: E402
    BatchAsterix,
    BatchBreakout,
    BatchFreeway,
    BatchSeaquest,
    BatchSpaceInvaders,
)

ALL_GAMES = [BatchAsterix, BatchBreakout, BatchFreeway, BatchSeaquest, BatchSpaceInvaders]
GAMES = [cls for cls in ALL_GAMES
         if cls.numba_module is not None and not perenv.has_per_env_kernels(cls)]
MODES = ["NextStep", "SameStep", "Disabled"]
#: GAMES, with Seaquest's long runs marked slow (its numpy kernels take ~10 ms a step here:
#: these runs were the suite's longest); CI runs them in its ``-m slow`` pass, and Seaquest's
#: masked and injected-state run stays in the default suite.
GAMES_SEAQUEST_SLOW = [pytest.param(cls, marks=pytest.mark.slow)
                       if cls.__name__ == "BatchSeaquest" else cls for cls in GAMES]


def assert_same_step(ra, rb, what):
    for name, x, y in zip(("obs", "reward", "terminated", "truncated"), ra[:4], rb[:4]):
        assert x.dtype == y.dtype, (what, name)
        np.testing.assert_array_equal(x, y, err_msg=f"{what}: {name}")
    assert ra[4].keys() == rb[4].keys(), what
    if "final_obs" in ra[4]:
        np.testing.assert_array_equal(ra[4]["_final_obs"], rb[4]["_final_obs"], err_msg=what)
        for i in ra[4]["_final_obs"].nonzero()[0]:
            np.testing.assert_array_equal(ra[4]["final_obs"][i], rb[4]["final_obs"][i],
                                          err_msg=f"{what}: final_obs of env {i}")


def assert_same_state(a, b, what):
    sa, sb = a.get_state(), b.get_state()
    for name in sa.dtype.names:
        np.testing.assert_array_equal(sa[name], sb[name], err_msg=f"{what}: state {name}")


def pair(cls, n=96, **kwargs):
    a, b = cls(n, kernels="numpy", **kwargs), cls(n, kernels="numba", **kwargs)
    assert (a.kernels, b.kernels) == ("numpy", "numba")
    return a, b


def run_pair(a, b, steps, seed, policy=None):
    rng = np.random.default_rng(seed)
    oa, _ = a.reset(seed=seed)
    ob, _ = b.reset(seed=seed)
    np.testing.assert_array_equal(oa, ob)
    n = a.num_envs
    for t in range(steps):
        act = rng.integers(0, a.single_action_space.n, n) if policy is None else policy(t, rng)
        ra, rb = a.step(act), b.step(act)
        assert_same_step(ra, rb, f"step {t}")
        if t % 50 == 0 or ra[2].any():
            assert_same_state(a, b, f"step {t}")
    assert_same_state(a, b, "end")
    return a


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cls", GAMES_SEAQUEST_SLOW)
def test_numba_equals_numpy_in_every_autoreset_mode(cls, mode):
    a, b = pair(cls, autoreset_mode=mode)
    run_pair(a, b, 1500, seed=7)


@pytest.mark.parametrize("sticky", [0.0, 1.0, 0.37])
@pytest.mark.parametrize("cls", GAMES_SEAQUEST_SLOW)
def test_numba_equals_numpy_sticky_and_action_sets(cls, sticky):
    a, b = pair(cls, sticky_action_prob=sticky, minimal_action_set=sticky == 0.37)
    run_pair(a, b, 800, seed=11)


@pytest.mark.parametrize("cls", GAMES_SEAQUEST_SLOW)
def test_numba_equals_numpy_without_ramping_and_with_time_limit(cls):
    a, b = pair(cls, difficulty_ramping=False, max_episode_steps=150)
    run_pair(a, b, 800, seed=3)


@pytest.mark.parametrize("cls", GAMES)
def test_numba_equals_numpy_under_masks_and_injected_states(cls):
    """Partial resets by mask, and a state taken from the numpy env mid-game and given to
    both (set_state with a mask), then stepping on."""
    a, b = pair(cls, n=64)
    run_pair(a, b, 300, seed=5)
    rng = np.random.default_rng(2)
    for k in range(20):
        mask = rng.random(64) < 0.3
        oa, _ = a.reset(options={"reset_mask": mask})
        ob, _ = b.reset(options={"reset_mask": mask})
        np.testing.assert_array_equal(oa, ob)
        states = a.get_state()
        a.set_state(states, mask=~mask)
        b.set_state(states, mask=~mask)
        for t in range(40):
            act = rng.integers(0, a.single_action_space.n, 64)
            assert_same_step(a.step(act), b.step(act), f"round {k}, step {t}")
        assert_same_state(a, b, f"round {k}")


@pytest.mark.parametrize("cls", GAMES)
def test_numba_env_survives_pickle_and_deepcopy(cls):
    env = cls(16, kernels="numba")
    env.reset(seed=1)
    for copy_of in (lambda e: pickle.loads(pickle.dumps(e)), copy.deepcopy):
        twin = copy_of(env)
        assert twin.kernels == "numba"
        assert twin.step_envs.__self__ is twin and twin.observe.__self__ is twin
        act = np.arange(16) % env.single_action_space.n
        assert_same_step(env.step(act), twin.step(act), "after copy")
        assert_same_state(env, twin, "after copy")


@pytest.mark.parametrize("cls", GAMES)
def test_numba_env_under_debug_checks(cls):
    import importlib

    a, b = pair(cls, n=32, debug=True)
    layer = importlib.import_module(cls.numba_module)
    for name in ("step_envs", "observe"):  # the checks wrap the numba loops, not numpy's
        assert getattr(b, name).__wrapped__.__func__ is getattr(layer, name)
        assert getattr(a, name).__wrapped__.__func__ is getattr(cls, name)
    run_pair(a, b, 200, seed=9)
    twin = pickle.loads(pickle.dumps(b))
    assert twin.step_envs.__wrapped__.__func__ is layer.step_envs


@pytest.mark.parametrize("cls", GAMES)
def test_numba_observe_writes_every_cell_of_any_buffer(cls):
    """observe on a subset of rows, into a buffer full of True and one that starts one byte
    off an 8-byte boundary, equals the numpy kernels' observation."""
    a, b = pair(cls, n=24)
    run_pair(a, b, 120, seed=4)
    rows = np.array([3, 7, 8, 20])
    from batchenv.state import take_rows

    expected = np.zeros((4, *a.single_observation_space.shape), dtype=bool)
    a.observe(take_rows(a.state, rows), expected)
    dirty = np.ones_like(expected)
    b.observe(take_rows(b.state, rows), dirty)
    np.testing.assert_array_equal(dirty, expected)
    raw = np.ones(expected.size + 1, dtype=bool)
    offset = raw[1:].reshape(expected.shape)
    b.observe(take_rows(b.state, rows), offset)
    np.testing.assert_array_equal(offset, expected)


def test_jit_borrowing_falls_back_to_plain_jit_when_numba_refuses_the_option(monkeypatch):
    import batchenv.envs.minatar._numba as layer

    def refusing_njit(*args, **kwargs):
        if "_nrt" in kwargs:
            raise KeyError("_nrt")
        return layer.njit(*args, **kwargs)

    assert layer._jit_without_refcounts() is not layer.jit  # this numba accepts it
    monkeypatch.setattr(layer, "njit", refusing_njit)
    assert layer._jit_without_refcounts() is layer.jit
