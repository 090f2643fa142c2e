"""EnvPool's asynchronous API (``async_reset``/``send``/``recv``) on a vector env that steps
every env at once, for scripts written against EnvPool (CleanRL's ``ppo_atari_envpool.py``):
``send`` steps, ``recv`` returns the result. Used by ``BatchEnv`` and
``ConcurrentVectorEnv``; ``ShardedVectorEnv`` has its own, double-buffered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

__all__ = ["EnvPoolAPI"]


class EnvPoolAPI:
    """Mixin for a ``VectorEnv`` (it uses ``reset``, ``step`` and ``num_envs``)."""

    num_envs: int
    _pending: tuple[Any, ...] | None = None

    def async_reset(self, *, seed: int | Sequence[int | None] | None = None,
                    options: Mapping[str, Any] | None = None) -> None:
        """EnvPool's ``async_reset``: :meth:`reset`; the next :meth:`recv` returns the reset
        observations with zero rewards and False flags."""
        obs, info = self.reset(seed=seed, options=options)  # type: ignore[attr-defined]
        n = self.num_envs
        rewards = np.zeros(n, dtype=getattr(self, "reward_dtype", np.float64))  # as step's
        self._pending = (obs, rewards, np.zeros(n, bool), np.zeros(n, bool), info)

    def send(self, actions: Any, env_id: np.ndarray | None = None) -> None:
        """EnvPool's ``send``: :meth:`step` every env with ``actions``; :meth:`recv` returns
        the result. ``env_id``, if given, must be every env index in order (every env steps
        together)."""
        if env_id is not None and not np.array_equal(env_id, np.arange(self.num_envs)):
            raise ValueError(f"send(): env_id must be None or arange(num_envs="
                             f"{self.num_envs}) (every env steps at once)")
        if self._pending is not None:
            raise ValueError("send() twice: recv() the last result first")
        self._pending = self.step(actions)  # type: ignore[attr-defined]

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """EnvPool's ``recv``: the result of the last :meth:`async_reset` or :meth:`send`,
        ``info["env_id"]`` holding the env indices (all of them, in order)."""
        if self._pending is None:
            raise ValueError("recv() needs an async_reset() or a send() first")
        result, self._pending = self._pending, None
        result[4]["env_id"] = np.arange(self.num_envs)
        return cast(Any, result)

