"""Many ordinary (unbatched) environments behind one ``VectorEnv``, run concurrently: plain
envs in a pool of threads, :class:`AsyncEnv` envs as tasks of a private event loop, with the
semantics of ``SyncVectorEnv`` (``docs/concurrency.md``)."""

from batchenv.concurrent._run import SubEnvError, SubEnvTimeoutError
from batchenv.concurrent.asyncenv import AsyncEnv
from batchenv.concurrent.vector import CLOSE_TIMEOUT, MAX_THREADS, ConcurrentVectorEnv

__all__ = ["CLOSE_TIMEOUT", "MAX_THREADS", "AsyncEnv", "ConcurrentVectorEnv", "SubEnvError",
           "SubEnvTimeoutError"]
