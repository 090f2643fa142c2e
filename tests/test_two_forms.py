"""``check_env``'s ``two_forms`` check (batchenv/testing/two_forms.py): the compiled per-env
loop against ``kernels="python"``, kernel by kernel, the first divergence named by kernel,
field, env index and step. Each planted divergence below is a line numba and numpy compute
differently, placed at a known env and step; the same env without it passes check_env."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

import batchenv
from batchenv import perenv
from batchenv.testing import ContractError, check_env, contract_checks
from batchenv.testing.two_forms import ENVS, STEPS

SCALE, OFFSET = np.float32(1.5), np.float32(0.25)  # float32 constants: both forms agree
NO_PLANT, AT_RESET, AT_STEP, AT_OBSERVE, RAISES = range(5)
SEED = 6  # (the first env apart is 1, the first with d > 0.5 is 2: not simply env 0)


class Drift(batchenv.BatchEnv):
    """x drifts by x * SCALE + OFFSET (float32 in both forms) each step; ``plant`` puts one
    line computed with Python floats (float64 in numba, float32 in numpy) at a reset, at
    step 3 or in the observation at step 2, or a Python float divided by zero at step 5
    (inf in numba, ZeroDivisionError in Python) where the start value d is above 0.5."""

    state_dtype = np.dtype([("x", np.float32), ("d", np.float64), ("t", np.int64)])
    single_action_space = spaces.Discrete(2)
    single_observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
    kernel_params = ("plant",)
    plant = NO_PLANT

    @staticmethod
    def reset_env(p, s, i):
        s.d[i] = perenv.uniform(s, i, 0.0, 1.0)
        s.x[i] = s.d[i]
        if p.plant == AT_RESET:
            s.x[i] = s.x[i] * 3.3 + 0.7
        s.t[i] = 0

    @staticmethod
    def step_env(p, s, i, action):
        s.t[i] += 1
        s.x[i] = s.x[i] * SCALE + OFFSET * action
        if p.plant == AT_STEP and s.t[i] == 3:
            s.x[i] = np.float32(s.d[i]) * 3.3 + 0.7
        if p.plant == RAISES and s.t[i] == 5 and s.d[i] > 0.5:
            s.d[i] = 1.0 / float(s.t[i] - 5)
        return float(action), s.t[i] >= 7

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[0] = s.x[i]
        obs[1] = s.d[i]
        if p.plant == AT_OBSERVE and s.t[i] == 2:
            obs[0] = np.float32(s.d[i]) * 3.3 + 0.7


def _start_values():
    """d of every env at two_forms' first reset (its reset follows a seeded one)."""
    env = Drift(4)
    env.reset(seed=SEED)
    env.reset()
    return env.get_state()["d"]


def _first_rounding_apart():
    """The first env where float32(d) * 3.3 + 0.7 rounds differently in numpy's float32
    arithmetic (NEP 50) and in float64 rounded once (numba)."""
    x = _start_values().astype(np.float32)
    apart = (x * 3.3 + 0.7) != (x.astype(np.float64) * 3.3 + 0.7).astype(np.float32)
    assert (x * 3.3 + 0.7).dtype == np.float32 and apart.any()  # the plant's premise
    return int(np.argmax(apart))


def _planted(plant):
    def make(n):
        env = Drift(n)
        env.plant = plant
        return env
    return make


def _two_forms(env):
    return next(c for c in contract_checks(env, num_envs=4, steps=40, seed=SEED)
                if str(c) == "two_forms")


@pytest.mark.parametrize("plant, kernel, when, field", [
    (AT_RESET, "reset_env", "at the first reset", "'x'"),
    (AT_STEP, "step_env", "at step 3", "'x'"),
    (AT_OBSERVE, "observe_env", "at step 2", "'obs'"),
])
def test_a_divergence_is_reported_with_its_kernel_field_env_and_step(plant, kernel, when,
                                                                      field):
    env_index = _first_rounding_apart()
    with pytest.raises(ContractError) as caught:
        _two_forms(_planted(plant))()
    failure, = caught.value.failures
    assert failure.check == "two_forms" and failure.method == kernel
    assert failure.message.startswith(f"{kernel} {when}: ")
    assert f"differ in {field} at env index {env_index}: " in failure.message
    assert "1 float32 ulp" in failure.message  # the cause, said


def test_an_error_of_the_python_form_alone_is_a_divergence_naming_env_and_line():
    env_index = int(np.argmax(_start_values() > 0.5))
    with pytest.raises(ContractError) as caught:
        _two_forms(_planted(RAISES))()
    failure, = caught.value.failures
    assert failure.method == "step_env"
    assert failure.message.startswith("step_env at step 5: the Python form raised "
                                      "ZeroDivisionError")
    assert f"for env index {env_index} at " in failure.message
    assert "test_two_forms.py" in failure.message and "1.0 / float(" in failure.message
    assert "numba divides by zero as numpy does" in failure.message


def test_check_env_runs_the_comparison_and_passes_float32_constants():
    report = check_env(Drift, num_envs=4, steps=40, seed=SEED)
    assert "two_forms" in report.passed and "two_forms" not in report.skipped
    with pytest.raises(ContractError, match=r"two_forms: look at step_env"):
        check_env(_planted(AT_STEP), num_envs=4, steps=40, seed=SEED)


def test_the_comparison_is_small():
    assert ENVS <= 4 and STEPS <= 32  # the Python form is slow: check_env runs it often


def test_it_is_not_applicable_to_the_python_form_or_numpy_kernels():
    check = _two_forms(lambda n: Drift(n, kernels="python"))
    check()
    assert "python" in check.context.skipped["two_forms"]
    check = _two_forms(batchenv.testing.CounterEnv)
    check()
    assert "numpy" in check.context.skipped["two_forms"]
