"""The :class:`AsyncEnv` protocol: environments whose ``reset``/``step`` are coroutines."""

from __future__ import annotations

from typing import Any, Generic

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
    loop (never on the caller's), so resources created in them stay valid between calls. To do
    asynchronous set-up, pass an ``async def`` factory in ``env_fns`` (it is awaited on that
    loop) or connect lazily in ``reset``.

    Like :class:`gymnasium.Env`, call ``await super().reset(seed=seed)`` first in ``reset`` to
    seed :attr:`np_random`.

    Example::

        class RemoteEnv(AsyncEnv):
            action_space = spaces.Discrete(2)
            observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)

            async def reset(self, *, seed=None, options=None):
                await super().reset(seed=seed)
                obs = await self.client.request("reset")
                return obs, {}

            async def step(self, action):
                obs, reward, done = await self.client.request("step", int(action))
                return obs, reward, done, False, {}
    """

    metadata: dict[str, Any] = {"render_modes": []}
    render_mode: str | None = None
    spec: Any = None
    action_space: spaces.Space
    observation_space: spaces.Space

    _np_random: np.random.Generator | None = None
    _np_random_seed: int | None = None

    async def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
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
    def np_random(self) -> np.random.Generator:
        """The env's random generator, seeded by ``reset(seed=...)``."""
        if self._np_random is None:
            self._np_random, self._np_random_seed = seeding.np_random()
        return self._np_random

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self._np_random = value
        self._np_random_seed = -1

    @property
    def np_random_seed(self) -> int:
        """The seed of :attr:`np_random` (-1 when it was set directly)."""
        if self._np_random_seed is None:
            self._np_random, self._np_random_seed = seeding.np_random()
        return self._np_random_seed

    @property
    def unwrapped(self) -> AsyncEnv:
        """The env itself (there are no async wrappers)."""
        return self

    def get_wrapper_attr(self, name: str) -> Any:
        """Get an attribute (same contract as :meth:`gymnasium.Env.get_wrapper_attr`)."""
        return getattr(self, name)

    def has_wrapper_attr(self, name: str) -> bool:
        """Whether the env has the attribute ``name``."""
        return hasattr(self, name)

    def set_wrapper_attr(self, name: str, value: Any, *, force: bool = True) -> bool:
        """Set an attribute (same contract as :meth:`gymnasium.Env.set_wrapper_attr`)."""
        if force or hasattr(self, name):
            setattr(self, name, value)
            return True
        return False

    def __str__(self) -> str:
        return f"<{type(self).__name__} instance>"
