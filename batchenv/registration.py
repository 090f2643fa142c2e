"""Env ids, ``batchenv.make`` and registration with Gymnasium.

After ``import batchenv``, every native env is registered with Gymnasium under the
``batchenv/`` namespace with a ``vector_entry_point``, so
``gymnasium.make_vec("batchenv/Pong-v0", num_envs=N)`` builds the batched env.
``batchenv.make(id, num_envs)`` also accepts Gymnasium's own ids ("CartPole-v1"): it returns
our batched version where we have one, and otherwise runs ``gymnasium.make(id)`` copies in a
:class:`~batchenv.concurrent.ConcurrentVectorEnv`.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import VectorEnv

__all__ = ["EnvEntry", "registry", "list_envs", "make", "register_envs", "VECTORIZATIONS"]


@dataclass(frozen=True)
class EnvEntry:
    """One native env: its id, where its class lives, and its Gymnasium twin (if any)."""

    id: str
    entry_point: str  # "module:Class"
    max_episode_steps: int | None
    gymnasium_id: str | None = None  # the unbatched Gymnasium env it reproduces
    kwargs: tuple[tuple[str, Any], ...] = ()  # constructor arguments this id fixes

    def load(self) -> type:
        module, name = self.entry_point.split(":")
        return getattr(importlib.import_module(module), name)


_ENTRIES = [
    EnvEntry("batchenv/Pong-v0", "batchenv.envs.pong:BatchPong", 10_000),
    EnvEntry("batchenv/CartPole-v1", "batchenv.envs.cartpole:BatchCartPole", 500,
             "CartPole-v1"),
    EnvEntry("batchenv/MountainCar-v0", "batchenv.envs.mountain_car:BatchMountainCar", 200,
             "MountainCar-v0"),
    EnvEntry("batchenv/MountainCarContinuous-v0",
             "batchenv.envs.continuous_mountain_car:BatchMountainCarContinuous", 999,
             "MountainCarContinuous-v0"),
    EnvEntry("batchenv/Acrobot-v1", "batchenv.envs.acrobot:BatchAcrobot", 500, "Acrobot-v1"),
    EnvEntry("batchenv/Pendulum-v1", "batchenv.envs.pendulum:BatchPendulum", 200,
             "Pendulum-v1"),
    # MinAtar (batchenv/envs/minatar/): -v0 all 6 actions, -v1 MinAtar's minimal action set,
    # as MinAtar's own Gymnasium ids MinAtar/<Game>-v0/-v1 (minatar/gym.py); no time limit
    *(EnvEntry(f"batchenv/MinAtar-{name}-v{v}", f"batchenv.envs.minatar.{module}:Batch{name}",
               None, f"MinAtar/{name}-v{v}", (("minimal_action_set", bool(v)),))
      for module, name in [("asterix", "Asterix"), ("breakout", "Breakout"),
                           ("freeway", "Freeway"), ("seaquest", "Seaquest"),
                           ("space_invaders", "SpaceInvaders")]
      for v in (0, 1)),
]

#: Native envs by id.
registry: dict[str, EnvEntry] = {entry.id: entry for entry in _ENTRIES}
_BY_GYMNASIUM_ID = {e.gymnasium_id: e for e in _ENTRIES if e.gymnasium_id}

#: Values of ``make(..., vectorization=...)``.
VECTORIZATIONS = ("native", "thread", "asyncio", "sync", "process")


def list_envs() -> list[str]:
    """Ids of batchenv's native batched envs."""
    return sorted(registry)


def _native_entry(env_id: str) -> EnvEntry | None:
    if env_id in registry:
        return registry[env_id]
    if env_id in _BY_GYMNASIUM_ID:
        return _BY_GYMNASIUM_ID[env_id]
    return registry.get(f"batchenv/{env_id}")


def make(env_id: str, num_envs: int = 1, *, vectorization: str | None = None,
         **kwargs: Any) -> VectorEnv:
    """A vector env of ``num_envs`` copies of ``env_id``.

    ``vectorization``:
        ``None`` — the native batched env if batchenv has one for ``env_id`` (its own id,
        e.g. "batchenv/Pong-v0", or the Gymnasium id it reproduces, e.g. "CartPole-v1"),
        otherwise ``"thread"``;
        ``"native"`` — the batched env (``ValueError`` if there is none);
        ``"thread"`` / ``"asyncio"`` — ``ConcurrentVectorEnv`` over ``gymnasium.make`` copies;
        ``"sync"`` / ``"process"`` — Gymnasium's ``SyncVectorEnv`` / ``AsyncVectorEnv``.

    ``kwargs`` go to the env's constructor (native) or to ``gymnasium.make`` (the others),
    except ``autoreset_mode`` and ``copy``, which go to the vector env in every case, and
    ``max_workers`` and ``timeout``, which go to ``ConcurrentVectorEnv``.
    """
    if vectorization is not None and vectorization not in VECTORIZATIONS:
        raise ValueError(f"vectorization must be None or one of {VECTORIZATIONS}, "
                         f"got {vectorization!r}")
    entry = _native_entry(env_id)
    if vectorization in (None, "native") and entry is not None:
        env = entry.load()(num_envs=num_envs, **{**dict(entry.kwargs), **kwargs})
        env.spec = _spec_for(entry, num_envs, kwargs)
        return env
    if vectorization == "native":
        raise ValueError(f"batchenv has no native batched env for {env_id!r}; native envs: "
                         f"{list_envs()} (and their Gymnasium ids)")
    gym_id = entry.gymnasium_id if entry is not None and entry.gymnasium_id else env_id
    if gym_id.startswith("batchenv/"):
        raise ValueError(f"{env_id!r} exists only as a batched env; use vectorization=None "
                         f"or 'native'")
    vector_kwargs = {k: kwargs.pop(k) for k in ("autoreset_mode", "copy") if k in kwargs}
    concurrent_kwargs = {k: kwargs.pop(k) for k in ("max_workers", "timeout") if k in kwargs}

    def env_fn() -> gym.Env:
        return gym.make(gym_id, **kwargs)

    env_fns = [env_fn] * num_envs
    if vectorization in (None, "thread", "asyncio"):
        from batchenv.concurrent import ConcurrentVectorEnv

        return ConcurrentVectorEnv(env_fns, executor=vectorization or "thread", **vector_kwargs,
                                   **concurrent_kwargs)
    if concurrent_kwargs:
        raise ValueError(f"{sorted(concurrent_kwargs)} apply only to vectorization='thread' or "
                         f"'asyncio', not {vectorization!r}")
    if vectorization == "sync":
        return gym.vector.SyncVectorEnv(env_fns, **vector_kwargs)
    return gym.vector.AsyncVectorEnv(env_fns, **vector_kwargs)


def _spec_for(entry: EnvEntry, num_envs: int, kwargs: dict[str, Any]) -> EnvSpec:
    return dataclasses.replace(gym.spec(entry.id), kwargs={**dict(entry.kwargs), **kwargs,
                                                              "num_envs": num_envs})


def register_envs() -> None:
    """Register every native env with Gymnasium (idempotent; done on ``import batchenv``)."""
    for entry in _ENTRIES:
        if entry.id not in gym.registry:
            gym.register(id=entry.id, vector_entry_point=entry.entry_point,
                         max_episode_steps=entry.max_episode_steps, kwargs=dict(entry.kwargs))
