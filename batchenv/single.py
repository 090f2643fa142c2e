"""``SingleEnv``: one env of a batched env behind ``gymnasium.Env``, so that every native id
also works with ``gymnasium.make(id)`` (the tools that build single envs from an id:
RLlib's default vectorization, TorchRL's ``GymEnv``, SB3's ``make_vec_env``, evaluation and
render scripts).

It is a batch of one: the same rules, the same seeding (``make(id).reset(seed=s)`` gives row 0
of a batch reset with ``s``), no auto-reset (the batch runs ``DISABLED``: call ``reset`` when an
episode ends, as with any Gymnasium env). ``gymnasium.make`` applies the id's time limit
(``TimeLimit``), so the batch itself runs without one.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from batchenv.core import BatchEnv

__all__ = ["SingleEnv"]


class SingleEnv(gym.Env):
    """One env of ``batch_class``: a ``batch_class(num_envs=1, ...)`` behind ``gymnasium.Env``.

    Args:
        batch_class: a :class:`~batchenv.core.BatchEnv` subclass, or its ``"module:Class"``.
        render_mode: as the batched class (``render()`` returns env 0's frame).
        max_episode_steps: the batch's time limit (default ``None``: ``gymnasium.make``
            wraps the env in ``TimeLimit`` with the id's limit instead).
        **kwargs: the batched class's constructor keywords (not ``num_envs`` or
            ``autoreset_mode``). ``reward_dtype`` defaults to ``np.float64`` here: the reward
            is returned as a Python float, as Gymnasium's envs return it, at full precision.
    """

    def __init__(self, batch_class: type[BatchEnv] | str, *, render_mode: str | None = None,
                 max_episode_steps: int | None = None, **kwargs: Any) -> None:
        if isinstance(batch_class, str):
            module, name = batch_class.split(":")
            batch_class = getattr(importlib.import_module(module), name)
        if not (isinstance(batch_class, type) and issubclass(batch_class, BatchEnv)):
            raise TypeError(f"batch_class must be a BatchEnv subclass or its 'module:Class', "
                            f"got {batch_class!r}")
        for taken in ("num_envs", "n", "autoreset_mode"):
            if taken in kwargs:
                raise TypeError(f"SingleEnv runs a batch of one without auto-reset: "
                                f"{taken!r} cannot be given")
        kwargs.setdefault("reward_dtype", np.float64)
        self.batch = batch_class(num_envs=1, autoreset_mode="Disabled", render_mode=render_mode,
                                 max_episode_steps=max_episode_steps, **kwargs)
        self.action_space = self.batch.single_action_space
        self.observation_space = self.batch.single_observation_space
        self.render_mode = render_mode
        self.metadata = {k: v for k, v in type(self.batch).metadata.items()
                         if k != "autoreset_mode"}
        self._discrete_obs = isinstance(self.observation_space, spaces.Discrete)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        """Start an episode; ``seed=s`` gives the same start as row 0 of a batch reset with
        ``s``. ``options`` is accepted for the Gymnasium signature and must be empty."""
        if options:
            raise ValueError(f"SingleEnv.reset takes no options, got keys {sorted(options)}")
        super().reset(seed=seed)  # Env's np_random, which the batch does not use
        obs, info = self.batch.reset(seed=seed)
        return self._row(obs), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One step of the env (an action of ``action_space``)."""
        obs, reward, terminated, truncated, info = self.batch._step_one(action)
        return (int(obs) if self._discrete_obs else obs), reward, terminated, truncated, info

    def render(self) -> Any:
        """Env 0's frame (``None`` without a ``render_mode``)."""
        frames = self.batch.render()
        return None if frames is None else frames[0]

    def close(self) -> None:
        self.batch.close()

    def _row(self, obs: np.ndarray) -> Any:
        return int(obs[0]) if self._discrete_obs else obs[0]
