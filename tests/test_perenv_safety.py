"""The per-env form, safe to write: one path for the actions whatever their form, thread
count or sharding; the checked form (debug mode, check_env) turning an index out of range
into an error naming the env, the kernel and the line; parameters, threads and kernel
errors handled as a careful author expects."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

import batchenv
from batchenv import perenv
from batchenv.forms import KernelError
from batchenv.testing import check_env
from batchenv.testing.contract import ContractError

pytest.importorskip("numba")

N = 7  # (odd: the thread blocks are uneven)


class Stepper(batchenv.BatchEnv):
    """Counts every step each env takes and sums its actions: an env stepped twice in one
    call, or skipped, shows."""

    state_dtype = np.dtype([("steps", np.int64), ("total", np.int64), ("start", np.int64)])
    single_action_space = spaces.Discrete(4)
    single_observation_space = spaces.Box(0, 10**6, (2,), np.float32)
    default_max_episode_steps = 5
    kernel_params = ("first",)
    first = 0

    @staticmethod
    def reset_env(p, s, i):
        s.steps[i] = 0
        s.total[i] = p.first
        s.start[i] = p.first

    @staticmethod
    def step_env(p, s, i, action):
        s.steps[i] += 1
        s.total[i] += action
        return float(action), False

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[0] = s.steps[i]
        obs[1] = s.total[i]


def _action_forms(a: np.ndarray) -> dict[str, Any]:
    readonly = a.copy()
    readonly.flags.writeable = False
    strided = np.repeat(a, 2)[::2]
    return {"int64": a, "int32": a.astype(np.int32), "list": a.tolist(), "readonly": readonly,
            "strided": strided, "uint8": a.astype(np.uint8)}


def _run(env: Any, form: str, steps: int = 12) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    seen = list(env.reset(seed=3)[:1])
    for _ in range(steps):
        a = rng.integers(0, 4, env.num_envs)
        seen.extend(env.step(_action_forms(a)[form])[:4])
    seen.append(env.get_state() if hasattr(env, "get_state") else None)
    return seen


@pytest.fixture(scope="module")
def reference() -> list[np.ndarray]:
    return _run(Stepper(N, kernels="python"), "int64")


@pytest.mark.parametrize("form", ["int64", "int32", "list", "readonly", "strided", "uint8"])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("validate", [True, False])
def test_every_env_steps_once_whatever_the_actions_threads_and_validation(
        reference, form, threads, validate):
    env = Stepper(N, kernels="numba", num_threads=threads, validate=validate)
    for a, b in zip(_run(env, form), reference):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("form", ["int64", "list"])
def test_sharded_threaded_shards_step_every_env_once(reference, form):
    env = batchenv.ShardedVectorEnv(Stepper, N, num_workers=2, local_shard=True,
                                    kernels="numba", num_threads=2)
    try:
        for a, b in zip(_run(env, form)[:-1], reference[:-1]):
            np.testing.assert_array_equal(a, b)
    finally:
        env.close()


class Mover(batchenv.BatchEnv):
    """A Box action per env; the same rules in both forms of actions."""

    state_dtype = np.dtype([("x", np.float64), ("steps", np.int64)])
    single_action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    single_observation_space = spaces.Box(-100, 100, (1,), np.float64)

    @staticmethod
    def reset_env(p, s, i):
        s.x[i] = 0.0
        s.steps[i] = 0

    @staticmethod
    def step_env(p, s, i, action):
        # float(): a float32 action times a Python float is float32 in numpy (the Python
        # form) and float64 in numba; check_env's two_forms check would report it
        s.x[i] += float(action[0]) - 2.0 * float(action[1])
        s.steps[i] += 1
        return -abs(s.x[i]), False

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[0] = s.x[i]


@pytest.mark.parametrize("threads", [1, 2])
def test_box_actions_step_once_and_are_clipped(threads):
    env = Mover(N, num_threads=threads)
    ref = Mover(N)  # (one thread)
    env.reset(seed=0)
    ref.reset(seed=0)
    rng = np.random.default_rng(1)
    for _ in range(6):
        a = rng.uniform(-2, 2, (N, 2)).astype(np.float32)
        kept = a.copy()
        for x, y in zip(env.step(a)[:4], ref.step(a.tolist())[:4]):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(a, kept)  # the caller's array is never written
    np.testing.assert_array_equal(env.state.steps, 6)


def test_check_env_passes_a_correct_per_env_box_env():
    result = check_env(Mover)
    assert result.passed, result


# ------------------------------------------------------------------ the checked form
class Mistaken(batchenv.BatchEnv):
    """A row of cells; ``mistake`` plants an index out of range in one kernel."""

    state_dtype = np.dtype([("x", np.int64), ("cells", np.int64, (4,))])
    single_action_space = spaces.Discrete(2)
    single_observation_space = spaces.Box(0, 9, (4,), np.int64)
    kernel_params = ("mistake",)

    def __init__(self, num_envs: int = 1, mistake: int = 0, **kwargs: Any) -> None:
        self.mistake = mistake
        super().__init__(num_envs, **kwargs)

    @staticmethod
    def reset_env(p, s, i):
        s.x[i] = 0
        for j in range(4):
            s.cells[i, j] = 0

    @staticmethod
    def step_env(p, s, i, action):
        s.x[i] += action
        if p.mistake == 1 and s.x[i] > 1:
            s.x[i + 1] = 5  # MISTAKE 1: another env's row
        if p.mistake == 2:
            s.cells[i, s.x[i] + 2] = 1  # MISTAKE 2: past the field's shape
        return 0.0, False

    @staticmethod
    def observe_env(p, s, i, obs):
        for j in range(4):
            obs[j] = s.cells[i, j]
        if p.mistake == 3 and s.x[i] > 1:
            obs[s.x[i] + 2] = 1  # MISTAKE 3: past the observation


def _line_of(marker: str) -> int:
    source = open(__file__).read().splitlines()
    return next(n for n, text in enumerate(source, 1) if marker in text)


@pytest.mark.parametrize("kernels", ["numba", "python"])
@pytest.mark.parametrize("mistake,kernel", [(1, "step_env"), (2, "step_env"),
                                            (3, "observe_env")])
def test_the_checked_form_names_env_kernel_and_line_and_restores_the_batch(kernels, mistake,
                                                                         kernel):
    env = Mistaken(5, mistake=mistake, kernels=kernels, debug=True)
    env.reset(seed=0)
    a = np.array([0, 0, 1, 0, 0])
    env.step(a)  # env 2 at x = 1: fine
    before = env.get_state()
    with pytest.raises(KernelError) as e:
        env.step(a)  # env 2 at x = 2: its mistake
    error = e.value
    assert error.method == kernel and error.env_index == 2 and error.batch_restored
    assert error.location is not None
    assert error.location.startswith(f"{__file__}:{_line_of(f'MISTAKE {mistake}')}")
    assert "env index 2" in str(error) and "restored" in str(error)
    np.testing.assert_array_equal(env.get_state(), before)
    env.step(np.zeros(5, dtype=np.int64))  # the batch was restored: it steps on


def test_check_env_reports_a_write_into_another_env():
    with pytest.raises(ContractError) as e:
        check_env(lambda n: Mistaken(n, mistake=1))
    assert "step_env" in str(e.value) and "env index" in str(e.value)
    assert "MISTAKE 1" in str(e.value)  # the author's line


# ------------------------------------------------------------------ the rest
def test_a_parameter_set_between_episodes_takes_effect_at_every_auto_reset():
    env = Stepper(3, max_episode_steps=2)
    env.reset(seed=0)
    np.testing.assert_array_equal(env.state.start, 0)
    env.first = 7  # (env.set_attr("first", 7) is the same)
    for _ in range(3):  # the episodes end at step 2; step 3 auto-resets them
        env.step(np.zeros(3, dtype=np.int64))
    np.testing.assert_array_equal(env.state.start, 7)
    env.set_attr("first", 9)
    for _ in range(3):
        env.step(np.zeros(3, dtype=np.int64))
    np.testing.assert_array_equal(env.state.start, 9)


def test_a_parameter_set_on_a_sharded_env_reaches_every_shard():
    env = batchenv.ShardedVectorEnv(Stepper, 4, num_workers=2, local_shard=True,
                                    max_episode_steps=2)
    try:
        env.reset(seed=0)
        env.set_attr("first", 4)
        for _ in range(3):
            obs = env.step(np.zeros(4, dtype=np.int64))[0]
        np.testing.assert_array_equal(obs[:, 1], 4)  # total starts at `first`
    finally:
        env.close()


GATE = threading.Event()
INSIDE = threading.Event()


def _wait(x: float) -> float:  # (the Python form calls it; a compiled kernel cannot wait)
    INSIDE.set()
    GATE.wait(10)
    return x


class Slow(Stepper):
    @staticmethod
    def step_env(p, s, i, action):
        s.steps[i] += 1
        return _wait(0.0), False


def test_a_second_thread_stepping_the_same_env_is_refused():
    env = Slow(2, kernels="python")
    env.reset(seed=0)
    GATE.clear()
    INSIDE.clear()
    first = threading.Thread(target=env.step, args=(np.zeros(2, dtype=np.int64),))
    first.start()
    assert INSIDE.wait(10)
    try:
        with pytest.raises(RuntimeError, match="another thread"):
            env.step(np.zeros(2, dtype=np.int64))
        with pytest.raises(RuntimeError, match="another thread"):
            env.reset()
    finally:
        GATE.set()
        first.join()
    np.testing.assert_array_equal(env.state.steps, 1)  # only the first call stepped


class Dividing(Stepper):
    @staticmethod
    def step_env(p, s, i, action):
        s.steps[i] += 1
        s.total[i] += action
        if s.total[i] == 3 and s.steps[i] == 2:  # (env 2 below; debug mode runs each env
            raise ZeroDivisionError("env 2 divides by zero")  # on a copy of its row: no i)
        return 0.0, False


FIRST = np.array([0, 0, 3, 0])  # env 2's total 3 after its first step


@pytest.mark.parametrize("kernels", ["numba", "python"])
def test_a_kernel_that_raises_leaves_the_env_refusing_steps_until_reset(kernels):
    env = Dividing(4, kernels=kernels)
    env.reset(seed=0)
    env.step(FIRST)
    with pytest.raises(ZeroDivisionError):
        env.step(np.zeros(4, dtype=np.int64))
    with pytest.raises(batchenv.StepBeforeResetError, match="half-changed; call reset"):
        env.step(np.zeros(4, dtype=np.int64))
    env.reset(seed=0)
    env.step(FIRST)  # steps again


def test_in_debug_mode_a_kernel_that_raises_leaves_the_batch_unchanged():
    env = Dividing(4, debug=True)
    env.reset(seed=0)
    env.step(FIRST)
    before = env.get_state()
    with pytest.raises(KernelError, match="env index 2") as e:
        env.step(np.zeros(4, dtype=np.int64))
    assert e.value.batch_restored
    np.testing.assert_array_equal(env.get_state(), before)


def _undecorated_clamp(x, lo, hi):
    return min(max(x, lo), hi)


class CallsAPlainFunction(Stepper):
    @staticmethod
    def step_env(p, s, i, action):
        s.total[i] = _undecorated_clamp(s.total[i] + action, 0, 9)
        return 0.0, False


def test_an_undecorated_helper_is_named_with_what_to_do():
    env = CallsAPlainFunction(2, kernels="numba")
    with pytest.raises(TypeError, match=r"_undecorated_clamp\(\).*@perenv\.rule"):
        env.reset(seed=0)


class DrawsFromAnEmptyRange(Stepper):
    @staticmethod
    def reset_env(p, s, i):
        s.steps[i] = 0
        s.total[i] = perenv.integers(s, i, 3, 3)
        s.start[i] = 0


@pytest.mark.parametrize("kernels", ["numba", "python"])
def test_integers_from_an_empty_range_raise_in_both_forms(kernels):
    with pytest.raises(ValueError, match="high > low"):
        DrawsFromAnEmptyRange(2, kernels=kernels).reset(seed=0)


class Wrapping(batchenv.BatchEnv):
    """An int8 counter compared after arithmetic: numba computes `x + 1` in int64, and so
    must the Python form (numpy's int8 would wrap at 127 and take the other branch)."""

    state_dtype = np.dtype([("x", np.int8), ("big", np.bool_)])
    single_action_space = spaces.Discrete(2)
    single_observation_space = spaces.Box(0, 1, (1,), np.float32)

    @staticmethod
    def reset_env(p, s, i):
        s.x[i] = 126
        s.big[i] = False

    @staticmethod
    def step_env(p, s, i, action):
        s.big[i] = s.x[i] + 1 > 127
        s.x[i] = s.x[i] + action  # (stored: wraps in both forms)
        return 0.0, False

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[0] = s.big[i]


def test_the_two_forms_agree_on_narrow_integer_arithmetic():
    runs = []
    for kernels in ("numba", "python"):
        env = Wrapping(2, kernels=kernels)
        env.reset(seed=0)
        seen = [env.step(np.ones(2, dtype=np.int64))[0] for _ in range(3)]
        runs.append((seen, env.get_state()))
    for a, b in zip(runs[0][0], runs[1][0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert runs[0][0][1].all()  # x was 127: 127 + 1 > 127 in both


def test_the_kernel_form_says_which_form_runs_and_why():
    form = Stepper(2).kernel_form
    assert form.kind == "numba" and "numba is installed" in form.why
    assert "debug mode" in Stepper(2, debug=True).kernel_form.why
    assert batchenv.BatchPong(2).kernel_form.kind == "numpy"
