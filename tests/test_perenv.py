"""Per-env kernels (batchenv.perenv): a game written for one env, compiled or looped, against
the same rules written as numpy kernels, in every auto-reset mode; the random functions
against BatchRandom; thread counts; the errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

import batchenv
from batchenv import perenv
from batchenv.random import BatchRandom, seed_keys
from batchenv.testing import check_env

W, H = 5, 8  # the Catch board


class CatchRules(batchenv.BatchEnv):
    """Catch: a ball falls one row a step from a random column, a paddle on the bottom row
    moves left/stay/right; +1 caught, -1 missed, and the episode ends. The paddle's speed
    jitters with a uniform draw every step (so that a discarded step would move the
    stream)."""

    state_dtype = np.dtype([("ball_x", np.int64), ("ball_y", np.int64), ("paddle", np.int64),
                            ("drift", np.float64)])
    single_action_space = spaces.Discrete(3)
    single_observation_space = spaces.Box(0, 1, (H, W), np.float32)
    default_max_episode_steps = 6
    kernel_params = ("miss_reward",)

    def __init__(self, num_envs: int = 1, miss_reward: float = -1.0, **kwargs):
        self.miss_reward = miss_reward
        super().__init__(num_envs, **kwargs)


class PerEnvCatch(CatchRules):
    @staticmethod
    def reset_env(p, s, i):
        s.ball_x[i] = perenv.integers(s, i, 0, W)
        s.ball_y[i] = 0
        s.paddle[i] = W // 2
        s.drift[i] = 0.0

    @staticmethod
    def step_env(p, s, i, action):
        s.drift[i] += perenv.uniform(s, i, -1.0, 1.0)
        s.paddle[i] = clamp(s.paddle[i] + action - 1, 0, W - 1)
        s.ball_y[i] += 1
        if s.ball_y[i] < H - 1:
            return 0.0, False
        if s.ball_x[i] == s.paddle[i]:
            return 1.0, True
        return p.miss_reward, True

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[:] = 0.0
        obs[s.ball_y[i], s.ball_x[i]] = 1.0
        obs[H - 1, s.paddle[i]] = 1.0


@perenv.rule
def clamp(x, lo, hi):
    return min(max(x, lo), hi)


class NumpyCatch(CatchRules):
    def reset_envs(self, s, rng):
        s.ball_x[:] = rng.integers(0, W)
        s.ball_y[:] = 0
        s.paddle[:] = W // 2
        s.drift[:] = 0.0

    def step_envs(self, s, action, rng):
        s.drift += rng.uniform(-1.0, 1.0)
        s.paddle[:] = np.clip(s.paddle + action - 1, 0, W - 1)
        s.ball_y += 1
        landed = s.ball_y >= H - 1
        reward = np.where(landed, np.where(s.ball_x == s.paddle, 1.0, self.miss_reward), 0.0)
        return reward, landed

    def observe(self, s, out):
        out[:] = 0.0
        rows = np.arange(len(s))
        out[rows, s.ball_y, s.ball_x] = 1.0
        out[rows, H - 1, s.paddle] = 1.0


KERNELS = ["numba", "python"]


def run_both(kernels, mode, n=13, steps=40, seed=3, **kw):
    ours = PerEnvCatch(n, autoreset_mode=mode, kernels=kernels, **kw)
    ref = NumpyCatch(n, autoreset_mode=mode)
    rng = np.random.default_rng(seed)
    o1, _ = ours.reset(seed=seed)
    o2, _ = ref.reset(seed=seed)
    np.testing.assert_array_equal(o1, o2)
    for t in range(steps):
        if t % 7 == 5:  # a masked reset leaves the others mid-episode
            mask = rng.random(n) < 0.3
            mask[0] = True
            o1, _ = ours.reset(options={"reset_mask": mask})
            o2, _ = ref.reset(options={"reset_mask": mask})
            np.testing.assert_array_equal(o1, o2)
        a = rng.integers(0, 3, n)
        r1, r2 = ours.step(a), ref.step(a)
        for x, y in zip(r1[:4], r2[:4]):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}")
        assert r1[4].keys() == r2[4].keys()
        if "final_obs" in r1[4]:
            np.testing.assert_array_equal(r1[4]["_final_obs"], r2[4]["_final_obs"])
            for e in np.flatnonzero(r1[4]["_final_obs"]):
                np.testing.assert_array_equal(r1[4]["final_obs"][e], r2[4]["final_obs"][e])
        np.testing.assert_array_equal(ours.get_state(), ref.get_state(), err_msg=f"step {t}")
    return ours


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_per_env_equals_numpy_kernels_in_every_mode(kernels, mode):
    env = run_both(kernels, mode)
    assert env.kernels == kernels


def test_disabled_mode_frozen_until_masked_reset():
    run_both("numba", AutoresetMode.DISABLED, steps=60)


@pytest.mark.parametrize("threads", [2, 3])
def test_thread_counts_give_identical_results(threads):
    one = PerEnvCatch(257, num_threads=1)
    many = PerEnvCatch(257, num_threads=threads)
    assert many.num_threads == threads
    one.reset(seed=1)
    many.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(30):
        a = rng.integers(0, 3, 257)
        for x, y in zip(one.step(a)[:4], many.step(a)[:4]):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(one.get_state(), many.get_state())


def test_kernel_params_are_read_at_reset():
    env = PerEnvCatch(4, miss_reward=-5.0, max_episode_steps=None)
    env.reset(seed=0)
    total = np.zeros(4)
    for _ in range(H - 1):
        total += env.step(np.zeros(4, dtype=np.int64))[1]
    assert set(total.tolist()) <= {1.0, -5.0} and -5.0 in total


@pytest.mark.parametrize("kernels", KERNELS)
def test_random_functions_follow_batch_random(kernels):
    """Row i's draws are BatchRandom's words for row i, in the same order."""
    n = 6
    key = seed_keys(np.arange(n, dtype=np.uint64) + 11)
    counter = np.arange(n, dtype=np.uint64) * 5
    ref = BatchRandom(key.copy(), counter.copy())
    want = [ref.bits(), ref.random(), ref.integers(-3, 9), ref.uniform(-2.0, 0.5),
            ref.random() < 0.4, ref.normal(1.0, 2.0)]
    import collections

    S = collections.namedtuple("S", ["rng_key", "rng_counter"])
    s = S(key.copy(), counter.copy())
    funcs = (perenv.bits, perenv.random, perenv.integers, perenv.uniform, perenv.bernoulli,
             perenv.normal)
    if kernels == "numba":
        import numba

        @numba.njit
        def draw_all(s, out):
            for i in range(len(s.rng_key)):
                out[i, 0] = perenv.bits(s, i)
                out[i, 1] = perenv.random(s, i)
                out[i, 2] = perenv.integers(s, i, -3, 9)
                out[i, 3] = perenv.uniform(s, i, -2.0, 0.5)
                out[i, 4] = perenv.bernoulli(s, i, 0.4)
                out[i, 5] = perenv.normal(s, i, 1.0, 2.0)

        got = np.zeros((n, 6), dtype=object)
        out = np.zeros((n, 6))
        draw_all(s, out)
        bits_out = np.zeros(n, dtype=np.uint64)

        @numba.njit
        def words(s, out):
            for i in range(len(out)):
                out[i] = perenv.bits(s, i)

        words(S(key.copy(), counter.copy()), bits_out)
        got = [bits_out, *out[:, 1:].T]
    else:
        with np.errstate(over="ignore"):
            rows = [[f(s, i, *args) for f, args in zip(
                funcs, [(), (), (-3, 9), (-2.0, 0.5), (0.4,), (1.0, 2.0)])] for i in range(n)]
        got = [np.array([r[k] for r in rows]) for k in range(6)]
    np.testing.assert_array_equal(got[0], want[0])
    for k in range(1, 5):
        np.testing.assert_array_equal(np.asarray(got[k], dtype=np.float64),
                                      np.asarray(want[k], dtype=np.float64))
    np.testing.assert_allclose(np.asarray(got[5], dtype=np.float64), want[5], rtol=1e-12)
    np.testing.assert_array_equal(s.rng_counter, ref.counter)


def test_check_env_passes_on_a_per_env_env():
    report = check_env(PerEnvCatch, num_envs=8)  # raises ContractError on a failure
    assert {"reproducible", "batch_independence", "bad_inputs"} <= set(report.passed)


class HalfCatch(PerEnvCatch):
    """Catch with a uint8 board whose paddle cell gets paddle + 0.5: stored as paddle."""

    single_observation_space = spaces.Box(0, 255, (H, W), np.uint8)

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[:] = 0
        obs[s.ball_y[i], s.ball_x[i]] = 1
        obs[H - 1, s.paddle[i]] = s.paddle[i] + 0.5


def test_debug_mode_finds_a_compiled_observe_env_that_loses_values_without_compiling_again():
    """Debug mode's float64 probe of a compiled per-env env runs the kernels' Python loop:
    it still finds a value the observation dtype cannot hold, and numba compiles the class's
    loop once (for the uint8 board), not again for float64 buffers."""
    env = HalfCatch(8, debug=True)
    assert env.kernels == "numba"
    lossy = r"uint8 cannot hold at entries \[\(7, 2\)\]"
    with pytest.raises(batchenv.debug.KernelError, match=lossy):
        env.reset(seed=0)
    assert len(env.kernel_form.inner.loops.run.signatures) == 1
    assert check_env(PerEnvCatch).passed  # (float32 boards: no probe; the same checks pass)


def test_debug_mode_and_pickling_keep_the_per_env_loops():
    env = PerEnvCatch(5, debug=True)
    env.reset(seed=2)
    env.step(np.ones(5, dtype=np.int64))
    copy = pickle.loads(pickle.dumps(env))
    assert copy.kernels == env.kernels == "numba"
    a = np.array([0, 1, 2, 1, 0])
    for x, y in zip(env.step(a)[:4], copy.step(a)[:4]):
        np.testing.assert_array_equal(x, y)


def test_bad_kernel_choices_are_refused():
    with pytest.raises(ValueError, match="kernels must be one of"):
        PerEnvCatch(2, kernels="fast")
    with pytest.raises(ValueError, match="has only per-env kernels"):
        PerEnvCatch(2, kernels="numpy")
    with pytest.raises(ValueError, match="no per-env kernels"):
        NumpyCatch(2, kernels="numba")
    with pytest.raises(ValueError, match="num_threads"):
        PerEnvCatch(2, num_threads=0)
    with pytest.raises(ValueError, match="num_threads"):
        NumpyCatch(2, num_threads=2)


def test_bad_actions_change_nothing():
    env = PerEnvCatch(4)
    env.reset(seed=0)
    before = env.get_state()
    with pytest.raises(ValueError, match=r"env indices \[2\]"):
        env.step(np.array([0, 1, 3, 1]))
    np.testing.assert_array_equal(env.get_state(), before)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("bad", [
    ([250], 3, ValueError, r"env indices \[250\]"),  # in the second thread's block
    ([0, 299], -1, ValueError, r"env indices \[0, 299\]"),
    ([7], 2**40, ValueError, r"env indices \[7\]"),
])
def test_the_compiled_check_refuses_before_any_row_changes(threads, bad):
    """The fused step checks the actions' range in its compiled pass: a refused call (an
    action out of range anywhere, also in another thread's block of rows) changes no row
    and names the envs, as the Python checker does."""
    rows, value, error, message = bad
    env = PerEnvCatch(300, num_threads=threads)
    env.reset(seed=0)
    env.step(np.ones(300, dtype=np.int64))  # compiled and past its first call
    before = env.get_state()
    actions = np.ones(300, dtype=np.int64)
    actions[rows] = value
    with pytest.raises(error, match=message):
        env.step(actions)
    np.testing.assert_array_equal(env.get_state(), before)
    ref = PerEnvCatch(300, num_threads=threads)  # and the next good step is as if no
    ref.reset(seed=0)  # refused call had been made
    ref.step(np.ones(300, dtype=np.int64))
    a = np.zeros(300, dtype=np.int64)
    for x, y in zip(env.step(a)[:4], ref.step(a)[:4]):
        np.testing.assert_array_equal(x, y)


def test_the_first_step_refuses_before_any_row_changes():
    """The very first step compiles the loop: a bad action there changes nothing either."""
    env = PerEnvCatch(50)
    env.reset(seed=0)
    before = env.get_state()
    actions = np.ones(50, dtype=np.int64)
    actions[49] = 5
    with pytest.raises(ValueError, match=r"env indices \[49\]"):
        env.step(actions)
    np.testing.assert_array_equal(env.get_state(), before)


@pytest.mark.parametrize("form", ["list", "int32", "uint8", "read-only", "strided",
                                  "validate=False"])
def test_every_form_of_the_actions_steps_alike(form):
    """int64 arrays take the compiled check; any other form (a list, another integer dtype,
    a read-only or non-contiguous array) goes through the Python checker and is converted:
    the same results."""
    n = 9
    ours = PerEnvCatch(n, validate=form != "validate=False")
    ref = PerEnvCatch(n)
    ours.reset(seed=4)
    ref.reset(seed=4)
    rng = np.random.default_rng(1)
    for _ in range(20):
        a = rng.integers(0, 3, n)
        given: object = a
        if form == "list":
            given = a.tolist()
        elif form in ("int32", "uint8"):
            given = a.astype(form)
        elif form == "read-only":
            given = a.copy()
            given.flags.writeable = False
        elif form == "strided":
            given = np.repeat(a, 2)[::2]
        for x, y in zip(ours.step(given)[:4], ref.step(a)[:4]):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(ours.get_state(), ref.get_state())
    with pytest.raises(TypeError, match="integers"):
        ref.step(np.zeros(n))  # floats: refused by the Python checker, as before


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_returned_arrays_are_never_written_again(mode):
    """With copy=True the loop writes into the arrays it returns, recycling a set only when
    the caller holds none of it: arrays a caller keeps (all, views of them, or one alone, as
    ``obs = env.step(a)[0]``) never change, and dropped sets are reused rather than
    allocated anew."""
    env = PerEnvCatch(16, autoreset_mode=mode)
    env.reset(seed=0)
    rng = np.random.default_rng(2)
    kept, copies = [], []
    for t in range(40):
        out = env.step(rng.integers(0, 3, 16))[:4]
        if t % 5 == 0:
            keep = (out, [x[3:] for x in out], out[:1], out[1:2])[t // 5 % 4]
            kept.append(keep)
            copies.append([x.copy() for x in keep])
        del out
    for keep, copy in zip(kept, copies):
        for x, y in zip(keep, copy):
            np.testing.assert_array_equal(x, y)
    seen = {env.step(np.ones(16, dtype=np.int64))[0].ctypes.data for _ in range(20)}
    assert len(seen) < 5  # dropped outputs are recycled, not made anew every step


class KeepingCatch(PerEnvCatch):
    """PerEnvCatch whose reset keeps ``drift`` (as MinAtar's keeps ``last_action``): a step
    run on an env awaiting its reset would show in the next episode."""

    @staticmethod
    def reset_env(p, s, i):
        s.ball_x[i] = perenv.integers(s, i, 0, W)
        s.ball_y[i] = 0
        s.paddle[i] = W // 2


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_debug_mode_never_steps_an_env_awaiting_its_reset(mode):
    """Debug mode runs the numpy-form loops (step_envs over every row, then the base
    class's auto-reset); like the fused step, it never runs step_env on an env whose step
    is discarded."""
    fused = KeepingCatch(6, autoreset_mode=mode)
    checked = KeepingCatch(6, autoreset_mode=mode, debug=True)
    fused.reset(seed=4)
    checked.reset(seed=4)
    rng = np.random.default_rng(4)
    for t in range(30):
        a = rng.integers(0, 3, 6)
        for x, y in zip(fused.step(a)[:4], checked.step(a)[:4]):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}")
        np.testing.assert_array_equal(fused.get_state(), checked.get_state(), err_msg=f"step {t}")


@pytest.mark.parametrize("kernels", KERNELS)
def test_words_views_an_array_as_uint64_words(kernels):
    def paint(out, i, value):
        w = perenv.words(out[i])
        w[1] = value
        return len(w)

    if kernels == "numba":
        import numba

        from batchenv import _borrow

        _borrow.install()  # (done by the first compiled loop; here words is called alone)
        paint = numba.njit(paint)
    out = np.zeros((3, 2, 8), dtype=bool)
    assert paint(out, 1, np.uint64(0x0100000000000001)) == 2
    expected = np.zeros_like(out)
    expected[1, 1, 0] = expected[1, 1, 7] = True
    np.testing.assert_array_equal(out, expected)


def test_words_refuses_a_strided_array_with_numbas_typing_error():
    """words' overload refuses a non-contiguous array by raising the error numba documents
    for typing failures, numba.core.errors.TypingError (the per-env loops catch the same
    name to explain a kernel's typing error): if numba moves or renames it, this fails."""
    import numba
    from numba.core.errors import TypingError

    from batchenv import _borrow

    _borrow.install()

    @numba.njit
    def first_word(a):
        return perenv.words(a)[0]

    with pytest.raises(TypingError, match="perenv.words needs a C-contiguous array"):
        first_word(np.zeros((4, 8), dtype=bool)[:, ::2])


class ViewCatch(CatchRules):
    """PerEnvCatch with the ball's two columns seen by the kernels as one ``(2, n)`` view
    (``kernel_views``), the columns themselves hidden."""

    kernel_views = ("ball",)
    kernel_hidden_fields = ("ball_x", "ball_y")

    @staticmethod
    def state_views(s):
        from batchenv.state import fields_view

        return {"ball": fields_view(s, ("ball_x", "ball_y"))}

    @staticmethod
    def reset_env(p, s, i):
        s.ball[0, i] = perenv.integers(s, i, 0, W)
        s.ball[1, i] = 0
        s.paddle[i] = W // 2
        s.drift[i] = 0.0

    @staticmethod
    def step_env(p, s, i, action):
        s.drift[i] += perenv.uniform(s, i, -1.0, 1.0)
        s.paddle[i] = clamp(s.paddle[i] + action - 1, 0, W - 1)
        s.ball[1, i] += 1
        if s.ball[1, i] < H - 1:
            return 0.0, False
        if s.ball[0, i] == s.paddle[i]:
            return 1.0, True
        return p.miss_reward, True

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[:] = 0.0
        obs[s.ball[1, i], s.ball[0, i]] = 1.0
        obs[H - 1, s.paddle[i]] = 1.0


@pytest.mark.parametrize("kernels", ["numba", "python"])
def test_kernel_views_write_through_to_the_state(kernels):
    if kernels == "numba":
        pytest.importorskip("numba")
    a, b = PerEnvCatch(16, kernels=kernels), ViewCatch(16, kernels=kernels)
    seen = b.kernel_form.loops.state_tuple._fields
    assert "ball" in seen and "ball_x" not in seen and "ball_y" not in seen
    oa, _ = a.reset(seed=3)
    ob, _ = b.reset(seed=3)
    np.testing.assert_array_equal(oa, ob)
    rng = np.random.default_rng(3)
    for t in range(30):
        act = rng.integers(0, 3, 16)
        for x, y in zip(a.step(act)[:4], b.step(act)[:4]):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}")
        for name in ("ball_x", "ball_y", "paddle", "drift", "rng_counter"):
            np.testing.assert_array_equal(getattr(a.state, name), getattr(b.state, name))


def test_kernel_views_need_state_views_and_names_of_their_own():
    class NoViews(ViewCatch):
        state_views = None

    class Clash(ViewCatch):
        kernel_views = ("paddle",)

    with pytest.raises(TypeError, match="no static state_views"):
        NoViews(4, kernels="python")
    with pytest.raises(TypeError, match=r"kernel_views \['paddle'\] are also state fields"):
        Clash(4, kernels="python")


@perenv.rule(inline=False)  # (a function of its own, compiled per type)
def _fall(p, s, i):  # a rule over the whole state: numba compiles it per type of s and p
    s.ball_y[i] += 1
    return s.ball_y[i] >= H - 1


def test_classes_with_the_same_fields_share_the_rules_compiled_code(monkeypatch):
    # two env classes with one state schema and one kernel_params: the same namedtuple
    # classes of s and p, so a rule both call over s and p is compiled once for both
    # (MiniGrid's envs: docs/writing_envs.md, section 7)
    pytest.importorskip("numba")
    from numba.core import event  # (numba's event API: a record of what it compiles)

    monkeypatch.setenv("BATCHENV_CACHE_DIR", "")  # (compiled here, whatever a cache holds)

    def compiled(record, function) -> int:
        return sum(1 for _, e in record.buffer
                   if e.is_start and e.data["dispatcher"].py_func.__name__ == function)

    class Falling(CatchRules):
        reset_env = PerEnvCatch.reset_env
        observe_env = PerEnvCatch.observe_env

        @staticmethod
        def step_env(p, s, i, action):
            s.paddle[i] = clamp(s.paddle[i] + action - 1, 0, W - 1)
            if not _fall(p, s, i):
                return 0.0, False
            return (1.0 if s.ball_x[i] == s.paddle[i] else p.miss_reward), True

    class FallingFromTheMiddle(Falling):  # another start, the same fields and rules
        @staticmethod
        def reset_env(p, s, i):
            s.ball_x[i] = W // 2
            s.ball_y[i] = 0
            s.paddle[i] = perenv.integers(s, i, 0, W)
            s.drift[i] = 0.0

    with event.install_recorder("numba:compile") as record:
        first = Falling(8, kernels="numba")
        first.reset(seed=1)
        first.step(np.ones(8, dtype=np.int64))
    assert compiled(record, "run") == 1 and compiled(record, "_fall") == 1
    with event.install_recorder("numba:compile") as record:
        second = FallingFromTheMiddle(8, kernels="numba", miss_reward=-2.0)
        second.reset(seed=4)
        second.step(np.ones(8, dtype=np.int64))
    # the second class's loop compiled, and _fall not again
    assert compiled(record, "run") == 1 and compiled(record, "_fall") == 0
    assert second.kernel_form.loops.state_tuple is first.kernel_form.loops.state_tuple
    assert second.kernel_form.loops.param_tuple is first.kernel_form.loops.param_tuple
    looped = FallingFromTheMiddle(8, kernels="python", miss_reward=-2.0)
    for env in (second, looped):
        env.reset(seed=4)
    rng = np.random.default_rng(4)
    for t in range(20):
        a = rng.integers(0, 3, 8)
        for x, y in zip(second.step(a)[:4], looped.step(a)[:4]):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}")
