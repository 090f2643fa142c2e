"""The BatchEnv contract (``batchenv.testing.check_env``, one implementation) on every native
env (``batchenv.list_envs()``), BatchPong's other observation types and modes, and the test
envs: one test per (env, check). What each check asserts: ``batchenv/testing/contract.py``."""

from __future__ import annotations

import numpy as np
import pytest

import batchenv
from batchenv.forms import has_per_env_kernels
from batchenv.registration import resolve
from batchenv.testing import CounterEnv, NullEnv, check_env, contract_checks

SUBJECTS = {
    **{env_id: env_id for env_id in batchenv.list_envs()},
    "Pong-pixels": lambda n: batchenv.BatchPong(n, obs_type="pixels", pixel_shape=(42, 42)),
    "Pong-pixels-channel-first": lambda n: batchenv.BatchPong(
        n, obs_type="pixels", pixel_shape=(42, 42), channel_axis="first"),
    "Pong-rally-frameskip-sticky": lambda n: batchenv.BatchPong(
        n, mode="rally", frameskip=2, repeat_action_probability=0.25),
    "Pong-two-player": lambda n: batchenv.BatchPong(n, mode="two_player"),
    "Counter": lambda n: CounterEnv(n, max_count=7),
    "Null": NullEnv,
}


def _other_registrations() -> set[str]:
    """Ids after the first of their class: MiniGrid's other sizes and MinAtar's -v1 (the
    minimal action set), the same kernels with other parameters. Their contract runs in the
    `slow` pass (CI runs it); the fast suite runs it on one id per class, and
    tests/test_minigrid.py, test_single.py and test_sharded.py step every id (and each
    MinAtar game's parity tests its minimal action set against ``minatar``)."""
    seen: set[type] = set()
    later = set()
    for env_id in batchenv.list_envs():
        resolved = resolve(env_id)
        cls = resolved.cls if resolved is not None else None
        if cls in seen:
            later.add(env_id)
        seen.add(cls)
    return later


def _checked_compiles() -> set[str]:
    """Shipped ids whose contract compiles a class's checked loop (check_env runs debug
    mode, whose per-env kernels are compiled with bounds checks: a compile per class), but
    for one MinAtar class. Their contract runs in the `slow` pass (CI runs it); README's
    command runs the checked loop on Breakout, on the per-env test envs
    (tests/test_perenv*.py, test_two_forms.py), and every shipped class's rules against its
    reference (parity, range refusals) compiled."""
    kept = {"batchenv/MinAtar-Breakout-v0"}
    return {env_id for env_id in batchenv.list_envs()
            if env_id not in kept and has_per_env_kernels(resolve(env_id).cls)}


OTHER_REGISTRATIONS = _other_registrations()
SLOW = OTHER_REGISTRATIONS | _checked_compiles()
CASES = [pytest.param(check, id=f"{name}-{check}",
                      marks=[pytest.mark.slow] if name in SLOW else [])
         for name, subject in SUBJECTS.items()
         # 60 steps: a time limit of 15 (steps // 4), so every env ends four episodes a run
         for check in contract_checks(subject, steps=60)]


@pytest.mark.parametrize("check", CASES)
def test_contract(check):
    check()


def test_check_env_returns_a_printable_report_naming_what_it_skipped():
    report = check_env(CounterEnv)
    text = str(report)
    assert "CounterEnv" in text and "contract checks passed" in text
    assert "needs a Box observation space" in report.skipped["wrapper RescaleObservation"]
    assert "action space is Discrete" in report.skipped["box_action_bounds"]
    assert set(report.passed) >= {"reproducible", "batch_independence", "bad_inputs"}


def test_rescale_observation_on_integer_observations_is_skipped_with_its_reason():
    report = check_env(lambda n: batchenv.BatchPong(n, obs_type="tiles"), steps=40)
    assert "uint8 observations" in report.skipped["wrapper RescaleObservation"]


# MiniGrid's Empty-NxN (not -Random-) has no randomness at all, as in minigrid. One test per
# id, so that each runs in the worker that compiles its class (tests/conftest.py).
@pytest.mark.parametrize("env_id", sorted(
    env_id for env_id in batchenv.list_envs()
    if not (env_id.startswith("batchenv/MiniGrid-Empty-") and "Random" not in env_id)))
def test_different_seeds_give_different_start_states(env_id):
    one, two = batchenv.make(env_id, 8), batchenv.make(env_id, 8)
    a, b = one.reset(seed=1)[0], two.reset(seed=2)[0]
    # MinAtar's Asterix, Seaquest and SpaceInvaders start deterministically (as in
    # MinAtar; SpaceInvaders' only randomness is sticky actions): there the seeds must
    # tell apart within a few steps of the same changing actions
    for t in range(30):
        if not np.array_equal(a, b):
            break
        action = np.full(8, t % one.single_action_space.n, dtype=np.int64)
        a, b = one.step(action)[0], two.step(action)[0]
    assert not np.array_equal(a, b), env_id
