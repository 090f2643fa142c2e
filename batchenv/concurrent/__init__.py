"""Many ordinary (unbatched) environments behind one ``VectorEnv``, run concurrently: plain
envs in a pool of threads, :class:`AsyncEnv` envs as tasks of a private event loop, with the
semantics of ``SyncVectorEnv``. Modules: ``vector`` (the env), ``_run`` (per-env operations,
the thread pool, the batch a call waits on), ``asyncenv``. See ``docs/concurrency.md``.

Example::

    >>> import gymnasium as gym
    >>> from batchenv.concurrent import ConcurrentVectorEnv
    >>> envs = ConcurrentVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)])
    >>> obs, infos = envs.reset(seed=42)
    >>> obs.shape
    (4, 4)
    >>> envs.close()
"""

from batchenv.concurrent._run import SubEnvError, SubEnvTimeoutError
from batchenv.concurrent.asyncenv import AsyncEnv
from batchenv.concurrent.vector import CLOSE_TIMEOUT, MAX_THREADS, ConcurrentVectorEnv

__all__ = ["CLOSE_TIMEOUT", "MAX_THREADS", "AsyncEnv", "ConcurrentVectorEnv", "SubEnvError",
           "SubEnvTimeoutError"]
