"""Env ids: their declaration, their meaning (:func:`resolve`) and their registration with
Gymnasium. ``batchenv.make``, which builds an env from an id, is the layer above
(``batchenv/factory.py``); this module imports neither it nor the vector envs it builds.

After ``import batchenv``, every native env is registered with Gymnasium under the
``batchenv/`` namespace with a ``vector_entry_point``, so
``gymnasium.make_vec("batchenv/Pong-v0", num_envs=N)`` builds the batched env, and an
``entry_point``, so ``gymnasium.make("batchenv/Pong-v0")`` builds one env of it
(:class:`batchenv.single.SingleEnv`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec, load_env_creator

__all__ = ["EnvEntry", "registry", "register", "list_envs", "register_envs", "resolve",
           "Resolved"]


@dataclass(frozen=True)
class EnvEntry:
    """One native env id: where its class lives, the constructor keywords the id implies,
    and its unbatched Gymnasium twin (if any). Made by :func:`register`."""

    id: str
    entry_point: str  # "module:Class"
    max_episode_steps: int | None
    gymnasium_id: str | None = None  # the unbatched Gymnasium env it reproduces
    kwargs: Mapping[str, Any] = field(default_factory=dict)  # constructor keywords of the id
    docs_page: str | None = None  # docs/envs/<docs_page>.md, generated from the docstring

    def load(self) -> type:
        module, name = self.entry_point.split(":")
        return getattr(importlib.import_module(module), name)


#: Native envs by id, in the order they were registered.
registry: dict[str, EnvEntry] = {}
_BY_GYMNASIUM_ID: dict[str, EnvEntry] = {}
_CLASS_DEFAULT: Any = object()


def register(cls: type, id: str, *, gymnasium_id: str | None = None,
             kwargs: Mapping[str, Any] | None = None,
             max_episode_steps: int | None = _CLASS_DEFAULT,
             docs_page: str | None = None) -> EnvEntry:
    """Declare the native env ``id``: the batched class ``cls`` built with ``kwargs``.

    This one declaration is what ``batchenv.list_envs()``, ``batchenv.make`` (also by
    ``gymnasium_id``, the id of the unbatched Gymnasium env it reproduces),
    ``gymnasium.make_vec`` (after :func:`register_envs`), the contract tests
    (``tests/test_contract.py``) and the generated pages (``docs/envs/generate.py``, when
    ``docs_page`` is given) read. ``max_episode_steps`` defaults to the class's
    ``default_max_episode_steps``. The native envs are declared in
    ``batchenv/envs/__init__.py``; see ``docs/writing_envs.md``."""
    if max_episode_steps is _CLASS_DEFAULT:
        max_episode_steps = getattr(cls, "default_max_episode_steps", None)
    entry = EnvEntry(id, f"{cls.__module__}:{cls.__qualname__}", max_episode_steps,
                     gymnasium_id, dict(kwargs or {}), docs_page)
    for taken, by in ((id, registry), (gymnasium_id, _BY_GYMNASIUM_ID)):
        if taken is not None and taken in by and by[taken] != entry:
            raise ValueError(f"register: {taken!r} is already declared by {by[taken]}")
    registry[id] = entry
    if gymnasium_id is not None:
        _BY_GYMNASIUM_ID[gymnasium_id] = entry
    return entry


def list_envs() -> list[str]:
    """Ids of batchenv's native batched envs."""
    return sorted(registry)


def _native_entry(env_id: str) -> EnvEntry | None:
    if env_id in registry:
        return registry[env_id]
    if env_id in _BY_GYMNASIUM_ID:
        return _BY_GYMNASIUM_ID[env_id]
    return registry.get(f"batchenv/{env_id}")


@dataclass(frozen=True)
class Resolved:
    """What an id means to batchenv: the ``BatchEnv`` class, the constructor keywords the id
    implies (its registered ``kwargs`` and ``max_episode_steps``) and its Gymnasium spec.
    Made by :func:`resolve`, the one reading of an id that ``make``, sharded ``make`` and
    ``ShardedVectorEnv`` share."""

    id: str
    cls: type
    kwargs: Mapping[str, Any]
    spec: EnvSpec

    def spec_for(self, num_envs: int, kwargs: Mapping[str, Any]) -> EnvSpec:
        """The spec of an env made from this id with the caller's ``kwargs``."""
        return dataclasses.replace(self.spec, kwargs={**self.spec.kwargs, **kwargs,
                                                      "num_envs": num_envs})


def resolve(env_id: str) -> Resolved | None:
    """The batched env an id names: a native id (or the Gymnasium id it reproduces), or an
    id registered with ``gymnasium.register(id, vector_entry_point=...)`` whose entry point
    is a :class:`~batchenv.BatchEnv` subclass (an author's env); ``None`` otherwise."""
    from batchenv.core import BatchEnv

    entry = _native_entry(env_id)
    if entry is not None:
        cls: Any = entry.load()
        kwargs = dict(entry.kwargs)
        max_steps = entry.max_episode_steps
        spec = gym.spec(entry.id) if entry.id in gym.registry else EnvSpec(
            entry.id, vector_entry_point=entry.entry_point, kwargs=dict(entry.kwargs),
            max_episode_steps=max_steps)
    else:
        found = gym.registry.get(env_id)
        if found is None or found.vector_entry_point is None:
            return None
        spec, point = found, found.vector_entry_point
        cls = point if callable(point) else load_env_creator(point)
        kwargs, max_steps = dict(spec.kwargs), spec.max_episode_steps
    if not (isinstance(cls, type) and issubclass(cls, BatchEnv)):
        return None  # someone else's VectorEnv: gymnasium.make_vec builds it
    if max_steps is not None:  # as make_vec passes it to a vector entry point
        kwargs.setdefault("max_episode_steps", max_steps)
    return Resolved(spec.id, cls, kwargs, spec)


def register_envs() -> None:
    """Register every native env with Gymnasium (idempotent; done on ``import batchenv``)."""
    for entry in registry.values():
        if entry.id not in gym.registry:
            gym.register(id=entry.id, vector_entry_point=entry.entry_point,
                         entry_point=_single_entry_point(entry),
                         max_episode_steps=entry.max_episode_steps, kwargs=dict(entry.kwargs))


def _single_entry_point(entry: EnvEntry) -> Any:
    """``gymnasium.make(id)``'s entry point: one env of the batched class
    (:class:`batchenv.single.SingleEnv`). A callable, not a string: the id's kwargs are
    shared with ``vector_entry_point``, so the class cannot travel in them."""
    from batchenv.single import SingleEnv

    return functools.partial(SingleEnv, entry.entry_point)
