"""Many ordinary (unbatched) environments behind one ``VectorEnv``, run concurrently.

:class:`ConcurrentVectorEnv` is for environments that cannot be written as a batched numpy
kernel: remote simulators, game or web servers, envs that wait on I/O, envs whose step
releases the GIL. It has the semantics of :class:`gymnasium.vector.SyncVectorEnv` (auto-reset
modes, ``reset_mask``, seeding, batched infos) but runs the sub-environments' calls
concurrently: plain envs in a pool of threads (``executor="thread"``), :class:`AsyncEnv` envs
as tasks of a private event loop (``executor="asyncio"``, which accepts plain envs too).

The plain API (``reset``, ``step``...) blocks the calling thread only, so it works with or
without a running event loop; ``areset``/``astep``/``aparallel`` await instead.

Example::

    >>> import gymnasium as gym
    >>> from batchenv.concurrent import ConcurrentVectorEnv
    >>> envs = ConcurrentVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)])
    >>> obs, infos = envs.reset(seed=42)
    >>> obs.shape
    (4, 4)
    >>> obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
    >>> envs.close()

Modules: ``vector`` (the env and the one code path of its calls), ``_run`` (per-env
operations, the thread pool and the event loop), ``asyncenv`` (the :class:`AsyncEnv`
protocol). See ``docs/concurrency.md``.
"""

from batchenv.concurrent._run import SubEnvError, SubEnvTimeoutError
from batchenv.concurrent.asyncenv import AsyncEnv
from batchenv.concurrent.vector import CLOSE_TIMEOUT, MAX_THREADS, ConcurrentVectorEnv

__all__ = ["CLOSE_TIMEOUT", "MAX_THREADS", "AsyncEnv", "ConcurrentVectorEnv", "SubEnvError",
           "SubEnvTimeoutError"]
