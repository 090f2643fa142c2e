"""The MinAtar games' rules, written once as per-env kernels, run two ways: compiled by numba
into one loop over the batch, and as a Python loop (what runs without numba). Both give the
same observations, rewards, flags, infos and whole state (random streams included) at every
step, in every auto-reset mode, under reset masks and injected states; the compiled loop
gives the same on one thread and on two, in copies and pickles, and under debug mode's
checks; the observation writes every cell of any buffer; ``kernels=`` chooses, and without
numba the games run their kernels as Python. Parity of the rules with the ``minatar``
package itself: ``tests/test_minatar_parity.py`` and the games' own parity files (each
runs both ways too: the ``kernels`` fixture)."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

from batchenv import forms  # noqa: E402
from batchenv.envs.minatar import (  # noqa: E402
    BatchAsterix,
    BatchBreakout,
    BatchFreeway,
    BatchSeaquest,
    BatchSpaceInvaders,
)
from batchenv.state import take_rows  # noqa: E402

GAMES = [BatchAsterix, BatchBreakout, BatchFreeway, BatchSeaquest, BatchSpaceInvaders]
#: GAMES with every game but Breakout `slow`: the tests that compile each game a second
#: time (its Python form's rules, or its checked loop) run on Breakout in README's command,
#: on every game in the `slow` pass (CI; tests/conftest.py, PYTHON_FORM_IN_README).
BREAKOUT_FAST = [pytest.param(c, marks=[] if c is BatchBreakout else [pytest.mark.slow])
                 for c in GAMES]
MODES = ["NextStep", "SameStep", "Disabled"]
#: The batch size of the compiled runs. Not a multiple of 16: Seaquest's slot views (its
#: ``kernel_views``) are strided at every batch size but multiples of 16 (where a padded
#: block's rows happen to be contiguous: batchenv/state.py), and numba compiles the loop
#: again for each layout; the sizes here (60, 30, 15, 24, 6) share the contract's (8).
N = 60


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


def run_pair(a, b, steps, seed, every=50):
    rng = np.random.default_rng(seed)
    oa, _ = a.reset(seed=seed)
    ob, _ = b.reset(seed=seed)
    np.testing.assert_array_equal(oa, ob)
    for t in range(steps):
        act = rng.integers(0, a.single_action_space.n, a.num_envs)
        ra, rb = a.step(act), b.step(act)
        assert_same_step(ra, rb, f"step {t}")
        if t % every == 0 or ra[2].any() or ra[3].any():
            assert_same_state(a, b, f"step {t}")
    assert_same_state(a, b, "end")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cls", BREAKOUT_FAST)
def test_python_loop_equals_compiled_loop_in_every_autoreset_mode(cls, mode):
    """A small batch with a time limit, so that every mode's resets happen; then partial
    resets by mask, and a state taken mid-game given to both (set_state with a mask)."""
    n = 6
    a = cls(n, kernels="numba", autoreset_mode=mode, max_episode_steps=40)
    b = cls(n, kernels="python", autoreset_mode=mode, max_episode_steps=40)
    assert (a.kernels, b.kernels) == ("numba", "python")
    run_pair(a, b, 100, seed=8, every=1)
    rng = np.random.default_rng(2)
    for k in range(4):
        mask = rng.random(n) < 0.4
        oa, _ = a.reset(options={"reset_mask": mask})
        ob, _ = b.reset(options={"reset_mask": mask})
        np.testing.assert_array_equal(oa, ob)
        states = a.get_state()
        a.set_state(states, mask=~mask)
        b.set_state(states, mask=~mask)
        for t in range(15):
            act = rng.integers(0, a.single_action_space.n, n)
            assert_same_step(a.step(act), b.step(act), f"round {k}, step {t}")
        assert_same_state(a, b, f"round {k}")


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
@pytest.mark.parametrize("cls", GAMES)
def test_two_threads_equal_one_bit_for_bit(cls, mode):
    one = cls(N, autoreset_mode=mode, max_episode_steps=120)
    two = cls(N, autoreset_mode=mode, max_episode_steps=120, num_threads=2)
    assert (one.num_threads, two.num_threads) == (1, 2)
    run_pair(one, two, 200, seed=12)


@pytest.mark.parametrize("cls", GAMES)
def test_copies_and_pickles_step_alike(cls):
    env = cls(15)
    env.reset(seed=1)
    act = np.arange(15) % env.single_action_space.n
    for copy_of in (lambda e: pickle.loads(pickle.dumps(e)), copy.deepcopy):
        twin = copy_of(env)
        assert twin.kernels == "numba" and twin.kernel_form.kind == "numba"
        assert_same_step(env.step(act), twin.step(act), "after copy")
        assert_same_state(env, twin, "after copy")


@pytest.mark.parametrize("cls", BREAKOUT_FAST)
def test_debug_mode_steps_alike(cls):
    """The loops under the kernel checks, which must neither raise nor change a thing."""
    run_pair(cls(30), cls(30, debug=True), 100, seed=9)


@pytest.mark.parametrize("cls", GAMES)
def test_observe_env_writes_every_cell_of_any_buffer(cls):
    """observe on a subset of rows, into a buffer full of False, one full of True and one
    that starts one byte off an 8-byte boundary: all three alike (a cell left unwritten
    would keep its buffer's value), and equal to what step returned for those rows."""
    env = cls(24, copy=True)
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(120):
        obs, *_ = env.step(rng.integers(0, env.single_action_space.n, 24))
    rows = np.array([3, 7, 8, 20])
    clean = np.zeros((4, *env.single_observation_space.shape), dtype=bool)
    env.kernel_form.observe(env, take_rows(env.state, rows), clean)
    np.testing.assert_array_equal(clean, obs[rows])
    dirty = np.ones_like(clean)
    env.kernel_form.observe(env, take_rows(env.state, rows), dirty)
    np.testing.assert_array_equal(dirty, clean)
    raw = np.ones(clean.size + 1, dtype=bool)
    offset = raw[1:].reshape(clean.shape)
    env.kernel_form.observe(env, take_rows(env.state, rows), offset)
    np.testing.assert_array_equal(offset, clean)


def test_kernels_argument():
    assert BatchBreakout(4).kernels == "numba"  # "auto", numba installed
    assert BatchBreakout(4, kernels="python").kernels == "python"
    assert BatchBreakout(4, num_threads=2).num_threads == 2
    with pytest.raises(ValueError, match=r"kernels='numpy': BatchBreakout has only per-env "
                                         r"kernels \(reset_env, step_env, observe_env\); use "
                                         r"'auto', 'numba' or 'python'"):
        BatchBreakout(4, kernels="numpy")
    with pytest.raises(ValueError, match="kernels must be one of"):
        BatchBreakout(4, kernels="cuda")
    with pytest.raises(ValueError, match="num_threads=2"):
        BatchBreakout(4, kernels="python", num_threads=2)


def test_without_numba_the_kernels_run_as_python_with_one_warning(monkeypatch):
    class Breakout(BatchBreakout):  # (a class of its own: the warning is once per class)
        pass

    monkeypatch.setattr(forms, "numba_available", lambda: False)
    with pytest.warns(UserWarning, match=r"Breakout: numba is not installed, so its per-env "
                                         r"kernels run as a Python loop"):
        env = Breakout(5)
    assert env.kernels == "python"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning for the same class
        again = Breakout(5)
    assert again.kernels == "python"
    with pytest.raises(ImportError, match=r"pip install 'batchenv\[fast\]'"):
        Breakout(5, kernels="numba")
    monkeypatch.undo()
    run_pair(BatchBreakout(5, kernels="numba"), env, 60, seed=3, every=1)
