"""``batchenv.adapters.pettingzoo``: two-player BatchPong as a PettingZoo ``ParallelEnv``
(PettingZoo's own API and seed tests, and step by step row 0 of a two-player batch), and
``agents_as_envs``, N games as a vector env of N*2 single-agent rows, checked row by row
against the batch it wraps."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import parallel_api_test, parallel_seed_test

from batchenv import BatchPong
from batchenv.adapters.pettingzoo import agents_as_envs, is_multi_agent, parallel_env


@pytest.mark.parametrize("kwargs", [{"points_to_win": 1}, {"obs_type": "pixels"},
                                    {"mode": "rally"}],
                         ids=["state", "pixels", "rally"])
def test_pettingzoo_parallel_api_and_seed_tests_pass(kwargs):
    env = parallel_env("batchenv/Pong-v0", **kwargs)
    assert env.possible_agents == ["left", "right"]
    with warnings.catch_warnings(record=True) as caught:  # the test's complaints warn
        warnings.simplefilter("always")
        parallel_api_test(env, num_cycles=300)
    assert not [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    parallel_seed_test(lambda: parallel_env("batchenv/Pong-v0", **kwargs))


def test_parallel_env_is_row_0_of_a_two_player_batch_step_by_step():
    """Same seed, same actions: the left agent sees row 0, the right agent row 0 mirrored;
    rewards zero-sum Python floats; the game's end ends every agent."""
    env = parallel_env("batchenv/Pong-v0", points_to_win=2)
    batch = BatchPong(3, mode="two_player", points_to_win=2, autoreset_mode="Disabled")
    obs, infos = env.reset(seed=4)
    bobs, _ = batch.reset(seed=4)
    assert set(obs) == set(infos) == {"left", "right"}
    rng = np.random.default_rng(0)
    scored = 0
    for _ in range(2000):
        actions = rng.integers(0, 3, (3, 2))
        obs, rewards, terms, truncs, infos = env.step(
            {"left": actions[0, 0], "right": actions[0, 1]})
        bobs, breward, bterm, btrunc, _ = batch.step(actions)
        np.testing.assert_array_equal(obs["left"], bobs[0])
        np.testing.assert_array_equal(obs["right"], BatchPong.mirror_obs(bobs[:1])[0])
        assert type(rewards["left"]) is float
        assert rewards == {"left": float(breward[0]), "right": -float(breward[0])}
        assert terms == {"left": bool(bterm[0]), "right": bool(bterm[0])}
        assert truncs == {"left": bool(btrunc[0]), "right": bool(btrunc[0])}
        scored += rewards["left"] != 0
        if bterm[0] or btrunc[0]:
            assert env.agents == []
            break
        assert env.agents == ["left", "right"]
    assert bterm[0] and scored >= 2
    with pytest.raises(ValueError, match="no live agent"):
        env.step({"left": 0, "right": 0})
    env.reset(seed=4)
    with pytest.raises(ValueError, match=r"missing \['right'\]"):
        env.step({"left": 0})


def test_spaces_are_one_column_of_the_batch_action_each():
    env = parallel_env("batchenv/Pong-v0", obs_type="pixels")
    assert env.action_space("left") == spaces.Discrete(3)
    assert env.action_space("right") is env.action_space("right")
    assert env.observation_space("left").shape == (84, 84)
    env.reset(seed=0)
    assert env.state().shape == (84, 84)


def test_single_agent_envs_are_refused():
    assert not is_multi_agent(BatchPong(1))
    with pytest.raises(TypeError, match="not multi-agent"):
        parallel_env("batchenv/Pong-v0", mode="cpu")
    with pytest.raises(TypeError, match="not multi-agent"):
        parallel_env("batchenv/CartPole-v1")
    with pytest.raises(TypeError, match="without auto-reset"):
        parallel_env("batchenv/Pong-v0", num_envs=4)
    with pytest.raises(TypeError, match="not multi-agent"):
        agents_as_envs(BatchPong(2))


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_agents_as_envs_rows_are_each_agents_view_of_the_batch(mode):
    """Row i*2 is game i's left player, row i*2+1 its right player (mirrored view, negated
    reward); the actions reach the right columns; SAME_STEP's final observations are each
    agent's view of the game's last observation."""
    games = 3
    kwargs = {"mode": "two_player", "points_to_win": 1, "autoreset_mode": mode}
    env = agents_as_envs(BatchPong(games, **kwargs))
    twin = BatchPong(games, **kwargs)
    assert env.num_envs == 2 * games and env.single_action_space == spaces.Discrete(3)
    obs, _ = env.reset(seed=9)
    tobs, _ = twin.reset(seed=9)
    np.testing.assert_array_equal(obs[0::2], tobs)
    np.testing.assert_array_equal(obs[1::2], BatchPong.mirror_obs(tobs))
    rng = np.random.default_rng(1)
    finals = 0
    for _ in range(300):
        actions = rng.integers(0, 3, 2 * games)
        obs, reward, term, trunc, info = env.step(actions)
        tobs, treward, tterm, ttrunc, tinfo = twin.step(actions.reshape(games, 2))
        np.testing.assert_array_equal(obs[0::2], tobs)
        np.testing.assert_array_equal(obs[1::2], BatchPong.mirror_obs(tobs))
        np.testing.assert_array_equal(reward[0::2], treward)
        np.testing.assert_array_equal(reward[1::2], -treward)
        np.testing.assert_array_equal(term, np.repeat(tterm, 2))
        np.testing.assert_array_equal(trunc, np.repeat(ttrunc, 2))
        if "final_obs" in tinfo:
            for g in np.flatnonzero(tinfo["_final_obs"]):
                last = tinfo["final_obs"][g]
                np.testing.assert_array_equal(info["final_obs"][2 * g], last)
                np.testing.assert_array_equal(info["final_obs"][2 * g + 1],
                                              BatchPong.mirror_obs(last[None])[0])
                finals += 1
            np.testing.assert_array_equal(info["_final_obs"], np.repeat(tinfo["_final_obs"], 2))
    assert finals or mode == "NextStep"


def test_agents_as_envs_resets_whole_games_only():
    env = agents_as_envs(BatchPong(2, mode="two_player"))
    env.reset(seed=0)
    env.reset(options={"reset_mask": np.array([True, True, False, False])})
    with pytest.raises(ValueError, match="every agent of a game together"):
        env.reset(options={"reset_mask": np.array([True, False, False, False])})
    with pytest.raises(ValueError, match="one row per agent of every game"):
        env.step(np.zeros(2, np.int64))


def test_closing_an_agents_as_envs_whose_constructor_raised_is_quiet():
    """Gymnasium 1.1's VectorEnv.__del__ closes an object whose __init__ raised: close()
    then finds no env to close and must not raise."""
    from batchenv.adapters.pettingzoo import AgentsAsEnvs

    half_made = AgentsAsEnvs.__new__(AgentsAsEnvs)
    half_made.close()
    assert half_made.closed
