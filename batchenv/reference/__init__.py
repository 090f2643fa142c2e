"""Scalar reference implementations of batchenv's envs, one game at a time, for tests and as
honest speed baselines (see :mod:`batchenv.reference.pong`)."""

from batchenv.reference.pong import CounterRandom, PlainPong, ReferencePong, seed_key

__all__ = ["CounterRandom", "PlainPong", "ReferencePong", "seed_key"]
