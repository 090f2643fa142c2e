"""``register`` (one declaration per id, read by ``list_envs``, ``make``, ``make_vec`` and the
docs generator) and typed state schemas (``State`` subclasses with annotated fields)."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path
from typing import Annotated

import gymnasium as gym
import numpy as np
import pytest

import batchenv
from batchenv import registration
from batchenv.core import BASE_FIELDS, BatchEnv
from batchenv.state import Field, State, schema, take_rows
from batchenv.testing import CounterEnv


@pytest.fixture
def declared():
    """Ids declared by a test, removed again afterwards (from ours and Gymnasium's)."""
    ids: list[str] = []
    yield ids
    for env_id in ids:
        entry = registration.registry.pop(env_id)
        registration._BY_GYMNASIUM_ID.pop(entry.gymnasium_id, None)
        gym.registry.pop(env_id, None)


def test_one_declaration_feeds_list_envs_make_and_make_vec(declared):
    for version, limit in (("v0", 2), ("v1", 4)):
        registration.register(CounterEnv, f"batchenv/TestCounter-{version}",
                              gymnasium_id=f"TestCounterTwin-{version}",
                              kwargs={"max_count": limit}, docs_page="test_counter")
        declared.append(f"batchenv/TestCounter-{version}")
    batchenv.register_envs()
    assert {"batchenv/TestCounter-v0", "batchenv/TestCounter-v1"} <= set(batchenv.list_envs())
    entry = batchenv.registry["batchenv/TestCounter-v1"]
    assert entry.max_episode_steps is None  # CounterEnv's default_max_episode_steps
    for env in (batchenv.make("batchenv/TestCounter-v1", 3),
                batchenv.make("TestCounterTwin-v1", 3),  # the twin's id maps to ours
                gym.make_vec("batchenv/TestCounter-v1", num_envs=3,
                             vectorization_mode="vector_entry_point")):
        assert isinstance(env, CounterEnv) and env.num_envs == 3
        env.reset(seed=0)
        ends = [bool(env.step(np.zeros(3, dtype=np.int64))[2].all()) for _ in range(4)]
        assert ends == [False, False, False, True]  # max_count=4, from the declaration
    short = batchenv.make("batchenv/TestCounter-v0", 2, max_count=3)  # call keywords win
    short.reset(seed=0)
    assert [bool(short.step(np.zeros(2, dtype=np.int64))[2].all()) for _ in range(3)] == [
        False, False, True]


def test_register_refuses_a_second_meaning_for_an_id(declared):
    registration.register(CounterEnv, "batchenv/TestCounter-v0", kwargs={"max_count": 2})
    declared.append("batchenv/TestCounter-v0")
    registration.register(CounterEnv, "batchenv/TestCounter-v0", kwargs={"max_count": 2})
    with pytest.raises(ValueError, match="TestCounter-v0.*already declared"):
        registration.register(CounterEnv, "batchenv/TestCounter-v0", kwargs={"max_count": 5})
    with pytest.raises(ValueError, match="CartPole-v1.*already declared"):
        registration.register(CounterEnv, "batchenv/TestCounter-v9",
                              gymnasium_id="CartPole-v1")
    assert "batchenv/TestCounter-v9" not in batchenv.registry


def test_docs_pages_come_from_the_declarations():
    path = Path(__file__).resolve().parents[1] / "docs" / "envs" / "generate.py"
    spec = importlib.util.spec_from_file_location("generate_env_docs_registry", path)
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    pages = generate.pages()
    assert {name: [e.id for e in entries] for name, entries in pages.items()} == {
        "cartpole": ["batchenv/CartPole-v1"], "mountain_car": ["batchenv/MountainCar-v0"],
        "mountain_car_continuous": ["batchenv/MountainCarContinuous-v0"],
        "acrobot": ["batchenv/Acrobot-v1"], "pendulum": ["batchenv/Pendulum-v1"]}
    assert generate.params_class(batchenv.BatchPendulum) is batchenv.PendulumParams


class _Grid(State):
    x: Field[np.float32]  # one float per env
    n: Field[np.int8]
    grid: Annotated[Field[np.uint8], (2, 3)]  # a (2, 3) block per env


class _MoreGrid(_Grid):
    flag: Field[np.bool_]


def test_schema_reads_the_annotations_in_order():
    assert schema(_Grid) == np.dtype([("x", np.float32), ("n", np.int8),
                                      ("grid", np.uint8, (2, 3))])
    assert _MoreGrid.schema() == np.dtype([("x", np.float32), ("n", np.int8),
                                           ("grid", np.uint8, (2, 3)), ("flag", np.bool_)])

    class Bad(State):
        x: float

    with pytest.raises(TypeError, match=r"Bad\.x: annotate state fields as Field"):
        schema(Bad)
    with pytest.raises(TypeError, match="declares no fields"):
        schema(State)


class _GridEnv(BatchEnv[_Grid]):
    state_type = _Grid
    single_action_space = gym.spaces.Discrete(2)
    single_observation_space = gym.spaces.Box(0, 255, (2, 3), np.uint8)

    def reset_envs(self, s: _Grid, rng) -> None:
        s.grid[...] = (rng.random() * 10).astype(np.uint8)[:, None, None]
        s.x[:] = 0.5

    def step_envs(self, s: _Grid, action, rng):
        s.grid += action.astype(np.uint8)[:, None, None]
        return s.x.astype(np.float64), np.zeros(len(action), dtype=bool)

    def observe(self, s: _Grid, out) -> None:
        out[...] = s.grid


def test_a_typed_state_makes_the_dtype_and_is_what_kernels_get():
    assert _GridEnv.state_dtype == schema(_Grid)
    env = _GridEnv(4)
    obs, _ = env.reset(seed=1)
    assert type(env.state) is _Grid and env.state.grid.shape == (4, 2, 3)
    obs2 = env.step(np.array([1, 0, 1, 0]))[0]
    np.testing.assert_array_equal(obs2.astype(int) - obs, np.array([1, 0, 1, 0])[:, None, None]
                                  * np.ones((4, 2, 3), dtype=int))
    assert type(take_rows(env.state, np.array([2]))) is _Grid
    again = pickle.loads(pickle.dumps(env))
    assert type(again.state) is _Grid
    np.testing.assert_array_equal(again.state.grid, env.state.grid)
    assert env.get_state().dtype == np.dtype(_Grid.schema().descr + BASE_FIELDS)
