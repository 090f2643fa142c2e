"""BatchEnv's own behaviour: construction, seeding streams, validation rules per action
space, copies, state snapshots, rendering plumbing and ``make``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

import batchenv
from batchenv import BatchEnv, BatchRandom
from batchenv.random import seed_keys
from batchenv.state import State, fields_view, take_rows
from batchenv.testing import CounterEnv, NullEnv


class BoxEnv(BatchEnv):
    """A 2-D point pushed by a bounded Box action; records the action it applied."""

    state_dtype = np.dtype([("pos", np.float64, 2), ("applied", np.float32, 2)])
    single_action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    single_observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float64)

    def reset_envs(self, s, rng):
        s.pos[:] = rng.uniform(-1, 1, (2,))
        s.applied[:] = 0

    def step_envs(self, s, action, rng):
        s.applied[:] = action
        s.pos += action
        return np.zeros(len(s)), np.zeros(len(s), dtype=bool)

    def observe(self, s, out):
        out[:] = s.pos


class StrictBoxEnv(BoxEnv):
    box_action_bounds = "raise"


class PassBoxEnv(BoxEnv):
    box_action_bounds = "pass"


class MultiEnv(CounterEnv):
    single_action_space = spaces.MultiDiscrete([3, 4])

    def step_envs(self, s, action, rng):
        s.count += 1
        return action.sum(axis=1), np.zeros(len(s), dtype=bool)


@pytest.mark.parametrize("make", [lambda: CounterEnv(7), lambda: CounterEnv(n=7),
                                  lambda: CounterEnv(num_envs=7),
                                  lambda: batchenv.BatchPong(n=7),
                                  lambda: batchenv.BatchPong(7)])
def test_num_envs_positional_n_or_num_envs(make):
    env = make()
    assert env.num_envs == 7
    assert env.reset(seed=0)[0].shape[0] == 7


@pytest.mark.parametrize("kwargs, error, text", [
    (dict(num_envs=0), ValueError, "positive"),
    (dict(num_envs=2.0), TypeError, "int"),
    (dict(num_envs=3, n=4), ValueError, "disagree"),
    (dict(autoreset_mode="sometimes"), ValueError, "autoreset_mode"),
    (dict(max_episode_steps=0), ValueError, "max_episode_steps"),
    (dict(render_mode="human"), ValueError, "render_mode"),
])
def test_bad_constructor_arguments(kwargs, error, text):
    with pytest.raises(error, match=text):
        CounterEnv(**kwargs)


def test_autoreset_mode_accepts_strings():
    env = CounterEnv(2, autoreset_mode="SameStep")
    assert env.metadata["autoreset_mode"] is batchenv.AutoresetMode.SAME_STEP
    assert CounterEnv.metadata.get("autoreset_mode") is None  # per instance, not class


def test_reserved_field_names_are_refused():
    class Clash(CounterEnv):
        state_dtype = np.dtype([("elapsed_steps", np.int64)])

    with pytest.raises(TypeError, match="reserved"):
        Clash(2)


def test_seed_list_with_none_keeps_those_streams():
    env = CounterEnv(3)
    env.reset(seed=[10, 11, 12])
    keys = env.get_state()["rng_key"]
    env.reset(seed=[None, 50, None])
    after = env.get_state()["rng_key"]
    assert after[0] == keys[0] and after[2] == keys[2]
    assert after[1] == seed_keys(np.array([50]))[0]
    env.reset(seed=7)
    np.testing.assert_array_equal(env.get_state()["rng_key"], seed_keys(np.arange(7, 10)))
    assert env.np_random_seed == (7, 8, 9)  # per env, as SyncVectorEnv


def test_reset_without_seed_continues_streams_and_first_reset_draws_entropy():
    a, b = batchenv.BatchPong(4), batchenv.BatchPong(4)
    assert not np.array_equal(a.reset()[0], b.reset()[0])  # fresh entropy each
    a.reset(seed=3)
    first = a.get_state()
    a.reset()  # keeps streams: counters advance, keys stay
    second = a.get_state()
    np.testing.assert_array_equal(first["rng_key"], second["rng_key"])
    assert (second["rng_counter"] > first["rng_counter"]).all()


def test_streams_are_uniform_and_independent():
    n = 20000
    rng = BatchRandom(seed_keys(np.arange(n)), np.zeros(n, dtype=np.uint64))
    u = rng.random((4,))
    assert u.shape == (n, 4) and ((u >= 0) & (u < 1)).all()
    hist = np.histogram(u, bins=10, range=(0, 1))[0]
    expected = u.size / 10  # chi-square with 9 dof: 99.99th percentile is ~33.7
    assert ((hist - expected) ** 2 / expected).sum() < 33.7
    # neighbouring seeds and neighbouring draws are uncorrelated
    assert abs(np.corrcoef(u[:-1, 0], u[1:, 0])[0, 1]) < 0.05
    assert abs(np.corrcoef(u[:, 0], u[:, 1])[0, 1]) < 0.05
    np.testing.assert_array_equal(rng.counter, 4)
    k = rng.integers(3, 7, (2,))
    assert k.min() == 3 and k.max() == 6
    g = rng.normal(shape=(2,))
    assert abs(g.mean()) < 0.05 and abs(g.std() - 1) < 0.05


def test_sparse_draws_advance_only_their_rows_and_match_full_draws():
    keys = seed_keys(np.arange(6))
    full = BatchRandom(keys.copy(), np.zeros(6, dtype=np.uint64))
    sparse = BatchRandom(keys.copy(), np.zeros(6, dtype=np.uint64))
    rows = np.array([1, 4])
    np.testing.assert_array_equal(sparse.at(rows).random((3,)), full.random((3,))[rows])
    np.testing.assert_array_equal(sparse.counter, [0, 3, 0, 0, 3, 0])


def test_box_actions_are_clipped_when_the_env_says_so():
    env = BoxEnv(3)
    env.reset(seed=0)
    env.step(np.array([[5, -5], [0.5, 0.25], [-1, 1]]))
    np.testing.assert_array_equal(env.state.applied, [[1, -1], [0.5, 0.25], [-1, 1]])
    env.step(np.array([[1, 1], [1, 1], [1, 1]], dtype=np.int64))  # ints are numbers too


def test_box_actions_pass_unchanged_when_the_env_applies_its_own_rule():
    env = PassBoxEnv(2)
    env.reset(seed=0)
    env.step(np.array([[5, -5], [0.5, 0.25]]))
    np.testing.assert_array_equal(env.state.applied, [[5, -5], [0.5, 0.25]])
    with pytest.raises(ValueError, match=r"NaN or inf at env indices \[1\]"):
        env.step(np.array([[5, -5], [0.5, np.inf]]))


def test_box_actions_out_of_bounds_raise_when_the_env_does_not_clip():
    env = StrictBoxEnv(3)
    env.reset(seed=0)
    before = env.get_state()
    with pytest.raises(ValueError, match=r"outside the bounds .* \[2\]"):
        env.step(np.array([[0, 0], [0, 0], [0, 1.5]]))
    np.testing.assert_array_equal(env.get_state(), before)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 15), min_size=1, max_size=5, unique=True),
       st.sampled_from([-3, -1, 5, 9, 1000]))
def test_discrete_range_errors_name_exactly_the_bad_envs(bad_rows, bad_value):
    env = CounterEnv(16, max_count=100)
    env.reset(seed=0)
    env.step(np.ones(16, dtype=np.int64))
    before = env.get_state()
    actions = np.full(16, 2)
    actions[bad_rows] = bad_value
    with pytest.raises(ValueError) as caught:
        env.step(actions)
    listed = str(caught.value).split("env indices [")[1].split("]")[0]
    assert [int(x) for x in listed.split(", ")] == sorted(bad_rows)
    np.testing.assert_array_equal(env.get_state(), before)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True),
       st.sampled_from([np.nan, np.inf, -np.inf]))
def test_box_nan_errors_name_exactly_the_bad_envs(bad_rows, value):
    env = BoxEnv(8)
    env.reset(seed=1)
    before = env.get_state()
    actions = np.zeros((8, 2))
    actions[bad_rows, 1] = value
    with pytest.raises(ValueError, match="NaN or inf") as caught:
        env.step(actions)
    assert str(sorted(bad_rows)).replace(" ", "") in str(caught.value).replace(" ", "")
    np.testing.assert_array_equal(env.get_state(), before)


def test_multidiscrete_actions_are_checked_per_component():
    env = MultiEnv(3)
    env.reset(seed=0)
    _, reward, *_ = env.step(np.array([[2, 3], [0, 0], [1, 2]]))
    np.testing.assert_array_equal(reward, [5, 0, 3])
    with pytest.raises(ValueError, match=r"\[0\]"):
        env.step(np.array([[3, 0], [0, 0], [1, 2]]))  # 3 is fine for the 2nd, not the 1st
    with pytest.raises(ValueError, match="shape"):
        env.step(np.array([1, 2, 3]))


def test_validate_false_skips_the_checks():
    env = CounterEnv(2, validate=False)
    env.reset(seed=0)
    _, reward, *_ = env.step([7, 9])  # out of range, accepted unchecked
    np.testing.assert_array_equal(reward, [7, 9])


def test_copy_true_returns_fresh_arrays_and_copy_false_returns_buffers():
    env = CounterEnv(2, max_count=100)
    obs1 = env.reset(seed=0)[0]
    obs2 = env.step(np.array([1, 1]))[0]
    assert not np.shares_memory(obs1, obs2)
    np.testing.assert_array_equal(obs1, [0, 0])
    env = CounterEnv(2, max_count=100, copy=False)
    out1 = env.reset(seed=0)[0]
    out2, r2, *_ = env.step(np.array([1, 1]))
    assert out1 is out2  # the same buffer, overwritten
    np.testing.assert_array_equal(out1, [1, 1])


def test_set_state_rejects_foreign_records():
    env = CounterEnv(3)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="full_state_dtype"):
        env.set_state(np.zeros(3, dtype=[("count", np.int64)]))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        env.set_state(env.get_state()[:2])
    with pytest.raises(ValueError, match="one per True entry"):
        env.set_state(env.get_state()[:2], mask=np.array([True, False, False]))


def test_set_state_counts_as_a_reset():
    source = CounterEnv(2, max_count=100)
    source.reset(seed=0)
    source.step(np.array([1, 1]))
    env = CounterEnv(2, max_count=100)
    obs = env.set_state(source.get_state())
    np.testing.assert_array_equal(obs, [1, 1])
    np.testing.assert_array_equal(env.step(np.array([1, 1]))[0], [2, 2])


def test_render_plumbing():
    class Drawn(CounterEnv):
        metadata = {"render_modes": ["ansi"]}

        def render_envs(self, s):
            return [f"count={c}" for c in s.count]

    env = Drawn(2, render_mode="ansi")
    with pytest.raises(batchenv.StepBeforeResetError):
        env.render()
    env.reset(seed=0)
    env.step(np.array([0, 0]))
    assert env.render() == ("count=1", "count=1")
    with pytest.warns(UserWarning, match="render_mode"):
        assert CounterEnv(2).render() is None  # no render_mode: a warning, no frames


def test_state_layout_fields_are_contiguous_and_consecutive_fields_form_a_block():
    s = State(np.dtype([("a", np.float32), ("v", np.float32, 3), ("b", np.float32),
                        ("k", np.int8)]), 5)
    assert s.a.flags.c_contiguous and s.b.flags.c_contiguous and s.v.shape == (5, 3)
    s.a[:] = 1
    s.b[:] = 2
    np.testing.assert_array_equal(fields_view(s, ["a", "b"]), [[1] * 5, [2] * 5])
    with pytest.raises(ValueError, match="consecutive"):
        fields_view(s, ["b", "a"])
    sub = take_rows(s, np.array([0, 3]))
    sub.a[:] = 9  # a copy
    assert s.a[0] == 1 and np.shares_memory(sub.a, fields_view(sub, ["a", "b"]))


@pytest.mark.parametrize("n", [1, 7, 1024, 4096, 4000])
def test_state_blocks_rows_are_an_odd_number_of_cache_lines_apart(n):
    # so that one env's fields do not all fall in one L1 set (4096 int8 envs: rows 4 KiB
    # apart): blocks of 8 fields or more; the block stays a view of the storage, and so do
    # its splits; smaller blocks stay contiguous
    names = [f"c{j}" for j in range(8)]
    s = State(np.dtype([(name, np.int8) for name in names] + [("f", np.float32),
                                                              ("g", np.float32)]), n)
    block = fields_view(s, names)
    lines, rest = divmod(block.strides[0], 64)
    assert rest == 0 and lines % 2 == 1 and block.strides[0] >= n
    assert block.strides[1] == 1
    assert fields_view(s, ["f", "g"]).flags.c_contiguous  # two rows: not padded
    split = block.reshape(2, 4, n)  # (fields, slots, n): a view, writes reach the state
    split[1, 3, n - 1] = 5
    assert s.c7[n - 1] == 5 and np.shares_memory(split, s.c0)
    starts = {a.ctypes.data % 4096 for a in (s.c0, s.f)}
    assert len(starts) == 2  # the blocks start in different sets too
    sub = take_rows(s, np.array([n - 1, 0]))  # a new state: the same layout
    assert fields_view(sub, names).strides[0] % 128 == 64 and sub.c7[0] == 5


def test_null_env_does_nothing_but_the_base_class_bookkeeping():
    env = NullEnv(4)
    obs, _ = env.reset(seed=0)
    _, reward, te, tr, info = env.step(np.zeros(4, dtype=np.int64))
    assert not te.any() and not tr.any() and info == {}
    np.testing.assert_array_equal(env.get_state()["elapsed_steps"], 1)


def test_make_returns_native_envs_and_checks_vectorization():
    env = batchenv.make("batchenv/Pong-v0", 3)
    assert isinstance(env, batchenv.BatchPong) and env.num_envs == 3
    assert env.spec.id == "batchenv/Pong-v0"
    assert batchenv.make("Pong-v0", 2, points_to_win=3).params.points_to_win == 3
    with pytest.raises(ValueError, match="vectorization"):
        batchenv.make("batchenv/Pong-v0", 2, vectorization="gpu")
    with pytest.raises(ValueError, match="no native"):
        batchenv.make("FrozenLake-v1", 2, vectorization="native")
    sync = batchenv.make("FrozenLake-v1", 2, vectorization="sync")
    assert isinstance(sync, gym.vector.SyncVectorEnv)
    assert "batchenv/Pong-v0" in batchenv.list_envs()


def test_registry_time_limits_match_the_classes():
    for env_id, entry in batchenv.registry.items():
        env = entry.load()(1, **entry.kwargs)  # (MiniGrid's limit depends on its size)
        assert env.max_episode_steps == entry.max_episode_steps, env_id
        assert gym.spec(env_id).max_episode_steps == entry.max_episode_steps


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_next_step_resets_the_rows_awaiting_a_reset_right_after_the_kernel(mode):
    """In NEXT_STEP, the rows awaiting a reset when ``step`` begins (``s.awaiting_reset``,
    as ``step_envs`` sees it) are the rows the base class passes to ``reset_rows`` right
    after ``step_envs`` (BatchPong relies on it); the other modes reset nothing in a step
    here (SAME_STEP resets the rows that end in that step, DISABLED none)."""
    seen, reset_after = [], []

    class Watched(CounterEnv):
        def step_envs(self, s, action, rng):
            seen.append(s.awaiting_reset.nonzero()[0].tolist())
            reset_after.append(None)
            return super().step_envs(s, action, rng)

        def reset_rows(self, s, rows, rng):
            if reset_after and reset_after[-1] is None:
                reset_after[-1] = rows.tolist()
            super().reset_rows(s, rows, rng)

    env = Watched(4, max_count=[1, 2, 3, 9], autoreset_mode=mode)
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.zeros(4, dtype=np.int64))
    if mode == "NextStep":  # step 1 ends env 0; step 2 resets it and ends env 1; ...
        assert seen == [[], [0], [1]]
        assert reset_after == [None, [0], [1]]
    elif mode == "SameStep":
        assert seen == [[], [], []]
        assert reset_after == [[0], [0, 1], [0, 2]]
    else:
        assert reset_after == [None, None, None]


@pytest.mark.parametrize("space", [
    spaces.Box(-1.0, 1.0, (6,), np.float32),
    spaces.Box(0, 255, (4, 3), np.uint8),
    spaces.Box(np.array([-np.inf, 0.0]), np.array([1.0, np.inf]), dtype=np.float64),
    spaces.Discrete(3),
])
def test_batched_space_is_gymnasiums_batch_space_without_the_memory(space):
    """batched_space(space, n) equals gymnasium's batch_space(space, n), samples the same
    values from the same seed, and (for a Box) keeps its bounds as writable zero-stride views."""
    import pickle

    from gymnasium.vector.utils import batch_space

    from batchenv.core import batched_space

    space.seed(3)
    theirs = batch_space(space, 5)
    space.seed(3)
    ours = batched_space(space, 5)
    assert ours == theirs and theirs == ours and type(ours) is type(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours.sample(), theirs.sample())
    sample = theirs.sample()
    assert ours.contains(sample)
    assert pickle.loads(pickle.dumps(ours)) == theirs
    if isinstance(space, spaces.Box):
        assert ours.is_bounded() == theirs.is_bounded()
        for name in ("low", "high", "bounded_below", "bounded_above"):
            array = getattr(ours, name)
            np.testing.assert_array_equal(array, getattr(theirs, name))
            # writable (torch.as_tensor warns on read-only arrays), no memory per env, and
            # a write never reaches the single space
            assert array.strides[0] == 0 and array.flags.writeable
            assert not np.shares_memory(array, getattr(space, name))
        if ours.dtype.kind == "f":  # a value just above a bounded dimension's high
            i = int(np.flatnonzero(ours.bounded_above.ravel())[-1])
            outside = sample.copy()
            outside.flat[i] = np.nextafter(ours.high.flat[i], np.inf)
            assert theirs.contains(sample) and not theirs.contains(outside)
            assert not ours.contains(outside)
