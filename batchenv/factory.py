"""``batchenv.make``: a vector env from an id, built the way the id and the arguments ask.

``batchenv.make(id, num_envs)`` returns our batched env where we have one (also for the
Gymnasium id it reproduces, "CartPole-v1"), a :class:`~batchenv.sharded.ShardedVectorEnv`
of it when asked for workers, and otherwise ``gymnasium.make(id)`` copies in a
:class:`~batchenv.concurrent.ConcurrentVectorEnv` (or Gymnasium's own vector envs). What an
id means is read in one place, :func:`batchenv.registration.resolve`; this module sits above
it and above the vector envs it builds.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.vector import VectorEnv

from batchenv.concurrent import ConcurrentVectorEnv
from batchenv.registration import Resolved, _native_entry, list_envs, resolve
from batchenv.sharded import ShardedVectorEnv

__all__ = ["make", "VECTORIZATIONS"]

#: Values of ``make(..., vectorization=...)``.
VECTORIZATIONS = ("native", "thread", "asyncio", "sync", "process")

#: ``make`` keywords that go to the vector env whatever builds the copies.
_VECTOR_KEYWORDS = ("autoreset_mode", "copy")
#: ``make`` keywords that only batchenv's ``ConcurrentVectorEnv`` takes.
_CONCURRENT_KEYWORDS = ("max_workers", "timeout", "reward_dtype")


def make(env_id: str, num_envs: int = 1, *, vectorization: str | None = None,
         num_workers: int | None = None, backend: str | None = None,
         local_shard: bool | None = None, **kwargs: Any) -> VectorEnv:
    """A vector env of ``num_envs`` copies of ``env_id``.

    ``vectorization``:
        ``None`` — the native batched env if batchenv has one for ``env_id`` (its own id,
        e.g. "batchenv/Pong-v0", or the Gymnasium id it reproduces, e.g. "CartPole-v1"),
        or the env of an id registered with ``gymnasium.register(id,
        vector_entry_point=..., max_episode_steps=...)`` (your own batched env), otherwise
        ``"thread"``;
        ``"native"`` — the batched env (``ValueError`` if there is none);
        ``"thread"`` / ``"asyncio"`` — ``ConcurrentVectorEnv`` over ``gymnasium.make`` copies;
        ``"sync"`` / ``"process"`` — Gymnasium's ``SyncVectorEnv`` / ``AsyncVectorEnv``.

    ``kwargs`` go to the env's constructor (native) or to ``gymnasium.make`` (the others),
    except ``autoreset_mode`` and ``copy``, which go to the vector env in every case,
    ``reward_dtype`` (``np.float32`` or ``np.float64``; default float32 for a native env,
    float64 for ``ConcurrentVectorEnv``, as ``SyncVectorEnv``), which goes to batchenv's
    vector env (Gymnasium's ``"sync"`` / ``"process"`` envs return float64 and refuse it),
    and ``max_workers`` and ``timeout``, which go to ``ConcurrentVectorEnv``.

    ``num_workers`` / ``backend`` / ``local_shard`` (native envs only): a
    :class:`~batchenv.sharded.ShardedVectorEnv` of ``num_workers`` shards (default 1) on
    ``backend`` (``"process"``, the default, or ``"ray"``), shard 0 in this process if
    ``local_shard`` (default False).
    """
    if vectorization is not None and vectorization not in VECTORIZATIONS:
        raise ValueError(f"vectorization must be None or one of {VECTORIZATIONS}, "
                         f"got {vectorization!r}")
    resolved = resolve(env_id) if vectorization in (None, "native") else None
    if num_workers is not None or backend is not None or local_shard is not None:
        if resolved is None:
            raise ValueError(f"num_workers/backend/local_shard shard a batched env (a native "
                             f"id, or an id registered with gymnasium.register(id, "
                             f"vector_entry_point=<a BatchEnv subclass>)); {env_id!r} with "
                             f"vectorization={vectorization!r} is not one")
        return _sharded(resolved, num_envs, num_workers, backend, local_shard, kwargs)
    if resolved is not None:
        env = resolved.cls(num_envs=num_envs, **{**resolved.kwargs, **kwargs})
        env.spec = resolved.spec_for(num_envs, kwargs)
        return env
    spec = gym.registry.get(env_id)
    if vectorization in (None, "native") and spec is not None and spec.vector_entry_point:
        # an id whose vector entry point is not a BatchEnv: Gymnasium builds it
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                            **kwargs)
    if vectorization == "native":
        raise ValueError(f"batchenv has no native batched env for {env_id!r}; native envs: "
                         f"{list_envs()} (and their Gymnasium ids), and ids registered with "
                         f"gymnasium.register(id, vector_entry_point=...)")
    return _copies(env_id, num_envs, vectorization or "thread", kwargs)


def _sharded(resolved: Resolved, num_envs: int, num_workers: int | None, backend: str | None,
             local_shard: bool | None, kwargs: dict[str, Any]) -> VectorEnv:
    """``make``'s sharded env: the id's batched class over ``num_workers`` shards."""
    env = ShardedVectorEnv(resolved.cls, num_envs, num_workers=num_workers or 1,
                           backend=backend or "process",
                           local_shard=False if local_shard is None else local_shard,
                           **{**resolved.kwargs, **kwargs})
    env.spec = resolved.spec_for(num_envs, kwargs)
    return env


def _gymnasium_id(env_id: str) -> str:
    """The Gymnasium id whose ``gymnasium.make`` copies stand for ``env_id``."""
    entry = _native_entry(env_id)
    gym_id = entry.gymnasium_id if entry is not None and entry.gymnasium_id else env_id
    if gym_id.startswith("batchenv/"):
        raise ValueError(f"{env_id!r} exists only as a batched env; use vectorization=None "
                         f"or 'native'")
    return gym_id


def _copies(env_id: str, num_envs: int, vectorization: str,
            kwargs: dict[str, Any]) -> VectorEnv:
    """``make``'s env of ``num_envs`` ``gymnasium.make`` copies, run by ``vectorization``
    ("thread", "asyncio", "sync" or "process")."""
    gym_id = _gymnasium_id(env_id)
    vector_kwargs = {k: kwargs.pop(k) for k in _VECTOR_KEYWORDS if k in kwargs}
    concurrent_kwargs = {k: kwargs.pop(k) for k in _CONCURRENT_KEYWORDS if k in kwargs}

    def env_fn() -> gym.Env:
        return gym.make(gym_id, **kwargs)

    env_fns = [env_fn] * num_envs
    if vectorization in ("thread", "asyncio"):
        return ConcurrentVectorEnv(env_fns, executor=vectorization, **vector_kwargs,
                                   **concurrent_kwargs)
    if concurrent_kwargs:
        raise ValueError(f"{sorted(concurrent_kwargs)} apply only to vectorization='thread' or "
                         f"'asyncio' (Gymnasium's SyncVectorEnv and AsyncVectorEnv return "
                         f"float64 rewards), not {vectorization!r}")
    if vectorization == "sync":
        return gym.vector.SyncVectorEnv(env_fns, **vector_kwargs)
    return gym.vector.AsyncVectorEnv(env_fns, **vector_kwargs)
