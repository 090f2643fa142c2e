"""Valid ranges declared in the schema (``Range``, ``state_ranges``) and state fields returned
in ``info`` (``info_fields``), for both kernel forms and the sharded env."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
import pytest
from gymnasium import spaces

import batchenv
from batchenv import perenv
from batchenv.state import Field, Range, State, ranges

WIDTH = 4
ENDS_AT = 3  # an episode's length


class CounterState(State):
    x: Annotated[Field[np.int8], Range(0, "width - 1")]  # a position, read as an index
    grid: Annotated[Field[np.uint8], (3,), Range(0, 5)]
    count: Field[np.int32]  # steps in the episode (no range: any value is safe)


class Counter(batchenv.BatchEnv[CounterState]):
    """Moves x right by the action; the episode ends after ENDS_AT steps."""

    state_type = CounterState
    info_fields = {"steps": "count", "x": "x"}
    single_action_space = spaces.Discrete(2)
    single_observation_space = spaces.Box(0, WIDTH, (1,), np.float32)
    width = WIDTH

    def reset_envs(self, s: CounterState, rng: Any) -> None:
        s.x[:] = rng.integers(0, 2)
        s.grid[:] = 0
        s.count[:] = 0

    def step_envs(self, s: CounterState, action: np.ndarray, rng: Any
                  ) -> tuple[np.ndarray, np.ndarray]:
        s.x[:] = np.minimum(s.x + action, self.width - 1)
        s.count += 1
        return np.zeros(len(action)), s.count >= ENDS_AT

    def observe(self, s: CounterState, out: np.ndarray) -> None:
        out[:, 0] = s.x


class PerEnvCounter(batchenv.BatchEnv[CounterState]):
    """Counter's rules as per-env kernels."""

    state_type = CounterState
    info_fields = ("count", "x")
    single_action_space = spaces.Discrete(2)
    single_observation_space = spaces.Box(0, WIDTH, (1,), np.float32)
    width = WIDTH

    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        s.x[i] = perenv.integers(s, i, 0, 2)
        for j in range(3):
            s.grid[i, j] = 0
        s.count[i] = 0

    @staticmethod
    def step_env(p: Any, s: Any, i: int, action: int) -> tuple[float, bool]:
        s.x[i] = min(s.x[i] + action, WIDTH - 1)
        s.count[i] += 1
        return 0.0, s.count[i] >= ENDS_AT

    @staticmethod
    def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
        obs[0] = s.x[i]


def test_ranges_come_from_annotations_and_state_ranges() -> None:
    assert ranges(CounterState) == {"x": Range(0, "width - 1"), "grid": Range(0, 5)}
    env = Counter(2)
    assert env.state_field_ranges["x"].resolve(env) == (0, WIDTH - 1)

    class Declared(Counter):
        state_ranges = {"count": (0, None), "grid": Range(1, 2)}

    assert ranges(Declared) == {"x": Range(0, "width - 1"), "grid": Range(1, 2),
                                "count": Range(0, None)}


def test_set_state_refuses_values_outside_a_range_and_changes_nothing() -> None:
    env = Counter(4)
    env.reset(seed=0)
    before = env.get_state()
    bad = before.copy()
    bad["x"][1] = WIDTH  # one past the last column
    bad["grid"][3, 2] = 6
    with pytest.raises(ValueError) as e:
        env.set_state(bad)
    message = str(e.value)
    assert "field 'x' outside [0, 3] (e.g. 4) at env indices [1]" in message
    assert "field 'grid' outside [0, 5] (e.g. 6) at env indices [3]" in message
    np.testing.assert_array_equal(env.get_state(), before)
    ok = before.copy()
    ok["x"][:] = WIDTH - 1  # the bounds themselves are inside
    env.set_state(ok)
    np.testing.assert_array_equal(env.state.x, WIDTH - 1)


def test_a_masked_set_state_names_batch_env_indices() -> None:
    env = Counter(4)
    env.reset(seed=0)
    records = env.get_state()[[1, 3]]
    records["x"][1] = -1
    mask = np.array([False, True, False, True])
    with pytest.raises(ValueError, match=r"field 'x' outside \[0, 3\] \(e.g. -1\) at env "
                                         r"indices \[3\]"):
        env.set_state(records, mask)


def test_a_bound_naming_an_attribute_follows_it() -> None:
    env = Counter(2)
    env.reset(seed=0)
    records = env.get_state()
    records["x"][:] = WIDTH  # outside while width is WIDTH
    with pytest.raises(ValueError, match="field 'x'"):
        env.set_state(records)
    env.width = WIDTH + 1
    env.set_state(records)
    np.testing.assert_array_equal(env.state.x, WIDTH)


def test_ranges_must_name_fields_and_attributes() -> None:
    class Typo(Counter):
        state_ranges = {"xx": (0, 1)}

    with pytest.raises(TypeError, match="'xx', which is not a state field"):
        Typo(1)

    class Missing(Counter):
        state_ranges = {"x": Range(0, "height")}

    with pytest.raises(TypeError, match="names an attribute the env does not have"):
        Missing(1)

    with pytest.raises(TypeError, match="'width - 1'|e.g. 'width - 1'"):
        Range(0, "width * 2").resolve(Counter(1))


def _episode(env: batchenv.BatchEnv, steps: int) -> list[dict[str, Any]]:
    _, info = env.reset(seed=3)
    infos = [info]
    for _ in range(steps):
        infos.append(env.step(np.ones(env.num_envs, dtype=np.int64))[4])
    return infos


@pytest.mark.parametrize("cls", [Counter, PerEnvCounter])
def test_info_fields_hold_the_finished_episode_on_its_last_step(cls: type) -> None:
    env = cls(3, autoreset_mode="NextStep")
    key = "steps" if cls is Counter else "count"
    infos = _episode(env, ENDS_AT + 1)
    np.testing.assert_array_equal(infos[0][key], 0)
    assert infos[0][f"_{key}"].all() and infos[0][f"_{key}"].shape == (3,)
    for t in range(1, ENDS_AT + 1):  # the last of these ends the episode
        np.testing.assert_array_equal(infos[t][key], t)
    np.testing.assert_array_equal(infos[ENDS_AT]["x"], env.state.x * 0 + np.minimum(
        infos[0]["x"] + ENDS_AT, WIDTH - 1))
    np.testing.assert_array_equal(infos[ENDS_AT + 1][key], 0)  # the reset step
    assert infos[1][key] is not env.state.count  # a copy


@pytest.mark.parametrize("cls", [Counter, PerEnvCounter])
def test_same_step_final_info_holds_the_ended_episodes_fields(cls: type) -> None:
    env = cls(3, autoreset_mode="SameStep")
    key = "steps" if cls is Counter else "count"
    infos = _episode(env, ENDS_AT)
    last = infos[ENDS_AT]
    np.testing.assert_array_equal(last[key], 0)  # the new episodes
    final = last["final_info"]
    np.testing.assert_array_equal(final[key], ENDS_AT)
    np.testing.assert_array_equal(final[f"_{key}"], True)
    np.testing.assert_array_equal(final["x"], np.minimum(infos[0]["x"] + ENDS_AT, WIDTH - 1))
    assert "final_info" not in infos[ENDS_AT - 1]


def test_sharded_info_fields_equal_the_unsharded_env() -> None:
    whole = Counter(6, autoreset_mode="SameStep")
    sharded = batchenv.ShardedVectorEnv(Counter, 6, num_workers=2, local_shard=True,
                                        autoreset_mode="SameStep")
    try:
        for a, b in zip(_episode(whole, ENDS_AT), _episode(sharded, ENDS_AT)):
            for key in ("steps", "x"):
                np.testing.assert_array_equal(a[key], b[key])
            if "final_info" in a:
                np.testing.assert_array_equal(a["final_info"]["steps"],
                                              b["final_info"]["steps"])
    finally:
        sharded.close()


def test_info_fields_must_be_state_fields() -> None:
    class Wrong(Counter):
        info_fields = ("count", "speed")

    with pytest.raises(TypeError, match=r"info_fields names \['speed'\]"):
        Wrong(1)
