"""Tiny envs for testing and measuring the base class (and your own RL code).

* :class:`CounterEnv` — the counter env of Gymnasium's auto-reset tests, batched: the
  observation counts steps, the reward is the action, an episode terminates when the count
  reaches the env's ``max_count``.
* :class:`NullEnv` — empty kernels: what is left of a step is the base class's own cost.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from batchenv.core import BatchEnv
from batchenv.random import BatchRandom
from batchenv.state import Field, State

__all__ = ["CounterEnv", "NullEnv"]


class CounterState(State):
    count: Field[np.int64]  # steps since reset
    max_count: Field[np.int64]  # the episode terminates when count reaches it


class CounterEnv(BatchEnv[CounterState]):
    """Observation: steps since reset (``Discrete(max_obs)``). Action: ``Discrete(5)``; the
    reward equals the action. Terminated when the count reaches ``max_count`` (one value per
    env, or one for all)."""

    state_type = CounterState
    single_action_space = spaces.Discrete(5)

    def __init__(self, num_envs: int | None = None, *, max_count: Any = 3,
                 max_obs: int = 64, **kwargs: Any) -> None:
        self.single_observation_space = spaces.Discrete(max_obs)
        self._max_count = np.asarray(max_count, dtype=np.int64)
        super().__init__(num_envs, **kwargs)
        self.state.max_count[:] = self._max_count

    def reset_envs(self, s: CounterState, rng: BatchRandom) -> None:
        s.count[:] = 0

    def step_envs(self, s: CounterState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        s.count += 1
        return action, s.count == s.max_count

    def observe(self, s: CounterState, out: np.ndarray) -> None:
        out[...] = s.count


class NullEnv(BatchEnv):
    """Does nothing: one ``int8`` of state, observation always 0, reward 0, never ends."""

    state_dtype = np.dtype([("nothing", np.int8)])
    single_action_space = spaces.Discrete(2)
    single_observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)
        self._zeros = np.zeros(self.num_envs, dtype=np.float64)
        self._never = np.zeros(self.num_envs, dtype=np.bool_)

    def reset_envs(self, s: State, rng: BatchRandom) -> None:
        pass

    def step_envs(self, s: State, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        return self._zeros, self._never

    def observe(self, s: State, out: np.ndarray) -> None:
        out.fill(0)  # every entry, every call: the buffer may be fresh
