"""docs/examples' Asteroids, three ways over one state schema: the per-env kernels (compiled,
and as a Python loop) equal the numpy kernels step by step in every auto-reset mode, with
states injected; both equal the plain-Python scalar reference from injected states;
check_env and debug mode on the per-env form."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import batchenv
from batchenv.debug import KernelError
from batchenv.testing import check_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "examples"))
from asteroids_numpy import NumpyAsteroids  # noqa: E402
from asteroids_perenv import (  # noqa: E402
    BULLET_LIFE,
    N_DIRS,
    ROCK_VX,
    ROCK_VY,
    WORLD,
    Asteroids,
    K,
)
from asteroids_reference import AsteroidsGame  # noqa: E402

MODES = ("NextStep", "SameStep", "Disabled")
# a small batch for the Python loop, a larger one compiled
SIZES = {"numba": (48, 120), "python": (6, 60)}
BASE_COLUMNS = ("elapsed_steps", "awaiting_reset")    # the base class's, not the rules'


def crafted_states(env: batchenv.BatchEnv, seed: int = 0) -> np.ndarray:
    """Records that reach the rules' corners in a step or two, on top of started games:
    bullets inside rocks of every size (with and without a free slot for the second piece),
    two bullets in one rock, a ship about to crash, everything at the torus' seams."""
    env.reset(seed=seed)
    states = env.get_state()
    n = len(states)
    for i in range(n):
        r = states[i]
        case = i % 6
        r["heading"] = i % N_DIRS
        if case == 0:        # a bullet inside a big rock, every rock slot full: no 2nd piece
            r["rock_size"][:] = 3
            r["rock_x"][:] = (np.arange(K) * 4.0 + 0.5) % WORLD
            r["rock_y"][:] = 3.0
            r["rock_vx"][:], r["rock_vy"][:] = ROCK_VX[3, 3], ROCK_VY[3, 3]
            r["bullet_life"][0] = 5
            r["bullet_x"][0], r["bullet_y"][0] = r["rock_x"][2], 3.5
            r["bullet_vx"][0] = r["bullet_vy"][0] = 0.0
        elif case == 1:      # two bullets in one medium rock, across the x seam
            r["rock_size"][:] = 0
            r["rock_size"][1] = 2
            r["rock_x"][1], r["rock_y"][1] = WORLD - 0.1, 20.0
            r["rock_vx"][1], r["rock_vy"][1] = 0.2, 0.0
            r["bullet_life"][1:3] = BULLET_LIFE
            r["bullet_x"][1:3], r["bullet_y"][1:3] = 0.5, 20.0
            r["bullet_vx"][1:3] = r["bullet_vy"][1:3] = 0.0
        elif case == 2:      # the last rock, small, under a bullet: cleared
            r["rock_size"][:] = 0
            r["rock_size"][4] = 1
            r["rock_x"][4], r["rock_y"][4] = 7.0, 7.0
            r["bullet_life"][3] = 2                   # still flying after its move
            r["bullet_x"][3], r["bullet_y"][3] = 7.0, 7.0
            r["bullet_vx"][3] = r["bullet_vy"][3] = 0.0
        elif case == 3:      # a rock on the ship: a crash
            r["rock_size"][0] = 2
            r["rock_x"][0], r["rock_y"][0] = r["ship_x"] + 1.0, r["ship_y"]
        elif case == 4:      # the ship at the y seam, fast, the gun ready
            r["ship_y"], r["ship_vy"], r["ship_vx"] = 0.01, -0.5, 0.5
            r["cooldown"] = 0
        # case 5: a started game as it is
    return states


def assert_same_obs(a: np.ndarray, b: np.ndarray, context: str) -> None:
    assert np.array_equal(a, b), f"{context}: obs differ at envs {np.nonzero((a != b).any(1))[0]}"


def assert_same_step(a, b, context: str) -> None:
    for name, x, y in zip(("obs", "reward", "terminated", "truncated"), a[:4], b[:4]):
        assert np.array_equal(x, y), f"{context}: {name} differ at envs {np.nonzero(x != y)[0]}"
    info_a, info_b = a[4], b[4]
    assert info_a.keys() == info_b.keys(), context
    if "final_obs" in info_a:
        assert np.array_equal(info_a["_final_obs"], info_b["_final_obs"]), context
        for i in np.nonzero(info_a["_final_obs"])[0]:
            assert np.array_equal(info_a["final_obs"][i], info_b["final_obs"][i]), context


def assert_same_state(env_a, env_b, context: str) -> None:
    sa, sb = env_a.get_state(), env_b.get_state()
    for name in sa.dtype.names:
        bad = np.nonzero(sa[name] != sb[name])[0] if sa[name].ndim == 1 else \
            np.nonzero((sa[name] != sb[name]).any(axis=tuple(range(1, sa[name].ndim))))[0]
        assert not bad.size, f"{context}: field {name} differs at envs {bad}"


@pytest.mark.parametrize("mode", MODES)
# (the Python form: the `slow` pass, tests/conftest.py's PYTHON_FORM_IN_README)
@pytest.mark.parametrize("kernels", ["numba", "python"])
def test_per_env_equals_numpy_kernels(kernels, mode):
    n, steps = SIZES[kernels]
    per_env = Asteroids(n, kernels=kernels, autoreset_mode=mode, max_episode_steps=40)
    numpy_form = NumpyAsteroids(n, autoreset_mode=mode, max_episode_steps=40)
    assert (per_env.kernels, numpy_form.kernels) == (kernels, "numpy")
    assert_same_obs(per_env.reset(seed=7)[0], numpy_form.reset(seed=7)[0], "reset")
    rng = np.random.default_rng(1)
    injected = crafted_states(Asteroids(n, kernels=kernels), seed=11)
    hits = ends = 0
    for t in range(steps):
        if t in (10, steps // 2):                        # the same corners, injected in both
            assert_same_obs(per_env.set_state(injected), numpy_form.set_state(injected),
                            f"set_state at {t}")
        actions = rng.integers(0, 5, n)
        a, b = per_env.step(actions), numpy_form.step(actions)
        assert_same_step(a, b, f"step {t}")
        assert_same_state(per_env, numpy_form, f"step {t}")
        hits += int((a[1] > 0).sum())
        done = a[2] | a[3]
        ends += int(done.sum())
        if mode == "Disabled" and done.any():
            mask = done.copy()
            assert_same_obs(per_env.reset(options={"reset_mask": mask})[0],
                            numpy_form.reset(options={"reset_mask": mask})[0],
                            f"masked reset at {t}")
    assert hits > 0 and ends > 0, (hits, ends)             # the run reached hits and resets


@pytest.mark.parametrize("form", ["per_env", "numpy"])
def test_both_forms_equal_the_scalar_reference(form):
    n, steps = 12, 40
    env = (Asteroids(n, autoreset_mode="Disabled", max_episode_steps=None) if form == "per_env"
           else NumpyAsteroids(n, autoreset_mode="Disabled", max_episode_steps=None))
    game = AsteroidsGame(0, 0)
    rng = np.random.default_rng(2)
    env.set_state(crafted_states(env, seed=3))
    splits = crashes = 0
    for t in range(steps):
        before = env.get_state()
        actions = rng.integers(0, 5, n)
        obs, reward, terminated, _, _ = env.step(actions)
        after = env.get_state()
        for i in range(n):
            game.load(before[i])
            r, term = game.step(int(actions[i]))
            expected = before[i].copy()
            game.dump(expected)
            for name in after.dtype.names:
                if name not in BASE_COLUMNS:
                    assert np.array_equal(expected[name], after[i][name]), (t, i, name)
            assert (r, term) == (reward[i], terminated[i]), (t, i)
            assert np.array_equal(np.asarray(game.observation(), np.float32), obs[i]), (t, i)
            splits += int((after[i]["rock_size"] > 0).sum() > (before[i]["rock_size"] > 0).sum())
            crashes += int(r < 0)
        if terminated.any():
            starts = env.get_state()
            env.reset(options={"reset_mask": terminated.copy()})
            for i in np.nonzero(terminated)[0]:           # the reference's start states too
                game.load(starts[i])
                game.reset()
                expected = starts[i].copy()
                game.dump(expected)
                got = env.get_state()[i]
                for name in got.dtype.names:
                    if name not in BASE_COLUMNS:
                        assert np.array_equal(expected[name], got[name]), ("reset", t, i, name)
    assert splits > 0 and crashes > 0, (splits, crashes)


@pytest.mark.slow  # (the Python form: tests/conftest.py, PYTHON_FORM_IN_README)
def test_check_env_passes_on_the_per_env_functions():
    """The contract on the per-env functions as a Python loop."""
    check_env(lambda n: Asteroids(n, kernels="python"), num_envs=4, steps=24)


@pytest.mark.slow  # (the checked loop, another compile)
def test_check_env_passes_on_the_compiled_form():
    check_env(Asteroids)


@pytest.mark.slow  # compiles the checked loop; tests/test_perenv*.py hold debug mode's
def test_debug_mode_runs_the_per_env_form():  # per-env form on small envs in the fast pass
    env = Asteroids(8, debug=True, max_episode_steps=30)
    plain = Asteroids(8, max_episode_steps=30)
    env.reset(seed=4)
    plain.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(40):
        actions = rng.integers(0, 5, 8)
        assert_same_step(env.step(actions), plain.step(actions), "debug")


class _OffTheBoard(Asteroids):
    """A per-env mistake debug mode can see: a value outside the observation space."""

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[:] = 0.0
        obs[0] = 2 * WORLD


def test_debug_mode_names_a_per_env_kernels_mistake():
    with pytest.raises(KernelError, match="outside"):
        _OffTheBoard(4, debug=True, kernels="python").reset(seed=0)
