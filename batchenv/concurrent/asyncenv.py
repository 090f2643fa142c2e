"""The :class:`AsyncEnv` protocol: environments whose ``reset``/``step`` are coroutines."""

from __future__ import annotations

from typing import Any, Generic

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.core import ActType, ObsType
from gymnasium.utils import seeding


class AsyncEnv(Generic[ObsType, ActType]):
    """Base class for environments whose ``reset``/``step``/``render``/``close`` are coroutines.

    The protocol :class:`ConcurrentVectorEnv` relies on (duck-typed: subclassing is optional):

    * ``async def reset(self, *, seed=None, options=None) -> (obs, info)``
    * ``async def step(self, action) -> (obs, reward, terminated, truncated, info)``
    * ``render()`` and ``close()``, each either ``async def`` or a plain method;
    * attributes ``action_space``, ``observation_space`` and optionally ``metadata``,
      ``render_mode``, ``spec``.

    An env counts as asynchronous when its ``step`` is a coroutine function; its ``reset``
    must then be one too. The coroutines always run on the ConcurrentVectorEnv's private event
    loop (never on the caller's), so resources created in them stay valid between calls. For
    asynchronous set-up, pass an ``async def`` factory in ``env_fns`` (awaited on that loop)
    or connect lazily in ``reset``. As in :class:`gymnasium.Env`, call
    ``await super().reset(seed=seed)`` first in ``reset`` to seed :attr:`np_random`.
    ``docs/concurrency.md`` has a complete example.
    """

    metadata: dict[str, Any] = {"render_modes": []}
    render_mode: str | None = None
    spec: Any = None
    action_space: spaces.Space
    observation_space: spaces.Space
    _np_random: np.random.Generator | None = None
    _np_random_seed: int | None = None
    # The same as gymnasium.Env's (they only touch the attributes above):
    np_random = gym.Env.np_random
    np_random_seed = gym.Env.np_random_seed
    get_wrapper_attr = gym.Env.get_wrapper_attr
    has_wrapper_attr = gym.Env.has_wrapper_attr
    set_wrapper_attr = gym.Env.set_wrapper_attr
    __str__ = gym.Env.__str__

    async def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
                    ) -> tuple[ObsType, dict[str, Any]]:
        """Reset the env; the base implementation only seeds :attr:`np_random`."""
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        return None  # type: ignore[return-value]  # subclasses return (obs, info)

    async def step(self, action: ActType) -> tuple[ObsType, Any, bool, bool, dict[str, Any]]:
        """Advance the env by one step."""
        raise NotImplementedError(f"{type(self).__name__}.step is not implemented")

    async def render(self) -> Any:
        """Return a frame according to ``render_mode`` (``None`` by default)."""
        return None

    async def close(self) -> None:
        """Release the env's resources."""

    @property
    def unwrapped(self) -> AsyncEnv:
        """The env itself (there are no async wrappers)."""
        return self
