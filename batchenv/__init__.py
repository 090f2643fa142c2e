"""batchenv: thousands of RL environments stepped as one.

The state of N games is one struct-of-arrays; every step is a handful of vectorized numpy
kernels over all N games. Every env is a Gymnasium ``VectorEnv``::

    import batchenv
    env = batchenv.BatchPong(num_envs=4096)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
"""

from gymnasium.vector import AutoresetMode

from batchenv.concurrent import AsyncEnv, ConcurrentVectorEnv, SubEnvError, SubEnvTimeoutError
from batchenv.core import BatchEnv, ClosedEnvError, StepBeforeResetError
from batchenv.envs import *  # noqa: F403  (every native env class)
from batchenv.envs import __all__ as _env_names
from batchenv.factory import make
from batchenv.random import BatchRandom
from batchenv.registration import list_envs, register_envs, registry
from batchenv.sharded import ShardedVectorEnv, ShardError, Trajectories
from batchenv.state import State

__version__ = "0.1.0"

__all__ = [
    "AsyncEnv",
    "AutoresetMode",
    "BatchEnv",
    "BatchRandom",
    "ClosedEnvError",
    "ConcurrentVectorEnv",
    "ShardError",
    "ShardedVectorEnv",
    "State",
    "StepBeforeResetError",
    "SubEnvError",
    "SubEnvTimeoutError",
    "Trajectories",
    "list_envs",
    "make",
    "register_envs",
    "registry",
    *_env_names,
]

register_envs()
