"""The :class:`AsyncEnv` protocol: environments whose ``reset``/``step`` are coroutines."""

from __future__ import annotations

from typing import Any, Generic

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.core import ActType, ObsType
from gymnasium.utils import seeding


class AsyncEnv(Generic[ObsType, ActType]):
    """Optional base class for envs whose ``reset`` and ``step`` are coroutines (``render``
    and ``close`` may be too); ``docs/concurrency.md`` has the protocol and an example. As in
    :class:`gymnasium.Env`, ``await super().reset(seed=seed)`` seeds :attr:`np_random`."""

    metadata: dict[str, Any] = {"render_modes": []}
    render_mode: str | None = None
    spec: Any = None
    action_space: spaces.Space
    observation_space: spaces.Space
    _np_random: np.random.Generator | None = None
    _np_random_seed: int | None = None
    # gymnasium.Env's (they only touch the attributes above; unwrapped is the env itself):
    np_random, np_random_seed = gym.Env.np_random, gym.Env.np_random_seed
    unwrapped, __str__ = gym.Env.unwrapped, gym.Env.__str__
    get_wrapper_attr, set_wrapper_attr = gym.Env.get_wrapper_attr, gym.Env.set_wrapper_attr
    has_wrapper_attr = gym.Env.has_wrapper_attr

    async def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
                    ) -> tuple[ObsType, dict[str, Any]]:
        """Reset the env: ``(obs, info)``; the base implementation only seeds
        :attr:`np_random`."""
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        return None  # type: ignore[return-value]  # subclasses return (obs, info)

    async def step(self, action: ActType) -> tuple[ObsType, Any, bool, bool, dict[str, Any]]:
        """Advance the env by one step: ``(obs, reward, terminated, truncated, info)``."""
        raise NotImplementedError(f"{type(self).__name__}.step is not implemented")

    async def render(self) -> Any:
        return None

    async def close(self) -> None:
        pass
