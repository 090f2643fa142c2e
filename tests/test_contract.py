"""The BatchEnv contract, checked on every native env (``batchenv.list_envs()``) and the
test envs: Gymnasium API, seeding, batch independence, auto-reset, masks, state snapshots,
pickling, wrappers and bad inputs."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import vector as vw

import batchenv
from batchenv.testing import CounterEnv

ENV_IDS = batchenv.list_envs()
HORIZON = 40  # a short time limit, so that every env finishes episodes within a test


def make(env_id, num_envs, **kwargs):
    kwargs.setdefault("max_episode_steps", HORIZON)
    if env_id == "Counter":
        return CounterEnv(num_envs, max_count=7, **kwargs)
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                        **kwargs)


@pytest.fixture(params=[*ENV_IDS, "Counter"])
def env_id(request):
    return request.param


def actions_for(env, steps, seed=0):
    """A fixed sequence of valid batched actions, covering the space's extremes."""
    space = env.action_space
    space.seed(seed)
    out = [space.sample() for _ in range(steps)]
    single = env.single_action_space
    bounded = isinstance(single, spaces.Box) and single.is_bounded()
    if bounded and steps > 2:  # the bounds themselves
        out[1] = np.broadcast_to(single.low, space.shape).copy()
        out[2] = np.broadcast_to(single.high, space.shape).copy()
    return out


def rollout(env, actions):
    return [tuple(np.copy(x) for x in env.step(a)[:4]) for a in actions]


def assert_same_rollouts(a, b):
    assert len(a) == len(b)
    for t, (x, y) in enumerate(zip(a, b)):
        for name, u, v in zip(("obs", "reward", "terminated", "truncated"), x, y):
            np.testing.assert_array_equal(u, v, err_msg=f"{name} differs at step {t}")


def test_spaces_and_gymnasium_api(env_id):
    env = make(env_id, 5)
    assert isinstance(env.unwrapped, batchenv.BatchEnv)
    assert env.num_envs == 5
    obs, info = env.reset(seed=0)
    assert info == {}
    assert obs in env.observation_space
    for a in actions_for(env, 60):
        obs, reward, terminated, truncated, info = env.step(a)
        assert obs in env.observation_space
        assert obs.shape == (5, *env.single_observation_space.shape)
        assert reward.shape == (5,) and reward.dtype == np.float64
        assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
        assert np.isfinite(reward).all()
    env.close()
    assert env.closed


def test_same_seed_same_results(env_id):
    actions = actions_for(make(env_id, 8), 120)
    runs = []
    for _ in range(2):
        env = make(env_id, 8)
        runs.append([env.reset(seed=123)[0], *rollout(env, actions)])
    assert_same_rollouts(runs[0][1:], runs[1][1:])
    np.testing.assert_array_equal(runs[0][0], runs[1][0])


def test_different_seeds_differ(env_id):
    one, two = make(env_id, 8), make(env_id, 8)
    a, b = one.reset(seed=1)[0], two.reset(seed=2)[0]
    if env_id == "Counter":  # deterministic start state
        np.testing.assert_array_equal(a, b)
        return
    # a start state may be deterministic (MinAtar Asterix): then the rollouts differ
    for action in actions_for(one, HORIZON // 2):
        if not np.array_equal(a, b):
            break
        a, b = one.step(action)[0], two.step(action)[0]
    assert not np.array_equal(a, b)


def test_row_i_of_a_batch_equals_a_batch_of_one_seeded_s_plus_i(env_id):
    n, seed = 6, 40
    big = make(env_id, n)
    actions = actions_for(big, 3 * HORIZON)
    big_obs = big.reset(seed=seed)[0]
    big_run = rollout(big, actions)
    for i in range(n):
        one = make(env_id, 1)
        np.testing.assert_array_equal(one.reset(seed=seed + i)[0][0], big_obs[i])
        one_run = rollout(one, [a[i:i + 1] for a in actions])
        assert_same_rollouts(one_run, [tuple(x[i:i + 1] for x in step) for step in big_run])


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_get_state_set_state_round_trip_mid_episode(env_id, mode):
    env = make(env_id, 7, autoreset_mode=mode)
    env.reset(seed=5)
    actions = actions_for(env, 2 * HORIZON, seed=1)
    rollout(env, actions[:HORIZON // 2 + 3])
    snapshot = env.get_state()
    assert snapshot.dtype == env.unwrapped.full_state_dtype and snapshot.shape == (7,)
    first = rollout(env, actions)
    obs = env.unwrapped.set_state(snapshot)
    second = rollout(env, actions)
    assert_same_rollouts(first, second)
    assert obs.shape == (7, *env.single_observation_space.shape)


def test_set_state_with_mask_changes_only_masked_envs(env_id):
    env = make(env_id, 5)
    env.reset(seed=9)
    start = env.get_state()
    rollout(env, actions_for(env, 11))
    moved = env.get_state()
    mask = np.array([True, False, True, False, False])
    env.unwrapped.set_state(start[mask], mask=mask)
    now = env.get_state()
    np.testing.assert_array_equal(now[mask], start[mask])
    np.testing.assert_array_equal(now[~mask], moved[~mask])


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_copies_continue_identically(env_id, how):
    env = make(env_id, 4)
    env.reset(seed=2)
    actions = actions_for(env, 2 * HORIZON, seed=3)
    rollout(env, actions[:13])
    twin = pickle.loads(pickle.dumps(env)) if how == "pickle" else copy.deepcopy(env)
    assert_same_rollouts(rollout(env, actions), rollout(twin, actions))


def test_reset_with_mask_and_seed_reseeds_only_masked_envs(env_id):
    env = make(env_id, 4)
    env.reset(seed=0)
    rollout(env, actions_for(env, 5))
    before = env.get_state()
    mask = np.array([False, True, True, False])
    options = {"reset_mask": mask}
    env.reset(seed=100, options=options)
    assert options == {"reset_mask": mask}
    after = env.get_state()
    np.testing.assert_array_equal(after[~mask], before[~mask])
    # env 1 reseeded with 100 + 1, exactly like a fresh batch of one seeded 101
    fresh = make(env_id, 1)
    fresh.reset(seed=101)
    np.testing.assert_array_equal(after[1:2], fresh.get_state())


def test_next_step_autoreset_ignores_the_action_and_returns_a_start_state(env_id):
    env = make(env_id, 6, max_episode_steps=5)
    env.reset(seed=4)
    actions = actions_for(env, 6)
    ended_before = np.zeros(6, dtype=bool)
    for a in actions[:5]:
        _, _, terminated, truncated, _ = env.step(a)
        done = terminated | truncated
        ended_before |= done
    ended_before &= ~done
    # the time limit ends every episode that had not ended before (some games can end, and
    # restart, within 5 steps: MinAtar Seaquest)
    np.testing.assert_array_equal(done, ~ended_before)
    pending = env.get_state()
    obs, reward, terminated, truncated, _ = env.step(actions[5])
    np.testing.assert_array_equal(reward[done], 0.0)
    assert not terminated[done].any() and not truncated[done].any()
    state = env.get_state()
    np.testing.assert_array_equal(state["elapsed_steps"][done], 0)
    # each row is the start state its stream gives: the same as resetting the rows by hand
    twin = make(env_id, 6, max_episode_steps=5)
    twin.reset(seed=0)
    twin.unwrapped.set_state(pending)
    twin_obs, _ = twin.reset(options={"reset_mask": done})
    np.testing.assert_array_equal(obs[done], twin_obs[done])


def test_same_step_final_obs_is_the_terminal_observation(env_id):
    kwargs = dict(max_episode_steps=HORIZON)
    same = make(env_id, 6, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
    nxt = make(env_id, 6, autoreset_mode=AutoresetMode.NEXT_STEP, **kwargs)
    same.reset(seed=8)
    nxt.reset(seed=8)
    finished = 0
    for a in actions_for(same, HORIZON + 2):
        o1, r1, te1, tr1, info = same.step(a)
        o2, r2, te2, tr2, _ = nxt.step(a)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(te1, te2)
        np.testing.assert_array_equal(tr1, tr2)
        done = te1 | tr1
        if done.any():
            finished += done.sum()
            np.testing.assert_array_equal(info["_final_obs"], done)
            for i in np.flatnonzero(done):
                np.testing.assert_array_equal(info["final_obs"][i], o2[i])
            nxt.reset(options={"reset_mask": done})  # keep the NEXT_STEP twin in lockstep
        np.testing.assert_array_equal(o1[~done], o2[~done])
    assert finished >= 6


def test_disabled_mode_lets_every_env_finish_once(env_id):
    env = make(env_id, 8, autoreset_mode=AutoresetMode.DISABLED)
    env.reset(seed=6)
    finished = np.zeros(8, dtype=bool)
    returns = np.zeros(8)
    for a in actions_for(env, HORIZON + 5):
        _, reward, terminated, truncated, _ = env.step(a)
        returns += reward
        assert not (finished & (terminated | truncated)).any(), "an env finished twice"
        assert (reward[finished] == 0).all()
        finished |= terminated | truncated
    assert finished.all()
    frozen = env.get_state()
    env.step(actions_for(env, 1)[0])
    np.testing.assert_array_equal(env.get_state(), frozen)


def test_record_episode_statistics_counts_lengths_and_returns(env_id):
    env = vw.RecordEpisodeStatistics(make(env_id, 5))
    env.reset(seed=11)
    length, ret = np.zeros(5, dtype=int), np.zeros(5)
    pending = np.zeros(5, dtype=bool)
    seen = 0
    for a in actions_for(env, 3 * HORIZON):
        _, reward, terminated, truncated, info = env.step(a)
        length[pending], ret[pending] = 0, 0.0  # NEXT_STEP: this step was the reset
        length[~pending] += 1
        ret += reward
        done = terminated | truncated
        if done.any():
            ep = info["episode"]
            np.testing.assert_array_equal(info["_episode"], done)
            np.testing.assert_array_equal(ep["l"][done], length[done])
            np.testing.assert_allclose(ep["r"][done], ret[done], rtol=1e-6)
            seen += done.sum()
        pending = done
    assert seen >= 5


def wrappers_for(env):
    """Every gymnasium.wrappers.vector wrapper that applies to ``env``'s spaces."""
    obs_space, act_space = env.single_observation_space, env.single_action_space
    out = {
        "TransformReward": lambda e: vw.TransformReward(e, lambda r: 2 * r),
        "ClipReward": lambda e: vw.ClipReward(e, -0.5, 0.5),
        "NormalizeReward": vw.NormalizeReward,
        "DictInfoToList": vw.DictInfoToList,
        "RecordEpisodeStatistics": vw.RecordEpisodeStatistics,
    }
    if isinstance(obs_space, spaces.Box):
        out.update({
            "TransformObservation": lambda e: vw.TransformObservation(e, lambda o: o * 2),
            "NormalizeObservation": vw.NormalizeObservation,
            "DtypeObservation": lambda e: vw.DtypeObservation(e, np.float64),
            "FlattenObservation": vw.FlattenObservation,
            "ReshapeObservation": lambda e: vw.ReshapeObservation(
                e, (int(np.prod(obs_space.shape)),)),
        })
        # RescaleObservation needs numbers it can scale: not bool observations (MinAtar)
        if (obs_space.dtype != np.bool_ and np.isfinite(obs_space.low).all()
                and np.isfinite(obs_space.high).all()):
            out["RescaleObservation"] = lambda e: vw.RescaleObservation(e, -2.0, 2.0)
    if isinstance(act_space, spaces.Box):
        out["ClipAction"] = vw.ClipAction
        out["RescaleAction"] = lambda e: vw.RescaleAction(e, -1.0, 1.0)
        out["TransformAction"] = lambda e: vw.TransformAction(e, lambda a: a)
    return out


def test_every_applicable_vector_wrapper_wraps_and_steps(env_id):
    base = make(env_id, 3)
    for name, wrap in wrappers_for(base).items():
        env = wrap(make(env_id, 3))
        obs, _ = env.reset(seed=0)
        raw = make(env_id, 3)
        raw_obs, _ = raw.reset(seed=0)
        assert obs.shape[0] == 3, name
        for a in actions_for(env, HORIZON + 2):
            obs, reward, terminated, truncated, info = env.step(a)
            raw_obs, raw_reward, raw_te, raw_tr, _ = raw.step(a)
            # wrappers transform values, never the episode structure
            np.testing.assert_array_equal(terminated, raw_te, err_msg=name)
            np.testing.assert_array_equal(truncated, raw_tr, err_msg=name)
            if name not in ("NormalizeObservation", "TransformObservation"):
                assert obs in env.observation_space, name
        if name == "TransformReward":
            np.testing.assert_array_equal(reward, 2 * raw_reward)
        if name == "ClipReward":
            np.testing.assert_array_equal(reward, np.clip(raw_reward, -0.5, 0.5))
        if name == "DictInfoToList":
            assert isinstance(info, list) and len(info) == 3
        env.close()


def test_numpy_to_torch_wrapper(env_id):
    torch = pytest.importorskip("torch")
    from gymnasium.wrappers.vector import NumpyToTorch

    env = NumpyToTorch(make(env_id, 3))
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.shape[0] == 3
    a = torch.as_tensor(actions_for(make(env_id, 3), 1)[0])
    obs, reward, terminated, truncated, _ = env.step(a)
    assert isinstance(reward, torch.Tensor) and reward.shape == (3,)


# --------------------------------------------------------------------- bad input
def bad_actions(env):
    """(description, actions, error type, text the message must contain)."""
    single, n = env.single_action_space, env.num_envs
    good = actions_for(env, 1)[0]
    cases = [
        ("wrong shape", np.concatenate([good, good]), ValueError, "shape"),
        ("missing env", good[:-1], ValueError, "shape"),
        ("strings", np.array(["x"] * n), TypeError, "dtype"),
    ]
    if isinstance(single, spaces.Discrete):
        bad = good.copy()
        bad[2] = single.start + single.n
        cases += [("out of range", bad, ValueError, "[2]"),
                  ("negative", np.where(np.arange(n) == 1, -1, good), ValueError, "[1]"),
                  ("floats", good.astype(np.float64), TypeError, "integer")]
    elif isinstance(single, spaces.MultiDiscrete):
        bad = good.copy()
        bad[2].flat[0] = single.nvec.flat[0]
        cases += [("out of range", bad, ValueError, "[2]")]
    else:
        nan = good.astype(np.float64)
        nan[1].flat[0] = np.nan
        inf = good.astype(np.float64)
        inf[3].flat[0] = -np.inf
        cases += [("NaN", nan, ValueError, "[1]"), ("inf", inf, ValueError, "[3]")]
    return cases


def test_bad_actions_raise_naming_the_envs_and_change_nothing(env_id):
    env = make(env_id, 5)
    env.reset(seed=3)
    rollout(env, actions_for(env, 4))
    before = env.get_state()
    for what, actions, error, text in bad_actions(env):
        with pytest.raises(error) as caught:
            env.step(actions)
        assert text in str(caught.value), (what, str(caught.value))
        assert "action" in str(caught.value)
        np.testing.assert_array_equal(env.get_state(), before, err_msg=what)


def test_call_order_errors(env_id):
    env = make(env_id, 2)
    a = actions_for(env, 1)[0]
    with pytest.raises(batchenv.StepBeforeResetError, match="reset"):
        env.step(a)
    with pytest.raises(ValueError, match="reset"):  # also a ValueError
        env.step(a)
    env.reset(seed=0)
    env.step(a)
    env.close()
    for call in (lambda: env.step(a), lambda: env.reset(), lambda: env.get_state()):
        with pytest.raises(batchenv.ClosedEnvError, match="closed"):
            call()
    env.close()  # closing twice is fine


@pytest.mark.parametrize("options, error, text", [
    ({"reset_mask": [True, False, True]}, TypeError, "numpy array"),
    ({"reset_mask": np.array([1, 0, 1])}, TypeError, "dtype bool"),
    ({"reset_mask": np.array([True, False])}, ValueError, "shape (3,)"),
    ({"reset_mask": np.zeros(3, dtype=bool)}, ValueError, "at least one True"),
    ({"mask": np.ones(3, dtype=bool)}, ValueError, "unknown keys"),
    ("reset_mask", TypeError, "dict"),
])
def test_bad_reset_options_raise_and_change_nothing(env_id, options, error, text):
    env = make(env_id, 3)
    env.reset(seed=0)
    rollout(env, actions_for(env, 3))
    before = env.get_state()
    with pytest.raises(error) as caught:
        env.reset(options=options)
    assert text in str(caught.value)
    np.testing.assert_array_equal(env.get_state(), before)


@pytest.mark.parametrize("seed, error, text", [
    (-1, ValueError, "seed"),
    (2**63, ValueError, "seed"),
    (1.5, TypeError, "seed"),
    (True, TypeError, "seed"),
    ("7", TypeError, "seed"),
    ([1, 2], ValueError, "num_envs=3"),
    ([1, -2, None], ValueError, "[1]"),
])
def test_bad_seeds_raise_and_change_nothing(env_id, seed, error, text):
    env = make(env_id, 3)
    env.reset(seed=0)
    before = env.get_state()
    with pytest.raises(error) as caught:
        env.reset(seed=seed)
    assert text in str(caught.value)
    np.testing.assert_array_equal(env.get_state(), before)
