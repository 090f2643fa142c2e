"""The native batched environments, one module each."""

from batchenv.envs.pong import BatchPong, PongParams

__all__ = ["BatchPong", "PongParams"]
