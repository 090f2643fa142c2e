"""Many ordinary (unbatched) environments behind one ``VectorEnv``, run concurrently.

:class:`ConcurrentVectorEnv` is for environments that cannot be written as a batched numpy
kernel: remote simulators, game or web servers, envs that wait on I/O, envs whose step
releases the GIL. It has the semantics of :class:`gymnasium.vector.SyncVectorEnv` (auto-reset
modes, ``reset_mask``, seeding, batched infos) but runs the sub-environments' ``reset``,
``step``, ``render`` and ``close`` concurrently:

* ``executor="thread"``: an elastic pool of up to ``max_workers`` threads (``None``: one per
  env, up to :data:`MAX_THREADS`). Cheap CPU-bound envs end up run by one thread per call
  (threads cannot speed up GIL-bound Python, so the pool does not pay for waking more); envs
  that block (I/O, sleeps, GIL-releasing C code) get one thread each, so they wait together.
  Calls to one env never overlap and run in order.
* ``executor="asyncio"``: sub-envs following the :class:`AsyncEnv` protocol (coroutine
  ``reset``/``step``) run as tasks on a private event loop that lives in its own thread, so
  the same loop serves them for their whole life (sockets, sessions and locks they create stay
  valid). Plain (synchronous) envs are accepted too and run in the thread pool.

The plain API (``reset``, ``step``...) blocks the calling thread only, so it works with or
without a running event loop (scripts, Jupyter, async servers); ``areset``/``astep``/
``aparallel`` await instead, for code that must not block its loop.

Example::

    >>> import gymnasium as gym
    >>> from batchenv.concurrent import ConcurrentVectorEnv
    >>> envs = ConcurrentVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)])
    >>> obs, infos = envs.reset(seed=42)
    >>> obs.shape
    (4, 4)
    >>> obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
    >>> envs.close()

See ``docs/concurrency.md`` for when to use which executor, and measured figures.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import numbers
import sys
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from copy import deepcopy
from typing import Any, Generic

import numpy as np
from gymnasium import spaces
from gymnasium.core import ActType, ObsType
from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding
from gymnasium.vector.utils import (
    batch_differing_spaces,
    concatenate,
    create_empty_array,
    iterate,
)
from gymnasium.vector.vector_env import AutoresetMode, VectorEnv

from batchenv.core import ClosedEnvError, StepBeforeResetError, batched_space

__all__ = [
    "MAX_THREADS",
    "AsyncEnv",
    "ConcurrentVectorEnv",
    "SubEnvError",
    "SubEnvTimeoutError",
]

#: Upper bound on the number of worker threads chosen by ``max_workers=None``.
MAX_THREADS = 256

#: Default time ``close()`` waits for the sub-envs to close before giving up on them.
CLOSE_TIMEOUT = 10.0

_EXECUTORS = ("thread", "asyncio")


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class SubEnvError(RuntimeError):
    """A sub-environment raised an exception.

    The original exception is chained as ``__cause__`` (its traceback, from the worker thread or
    event-loop task, is printed after this one).

    Attributes:
        method: the operation that failed, e.g. ``"step"``.
        env_index: index of the first env that failed.
        errors: ``{env_index: exception}`` for every env that failed in this call.
    """

    def __init__(self, method: str, errors: dict[int, BaseException]):
        self.method = method
        self.errors = dict(sorted(errors.items()))
        self.env_index = next(iter(self.errors))
        if len(self.errors) == 1:
            exc = self.errors[self.env_index]
            msg = f"env {self.env_index} raised in {method}(): {_describe(exc)}"
        else:
            parts = "; ".join(
                f"env {i}: {_describe(e)}" for i, e in list(self.errors.items())[:5]
            ) + ("; ..." if len(self.errors) > 5 else "")
            msg = (
                f"envs {_listed(self.errors)} raised errors in {method}() (the first one is "
                f"chained below with its traceback): {parts}"
            )
        super().__init__(msg)


class SubEnvTimeoutError(TimeoutError):
    """Some sub-environments did not answer within the call's ``timeout``.

    Attributes:
        method: the operation that timed out, e.g. ``"step"``.
        env_indices: the envs that did not answer, in increasing order.
        timeout: the timeout in seconds.
    """

    def __init__(self, method: str, env_indices: list[int], timeout: float, num_envs: int):
        self.method = method
        self.env_indices = env_indices
        self.timeout = timeout
        after = (
            " They must be reset (reset() or reset(options={'reset_mask': m})) before the next "
            "step."
            if method in ("step", "reset")
            else ""
        )
        super().__init__(
            f"{method}() timed out after {timeout:g} s: envs {_listed(env_indices)} (of "
            f"{num_envs}) did not answer.{after}"
        )


def _listed(idx: Sequence[int], limit: int = 10) -> str:
    """Env indices for a message: the first ``limit`` of them, and how many in all."""
    idx = list(idx)
    shown = ", ".join(str(i) for i in idx[:limit])
    return f"[{shown}, ... ({len(idx)} envs in all)]" if len(idx) > limit else f"[{shown}]"


def _short_repr(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --------------------------------------------------------------------------------------------
# The AsyncEnv protocol
# --------------------------------------------------------------------------------------------


class AsyncEnv(Generic[ObsType, ActType]):
    """Base class for environments whose ``reset``/``step``/``render``/``close`` are coroutines.

    The protocol :class:`ConcurrentVectorEnv` relies on (duck-typed: subclassing is optional):

    * ``async def reset(self, *, seed=None, options=None) -> (obs, info)``
    * ``async def step(self, action) -> (obs, reward, terminated, truncated, info)``
    * ``render()`` and ``close()``, each either ``async def`` or a plain method;
    * attributes ``action_space``, ``observation_space`` and optionally ``metadata``,
      ``render_mode``, ``spec``.

    An env counts as asynchronous when its ``step`` is a coroutine function; its ``reset``
    must then be one too. The coroutines always run on the ConcurrentVectorEnv's private event
    loop (never on the caller's), so resources created in them stay valid between calls. To do
    asynchronous set-up, pass an ``async def`` factory in ``env_fns`` (it is awaited on that
    loop) or connect lazily in ``reset``.

    Like :class:`gymnasium.Env`, call ``await super().reset(seed=seed)`` first in ``reset`` to
    seed :attr:`np_random`.

    Example::

        class RemoteEnv(AsyncEnv):
            action_space = spaces.Discrete(2)
            observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)

            async def reset(self, *, seed=None, options=None):
                await super().reset(seed=seed)
                obs = await self.client.request("reset")
                return obs, {}

            async def step(self, action):
                obs, reward, done = await self.client.request("step", int(action))
                return obs, reward, done, False, {}
    """

    metadata: dict[str, Any] = {"render_modes": []}
    render_mode: str | None = None
    spec: Any = None
    action_space: spaces.Space
    observation_space: spaces.Space

    _np_random: np.random.Generator | None = None
    _np_random_seed: int | None = None

    async def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        """Reset the env; the base implementation only seeds :attr:`np_random`."""
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        return None  # type: ignore[return-value]  # subclasses return (obs, info)

    async def step(self, action: ActType) -> tuple[ObsType, Any, bool, bool, dict[str, Any]]:
        """Advance the env by one step."""
        raise NotImplementedError(f"{type(self).__name__}.step is not implemented")

    async def render(self) -> Any:
        """Return a frame according to ``render_mode`` (``None`` by default)."""
        return None

    async def close(self) -> None:
        """Release the env's resources."""

    @property
    def np_random(self) -> np.random.Generator:
        """The env's random generator, seeded by ``reset(seed=...)``."""
        if self._np_random is None:
            self._np_random, self._np_random_seed = seeding.np_random()
        return self._np_random

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self._np_random = value
        self._np_random_seed = -1

    @property
    def np_random_seed(self) -> int:
        """The seed of :attr:`np_random` (-1 when it was set directly)."""
        if self._np_random_seed is None:
            self._np_random, self._np_random_seed = seeding.np_random()
        return self._np_random_seed

    @property
    def unwrapped(self) -> AsyncEnv:
        """The env itself (there are no async wrappers)."""
        return self

    def get_wrapper_attr(self, name: str) -> Any:
        """Get an attribute (same contract as :meth:`gymnasium.Env.get_wrapper_attr`)."""
        return getattr(self, name)

    def has_wrapper_attr(self, name: str) -> bool:
        """Whether the env has the attribute ``name``."""
        return hasattr(self, name)

    def set_wrapper_attr(self, name: str, value: Any, *, force: bool = True) -> bool:
        """Set an attribute (same contract as :meth:`gymnasium.Env.set_wrapper_attr`)."""
        if force or hasattr(self, name):
            setattr(self, name, value)
            return True
        return False

    def __str__(self) -> str:
        return f"<{type(self).__name__} instance>"


def _is_async_env(env: Any) -> bool:
    return inspect.iscoroutinefunction(getattr(env, "step", None))


# --------------------------------------------------------------------------------------------
# Execution machinery: an elastic thread pool, a private event loop, one "batch" per call
# --------------------------------------------------------------------------------------------
#
# A call ("step the 16 envs") is a _Batch: a list of env indices that pool threads claim one at
# a time, plus one event-loop task per asynchronous env. The pool is elastic. The caller wakes
# one thread; a thread that claims an env wakes the next one (before running the env) until
# the batch has as many threads as the previous call of the same method needed; and while the
# caller waits, every _TICK seconds, if envs are still unclaimed and that chain has stalled
# (the awake threads are blocked on I/O or busy), it doubles that number and restarts the
# chain. So a batch of cheap CPU-bound envs is run by one thread in one hand-off (threads
# cannot speed up GIL-bound work anyway), and a batch of envs waiting on I/O ramps up within a
# few ticks to one thread per env, which the next calls start with. Waking threads one after
# the other, each taking the GIL when the previous one blocks, is much cheaper than waking
# them all at once to fight for it (measured: 200 envs sleeping 10 ms step in 13 ms, not 22).
# Calls to one env are serialized by a per-env lock, so an env is never used by two threads at
# once, even while a call that timed out is still running in it.

_PENDING = object()  # result slot not filled yet
_FAILED = object()  # result slot of an env that raised (the exception is in _Batch.errors)
_TICK = 2e-4  # seconds between checks for unclaimed envs while a call is running


class _Batch:
    """One concurrent call: ``fn(envs[i], *args[i])`` for the envs of ``items`` (in pool
    threads) and ``afn(envs[i], *args[i])`` for those of ``async_idx`` (as event-loop tasks)."""

    __slots__ = (
        "results", "errors", "fn", "afn", "envs", "args", "items", "async_idx", "env_locks",
        "next", "total", "finished", "helpers", "woken", "target", "seen", "stopped", "tasks",
        "on_done",
        "timed_out", "lock", "done",
    )

    def __init__(self, num_envs: int, fn: Callable, afn: Callable, envs: list[Any], args: Any,
                 items: list[int], async_idx: list[int], env_locks: list[threading.Lock]):
        self.results: list[Any] = [_PENDING] * num_envs
        self.errors: dict[int, BaseException] = {}
        self.fn, self.afn, self.envs, self.args = fn, afn, envs, args
        self.items = items
        self.async_idx = async_idx
        self.env_locks = env_locks
        self.next = 0  # items[:next] have been claimed by a thread
        self.total = len(items) + len(async_idx)
        self.finished = 0
        self.helpers = 0  # threads that claimed at least one env
        self.woken = 0  # threads woken for this batch
        self.target = 1  # threads wanted: each thread wakes the next until there are that many
        self.seen = 0  # value of ``next`` at the caller's last check
        self.stopped = False  # the caller gave up: claim nothing more
        self.tasks: dict[int, asyncio.Task] = {}
        self.on_done: Callable[[], None] | None = None
        # (timeout, envs that had not answered, of which those that had started)
        self.timed_out: tuple[float, list[int], list[int]] | None = None
        self.lock = threading.Lock()
        self.done = threading.Lock()
        self.done.acquire()
        if self.total == 0:
            self.done.release()

    # --- reporting
    def indices(self) -> list[int]:
        return sorted(self.items + self.async_idx)

    def pending_envs(self) -> tuple[list[int], list[int]]:
        """(envs without a result, those of them that had started)."""
        with self.lock:
            claimed = set(self.items[: self.next])
        results = self.results
        pending = [i for i in self.indices() if results[i] is _PENDING]
        started = [i for i in pending if i in claimed or i in self.tasks]
        return pending, started

    def failed_envs(self) -> list[int]:
        """Envs that raised, or had no result when the caller gave up."""
        late = self.timed_out[1] if self.timed_out is not None else []
        return sorted(set(self.errors) | set(late))

    def unclaimed(self) -> int:
        return 0 if self.stopped else len(self.items) - self.next

    def needs_threads(self) -> bool:
        """Envs are unclaimed and fewer threads than envs were woken: ramping may help."""
        return self.woken < len(self.items) and self.unclaimed() > 0

    # --- completion
    def _complete(self) -> None:
        self.done.release()
        if self.on_done is not None:
            self.on_done()

    def _run_one(self, i: int) -> None:
        args = self.args
        with self.env_locks[i]:
            try:
                self.results[i] = (
                    self.fn(self.envs[i], *args[i]) if args is not None else self.fn(self.envs[i])
                )
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                self.errors[i] = exc
                self.results[i] = _FAILED

    def work(self, pool: _Pool, worker: _PoolThread) -> bool:
        """Claim and run envs until none is left (in a pool thread).

        Returns what ``pool.idle(worker)`` returned: False when the thread must exit. The
        thread is back in the idle stack before the batch is reported done, so the caller's
        next call can reuse it at once.
        """
        items = self.items
        lock = self.lock
        chain = False
        with lock:
            if self.stopped or self.next >= len(items):
                i = None
            else:
                i = items[self.next]
                self.next += 1
                self.helpers += 1
                chain = self.woken < self.target and self.next < len(items)
        if i is not None and chain:
            # Wake the next thread now: it takes the GIL as soon as this one blocks, so the
            # threads start one after the other instead of all fighting for the GIL at once.
            pool.wake(self, 1)
        while i is not None:
            self._run_one(i)
            with lock:
                self.finished += 1
                last = self.finished == self.total
                if last or self.stopped or self.next >= len(items):
                    i = None
                else:
                    i = items[self.next]
                    self.next += 1
            if last:
                keep = pool.idle(worker)
                self._complete()
                return keep
        return pool.idle(worker)

    def start_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start one task per async env (in the event-loop thread)."""
        args = self.args
        for i in self.async_idx:
            if self.stopped:
                return
            try:
                coro = self.afn(self.envs[i], *args[i]) if args is not None else self.afn(
                    self.envs[i])
                task = loop.create_task(coro)
            except BaseException as exc:  # noqa: BLE001
                self.errors[i] = exc
                self.results[i] = _FAILED
                self._task_finished()
                continue
            self.tasks[i] = task
            task.add_done_callback(lambda t, i=i: self._task_done(i, t))

    def _task_done(self, i: int, task: asyncio.Task) -> None:
        if task.cancelled():
            self.errors[i] = asyncio.CancelledError(f"env {i}'s task was cancelled")
            self.results[i] = _FAILED
        else:
            exc = task.exception()
            if exc is None:
                self.results[i] = task.result()
            else:
                self.errors[i] = exc
                self.results[i] = _FAILED
        self._task_finished()

    def _task_finished(self) -> None:
        with self.lock:
            self.finished += 1
            last = self.finished == self.total
        if last:
            self._complete()

    def stop(self) -> None:
        with self.lock:
            self.stopped = True

    def cancel_tasks(self) -> None:  # in the event-loop thread
        for task in self.tasks.values():
            task.cancel()


class _PoolThread:
    """A pool thread: sleeps on its own lock until handed a batch."""

    __slots__ = ("go", "batch")

    def __init__(self, pool: _Pool, name: str):
        self.go = threading.Lock()
        self.go.acquire()
        self.batch: _Batch | None = None
        threading.Thread(target=self._run, args=(pool,), name=name, daemon=True).start()

    def _run(self, pool: _Pool) -> None:
        while True:
            self.go.acquire()
            batch, self.batch = self.batch, None
            if batch is None or not batch.work(pool, self):
                return


class _Pool:
    """At most ``max_threads`` daemon threads, started on demand, reused LIFO."""

    def __init__(self, max_threads: int, name: str):
        self.max_threads = max_threads
        self.name = name
        self.lock = threading.Lock()
        self.idle_threads: list[_PoolThread] = []
        self.n_threads = 0
        self.closed = False

    def wake(self, batch: _Batch, k: int) -> int:
        """Hand ``batch`` to up to ``k`` more threads; return how many were woken."""
        woken = 0
        while woken < k:
            with self.lock:
                if self.closed:
                    break
                if self.idle_threads:
                    worker = self.idle_threads.pop()
                elif self.n_threads < self.max_threads:
                    worker = None
                    self.n_threads += 1
                else:
                    break
            if worker is None:
                worker = _PoolThread(self, f"{self.name}-{self.n_threads - 1}")
            with batch.lock:
                batch.woken += 1
            worker.batch = batch
            worker.go.release()
            woken += 1
        return woken

    def idle(self, worker: _PoolThread) -> bool:
        """Put a thread back in the idle stack (False: the pool is closed, exit)."""
        with self.lock:
            if self.closed:
                self.n_threads -= 1
                return False
            self.idle_threads.append(worker)
            return True

    def shutdown(self) -> None:
        """Let idle threads exit now and busy ones when they finish (never blocks)."""
        with self.lock:
            self.closed = True
            idle, self.idle_threads = self.idle_threads, []
            self.n_threads -= len(idle)
        for worker in idle:
            worker.batch = None
            worker.go.release()


class _LoopThread:
    """A private asyncio event loop running forever in a daemon thread."""

    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            try:
                tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for t in tasks:
                    t.cancel()
                if tasks:  # give cancelled tasks a moment, never forever
                    loop.run_until_complete(asyncio.wait(tasks, timeout=1.0))
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, join_timeout: float = 1.0) -> None:
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:  # loop already closed
            return
        if threading.current_thread() is not self.thread:
            self.thread.join(join_timeout)


# --------------------------------------------------------------------------------------------
# Per-env operations (run in worker threads / as tasks on the private loop)
# --------------------------------------------------------------------------------------------


def _step_next(env, action, needs_reset):
    if needs_reset:
        obs, info = env.reset()
        return obs, 0.0, False, False, info
    return env.step(action)


async def _astep_next(env, action, needs_reset):
    if needs_reset:
        obs, info = await env.reset()
        return obs, 0.0, False, False, info
    return await env.step(action)


_FROZEN = object()  # DISABLED mode: the env finished and was not reset, it stands still


def _step_disabled(env, action, finished):
    return _FROZEN if finished else env.step(action)


async def _astep_disabled(env, action, finished):
    return _FROZEN if finished else await env.step(action)


def _step_same(env, action, _needs_reset):
    obs, reward, terminated, truncated, info = env.step(action)
    if terminated or truncated:
        final = {"final_obs": obs, "final_info": info}
        obs, info = env.reset()
        return obs, reward, terminated, truncated, info, final
    return obs, reward, terminated, truncated, info, None


async def _astep_same(env, action, _needs_reset):
    obs, reward, terminated, truncated, info = await env.step(action)
    if terminated or truncated:
        final = {"final_obs": obs, "final_info": info}
        obs, info = await env.reset()
        return obs, reward, terminated, truncated, info, final
    return obs, reward, terminated, truncated, info, None


def _reset_one(env, seed, options):
    return env.reset(seed=seed, options=options)


async def _areset_one(env, seed, options):
    return await env.reset(seed=seed, options=options)


def _method(env, name, *args):
    return getattr(env, name)(*args)


async def _amethod(env, name, *args):
    result = getattr(env, name)(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _get_wrapper_attr(env, name):
    getter = getattr(env, "get_wrapper_attr", None)
    return getter(name) if getter is not None else getattr(env, name)


def _call_attr(env, name, args, kwargs):
    attr = _get_wrapper_attr(env, name)
    return attr(*args, **kwargs) if callable(attr) else attr


async def _acall_attr(env, name, args, kwargs):
    result = _call_attr(env, name, args, kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _set_attr(env, name, value):
    setter = getattr(env, "set_wrapper_attr", None)
    if setter is not None:
        setter(name, value)
    else:
        setattr(env, name, value)


async def _aset_attr(env, name, value):
    _set_attr(env, name, value)


def _apply(env, fn, *arg):
    return fn(env, *arg)


async def _aapply(env, fn, *arg):
    result = fn(env, *arg)
    if inspect.isawaitable(result):
        result = await result
    return result


async def _await_value(_env, awaitable):
    return await awaitable


def _make_env(_env, env_fn):
    return env_fn()


async def _amake_env(_env, env_fn):
    result = env_fn()
    if inspect.isawaitable(result):
        result = await result
    return result


def _close_env(env):
    return env.close()


async def _aclose_env(env):
    result = env.close()
    if inspect.isawaitable(result):
        result = await result
    return result


_STEP_FNS = {
    AutoresetMode.NEXT_STEP: (_step_next, _astep_next),
    AutoresetMode.SAME_STEP: (_step_same, _astep_same),
    AutoresetMode.DISABLED: (_step_disabled, _astep_disabled),
}


def _set_future_done(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


# --------------------------------------------------------------------------------------------
# Action validation
# --------------------------------------------------------------------------------------------

_ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def _check_actions(single: spaces.Space, batched: spaces.Space, value: Any, where: str,
                   n: int) -> None:
    """Raise ValueError when ``value`` does not have the batched action space's shape."""
    if isinstance(single, _ARRAY_SPACES):
        shape = value.shape if isinstance(value, np.ndarray) else _shape_of(value, where)
        if shape != batched.shape:
            raise ValueError(
                f"`{where}` must have shape {batched.shape} (num_envs={n}, single action shape "
                f"{single.shape} of {single}), got shape {shape}"
            )
    elif isinstance(single, spaces.Tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(single.spaces):
            raise ValueError(
                f"`{where}` must be a tuple of {len(single.spaces)} batched components "
                f"(one per component of {single}), got {type(value).__name__}"
                + (f" of length {len(value)}" if isinstance(value, (tuple, list)) else "")
            )
        for k, (s, b) in enumerate(zip(single.spaces, batched.spaces, strict=True)):
            _check_actions(s, b, value[k], f"{where}[{k}]", n)
    elif isinstance(single, spaces.Dict):
        if not hasattr(value, "keys") or set(value.keys()) != set(single.spaces):
            got = sorted(value.keys()) if hasattr(value, "keys") else type(value).__name__
            raise ValueError(
                f"`{where}` must be a dict with keys {sorted(single.spaces)}, got {got}"
            )
        for key, s in single.spaces.items():
            _check_actions(s, batched[key], value[key], f"{where}[{key!r}]", n)
    else:
        try:
            length = len(value)
        except TypeError:
            length = None
        if length != n:
            raise ValueError(
                f"`{where}` must hold one action per env (num_envs={n}), got "
                + (f"length {length}" if length is not None else type(value).__name__)
            )


def _shape_of(value: Any, where: str) -> tuple[int, ...]:
    try:
        return np.shape(value)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"`{where}` is not array-like with a regular shape: {exc}") from None


# --------------------------------------------------------------------------------------------
# ConcurrentVectorEnv
# --------------------------------------------------------------------------------------------


class ConcurrentVectorEnv(VectorEnv[ObsType, ActType, np.ndarray], Generic[ObsType, ActType]):
    """A ``VectorEnv`` over ordinary envs that runs their calls concurrently.

    Semantics are those of :class:`gymnasium.vector.SyncVectorEnv` (results are equal step by
    step for the same envs and seeds) in all three auto-reset modes; only the execution is
    concurrent. A call (``reset``, ``step``, ``render``, ``call``...) returns when every env
    involved has answered; an exception in an env is raised as :class:`SubEnvError` naming
    the env, after the other envs have finished the call. One difference, shared with
    batchenv's native envs: in ``DISABLED`` mode an env that finished and was not reset stands
    still (its step is skipped: same observation, reward 0, flags False, no info) instead of
    failing an assertion as in ``SyncVectorEnv``.

    Args:
        env_fns: callables creating the sub-envs, called concurrently in the pool threads.
            Under ``executor="asyncio"`` a factory may also be ``async def`` (or return an
            awaitable): it is awaited on the private event loop.
        executor: ``"thread"`` (plain envs, run in a thread pool) or ``"asyncio"``
            (:class:`AsyncEnv` envs as tasks of a private event loop; plain envs accepted too
            and run in the thread pool).
        max_workers: maximum number of pool threads; ``None`` means one per env, up to
            :data:`MAX_THREADS` (256). Threads start on demand: the pool wakes as many as the
            envs need (one for cheap CPU-bound envs, one per env for envs waiting on I/O).
        autoreset_mode: ``AutoresetMode`` (or its string value): ``NEXT_STEP`` (default),
            ``SAME_STEP`` or ``DISABLED``; stored in ``metadata["autoreset_mode"]``.
        copy: return a copy of the observation buffer (``False`` returns the internal
            buffer, overwritten by the next call).
        timeout: default per-call timeout in seconds (``None``: wait forever). ``reset``,
            ``step``, ``render``, ``parallel`` and their async forms also take ``timeout=``
            to override it for one call (``math.inf``: wait forever).
        observation_mode: as in ``SyncVectorEnv``: ``"same"``, ``"different"`` or a tuple
            ``(batched_space, single_space)``.

    Raises:
        ValueError: bad ``executor``, ``max_workers``, ``timeout``, ``observation_mode`` or
            an empty ``env_fns``.
        TypeError: a factory is not callable; an env is asynchronous under
            ``executor="thread"``; an env's ``step`` and ``reset`` disagree about being
            coroutines.
        RuntimeError: the sub-envs' spaces differ (as in ``SyncVectorEnv``).
        SubEnvError / SubEnvTimeoutError: a factory raised / did not return in time (the
            envs already made are closed).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], Any]],
        *,
        executor: str = "thread",
        max_workers: int | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        timeout: float | None = None,
        observation_mode: str | tuple[spaces.Space, spaces.Space] = "same",
    ) -> None:
        self.closed = True  # until fully built, so that a failed __init__ never closes twice
        env_fns = list(env_fns)
        if not env_fns:
            raise ValueError("env_fns must contain at least one environment factory")
        for i, fn in enumerate(env_fns):
            if not callable(fn):
                raise TypeError(f"env_fns[{i}] must be callable, got {type(fn).__name__}")
        if executor not in _EXECUTORS:
            raise ValueError(f"executor must be 'thread' or 'asyncio', got {executor!r}")
        if max_workers is not None and (
            isinstance(max_workers, bool) or not isinstance(max_workers, numbers.Integral)
            or max_workers < 1
        ):
            raise ValueError(f"max_workers must be None or an int >= 1, got {max_workers!r}")
        self.timeout = self._check_timeout(timeout)
        self.autoreset_mode = (
            autoreset_mode if isinstance(autoreset_mode, AutoresetMode)
            else AutoresetMode(autoreset_mode)
        )

        self.env_fns = env_fns
        self.executor = executor
        self.copy = copy
        self.observation_mode = observation_mode
        self.num_envs = n = len(env_fns)
        self.max_workers = min(n, MAX_THREADS) if max_workers is None else int(max_workers)
        self._pool = _Pool(self.max_workers, "batchenv-worker")
        self._spread: dict[str, int] = {}  # method -> threads its last call needed
        self._env_locks = [threading.Lock() for _ in range(n)]
        self._loop_thread: _LoopThread | None = None
        if executor == "asyncio":
            self._loop_thread = _LoopThread("batchenv-asyncio-loop")
        self._busy = threading.Lock()
        self.envs: list[Any] = [None] * n
        self._is_async = [False] * n
        self._thread_idx: list[int] = list(range(n))
        self._async_idx: list[int] = []

        try:
            self._make_envs(env_fns)
            self._setup_spaces(observation_mode)
        except BaseException:
            self._shutdown(timeout=1.0, raise_errors=False, warn=False)
            raise

        self._step_fn, self._astep_fn = _STEP_FNS[self.autoreset_mode]
        self._env_obs = self._initial_env_obs()
        self._autoreset = np.zeros(n, dtype=np.bool_)  # NEXT_STEP: resets on the next step
        self._reset_done = np.zeros(n, dtype=np.bool_)  # reset at least once
        self._broken = np.zeros(n, dtype=np.bool_)  # last step/reset of the env failed
        self._ready = False  # every env reset and none broken: the fast path of step()
        self.closed = False

    # ---------------------------------------------------------------- construction helpers --

    @staticmethod
    def _check_timeout(timeout: Any) -> float | None:
        if timeout is None:
            return None
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not timeout > 0:
            raise ValueError(f"`timeout` must be None or a number > 0 (seconds), got {timeout!r}")
        return None if timeout == math.inf else float(timeout)

    def _loop(self) -> _LoopThread:
        if self._loop_thread is None:  # executor="thread" awaiting a coroutine (parallel)
            self._loop_thread = _LoopThread("batchenv-asyncio-loop")
        return self._loop_thread

    def _make_envs(self, env_fns: list[Callable[[], Any]]) -> None:
        """Call the factories concurrently; await on the private loop what they return."""
        n = self.num_envs
        on_loop = [
            i for i, fn in enumerate(env_fns)
            if self.executor == "asyncio" and inspect.iscoroutinefunction(fn)
        ]
        in_threads = sorted(set(range(n)) - set(on_loop))
        placeholder = [None] * n
        batch = self._submit("env_fn", _make_env, _amake_env, placeholder,
                             [(fn,) for fn in env_fns], in_threads, on_loop)
        try:
            self._wait(batch, None, mark_broken=False)
        finally:
            results = list(batch.results)  # one instant: adopted, or else closed when late
            awaitables = self._adopt(results)
            late = [i for i, r in enumerate(results) if r is _PENDING]
            if late:  # timed out or interrupted: what those factories still make is closed
                _close_late_envs(batch, late)
        if batch.errors or batch.timed_out or (awaitables and self.executor == "thread"):
            for a in awaitables.values():
                _close_awaitable(a)
            self._raise_errors(batch, "env_fn")
            raise TypeError(
                f"env_fns{sorted(awaitables)} returned awaitables, which executor='thread' "
                "cannot run; use executor='asyncio'"
            )
        if awaitables:
            batch = self._submit("env_fn", _apply, _await_value, placeholder,
                                 [(awaitables.get(i),) for i in range(n)], [], sorted(awaitables))
            try:
                self._wait(batch, None, mark_broken=False)
            finally:
                self._adopt(batch.results)
            self._raise_errors(batch, "env_fn")

        for i, env in enumerate(self.envs):
            if self._is_async[i] and self.executor == "thread":
                raise TypeError(
                    f"env {i} ({type(env).__name__}) is asynchronous (its step is a coroutine "
                    "function); use executor='asyncio'"
                )
            if self._is_async[i] != inspect.iscoroutinefunction(getattr(env, "reset", None)):
                raise TypeError(
                    f"env {i} ({type(env).__name__}): step and reset must both be coroutine "
                    "functions (AsyncEnv protocol) or both plain methods"
                )
        self._thread_idx = [i for i in range(n) if not self._is_async[i]]
        self._async_idx = [i for i in range(n) if self._is_async[i]]

    def _adopt(self, results: list[Any]) -> dict[int, Any]:
        """Record the envs a factory batch made; return the awaitables still to await."""
        awaitables = {}
        for i, r in enumerate(results):
            if r is _PENDING or r is _FAILED:
                continue
            if inspect.isawaitable(r):
                awaitables[i] = r
                continue
            self.envs[i] = r
            self._is_async[i] = _is_async_env(r)
        return awaitables

    def _setup_spaces(self, observation_mode: Any) -> None:
        first = self.envs[0]
        self.metadata = dict(getattr(first, "metadata", None) or {})
        self.metadata["autoreset_mode"] = self.autoreset_mode
        self.render_mode = getattr(first, "render_mode", None)
        self.single_action_space = first.action_space
        self.action_space = batched_space(self.single_action_space, self.num_envs)
        if isinstance(observation_mode, tuple) and len(observation_mode) == 2:
            if not all(isinstance(s, spaces.Space) for s in observation_mode):
                raise TypeError("observation_mode as a tuple must hold two Spaces")
            self.observation_space, self.single_observation_space = observation_mode
        elif observation_mode == "same":
            self.single_observation_space = first.observation_space
            self.observation_space = batched_space(self.single_observation_space,
                                                   self.num_envs)
        elif observation_mode == "different":
            self.single_observation_space = first.observation_space
            self.observation_space = batch_differing_spaces(
                [env.observation_space for env in self.envs]
            )
        else:
            raise ValueError(
                "observation_mode must be 'same', 'different' or a tuple (batched_space, "
                f"single_space), got {observation_mode!r}"
            )
        for i, env in enumerate(self.envs):
            if (observation_mode == "same"
                    and env.observation_space != self.single_observation_space):
                raise RuntimeError(
                    f"env {i}'s observation_space {env.observation_space} differs from env 0's "
                    f"{self.single_observation_space}; use observation_mode='different'"
                )
            if env.action_space != self.single_action_space:
                raise RuntimeError(
                    f"env {i}'s action_space {env.action_space} differs from env 0's "
                    f"{self.single_action_space}"
                )

    def _initial_env_obs(self) -> list[Any]:
        self._observations = create_empty_array(
            self.single_observation_space, n=self.num_envs, fn=np.zeros
        )
        try:
            return [deepcopy(o) for o in iterate(self.observation_space, self._observations)]
        except Exception:  # spaces whose empty batch cannot be iterated
            return [None] * self.num_envs

    # -------------------------------------------------------------------- dispatch machinery --

    def _submit(
        self, method: str, fn: Callable, afn: Callable, envs: list[Any], args: Any,
        thread_idx: list[int], async_idx: list[int],
        on_done: Callable[[], None] | None = None, spread: int | None = None,
    ) -> _Batch:
        """Start ``fn(envs[i], *args[i])`` in the pool for ``thread_idx`` and
        ``afn(envs[i], *args[i])`` on the private loop for ``async_idx``."""
        batch = _Batch(self.num_envs, fn, afn, envs, args, thread_idx, async_idx,
                       self._env_locks)
        batch.on_done = on_done
        if batch.total == 0:
            if on_done is not None:
                on_done()
            return batch
        if thread_idx:
            if spread is None:
                spread = self._spread.get(method, 1)
            batch.target = min(spread, len(thread_idx))
            self._pool.wake(batch, 1)
        if async_idx:
            lt = self._loop()
            lt.call_soon(batch.start_tasks, lt.loop)
        return batch

    def _resolve_timeout(self, timeout: float | None) -> float | None:
        return self.timeout if timeout is None else self._check_timeout(timeout)

    def _ramp(self, batch: _Batch) -> None:
        """Envs are still unclaimed after a tick. If the chain of threads waking each other
        is still growing, let it be; otherwise the awake threads are blocked or busy: double
        the number of threads wanted and restart the chain."""
        with batch.lock:
            claimed = batch.next
            chain_alive = batch.woken < batch.target and claimed > batch.seen
            batch.seen = claimed
            if not chain_alive:
                batch.target = min(len(batch.items), max(batch.target, batch.woken, 1) * 2)
        if not chain_alive:
            self._pool.wake(batch, 1)

    def _wait_done(self, batch: _Batch, t: float | None) -> bool:
        """Block until ``batch`` is done (True) or ``t`` seconds have passed (False)."""
        done = batch.done
        deadline = None if t is None else time.monotonic() + t
        while True:
            ramp = batch.needs_threads()
            if deadline is None:
                wait = _TICK if ramp else -1
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    return done.acquire(False)
                wait = min(_TICK, left) if ramp else left
            if done.acquire(True, wait):
                return True
            if ramp:
                self._ramp(batch)

    def _wait(self, batch: _Batch, timeout: float | None, *, method: str = "",
              mark_broken: bool) -> list[Any]:
        """Wait for ``batch`` with the sync API; on timeout, abandon it (see
        :meth:`_raise_errors`) and return the partial results."""
        t = self._resolve_timeout(timeout)
        try:
            finished = self._wait_done(batch, t)
        except BaseException:  # KeyboardInterrupt while waiting: the step's results are lost
            self._abandon(batch, mark_broken, everything=True)
            raise
        self._settle(batch, finished, t, method, mark_broken)
        return batch.results

    async def _await(self, batch: _Batch, fut: asyncio.Future, timeout: float | None, *,
                     method: str = "", mark_broken: bool) -> list[Any]:
        """Await ``batch`` from the caller's event loop (same contract as :meth:`_wait`)."""
        t = self._resolve_timeout(timeout)
        loop = asyncio.get_running_loop()
        deadline = None if t is None else loop.time() + t
        try:
            while not fut.done():
                ramp = batch.needs_threads()
                if deadline is None:
                    wait = _TICK if ramp else None
                else:
                    left = deadline - loop.time()
                    if left <= 0:
                        break
                    wait = min(_TICK, left) if ramp else left
                await asyncio.wait({fut}, timeout=wait)
                if ramp and not fut.done():
                    self._ramp(batch)
        except BaseException:  # cancelled: the caller gets none of the results
            self._abandon(batch, mark_broken, everything=True)
            raise
        self._settle(batch, batch.done.acquire(False), t, method, mark_broken)
        return batch.results

    def _settle(self, batch: _Batch, finished: bool, t: float | None, method: str,
                mark_broken: bool) -> None:
        if finished:
            if method and batch.items:  # remember how many threads this call needed
                self._spread[method] = max(1, batch.helpers)
        else:
            pending, started = batch.pending_envs()
            batch.timed_out = (t, pending, started)  # type: ignore[assignment]
            self._abandon(batch, mark_broken)

    @staticmethod
    def _future_factory() -> tuple[asyncio.Future, Callable[[], None]]:
        """A future of the caller's loop, and the callback (run in any thread) that sets it."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def on_done() -> None:
            try:
                loop.call_soon_threadsafe(_set_future_done, fut)
            except RuntimeError:  # the caller's loop is closed: nobody is waiting
                pass

        return fut, on_done

    def _abandon(self, batch: _Batch, mark_broken: bool, everything: bool = False) -> None:
        """Give up on the unfinished part of ``batch`` (timeout, cancellation, Ctrl-C):
        claim nothing more, cancel its tasks, and mark as broken the envs it had started
        (``everything``: all its envs, when the caller gets none of the results)."""
        batch.stop()
        if mark_broken:
            if everything:
                started = batch.indices()
            else:
                started = batch.timed_out[2] if batch.timed_out else batch.pending_envs()[1]
            if started:
                self._broken[started] = True
                self._ready = False
        if batch.tasks and self._loop_thread is not None:
            try:
                self._loop_thread.call_soon(batch.cancel_tasks)
            except RuntimeError:  # the loop is closed
                pass

    def _raise_errors(self, batch: _Batch, method: str) -> None:
        """Raise SubEnvTimeoutError if the call timed out, else SubEnvError if envs raised."""
        errors = dict(list(batch.errors.items()))
        if batch.timed_out is not None:
            t, late, _ = batch.timed_out
            for i in late:  # their tasks' cancellation is our doing, not an env error
                errors.pop(i, None)
            cause = None
            if errors:
                cause = SubEnvError(method, errors)
                cause.__cause__ = errors[min(errors)]
            raise SubEnvTimeoutError(method, late, t, self.num_envs) from cause
        if errors:
            raise SubEnvError(method, errors) from errors[min(errors)]

    def _enter(self, method: str) -> None:
        if self.closed:
            raise ClosedEnvError(f"{method}() called on a closed {type(self).__name__}")
        if not self._busy.acquire(False):
            raise RuntimeError(
                f"{method}() called while another call on this {type(self).__name__} is "
                "running; calls must not overlap (await each astep/areset before the next)"
            )

    def _run_all(self, method: str, fn: Callable, afn: Callable, args: Any,
                 timeout: float | None) -> list[Any]:
        """Run an operation on every env (plain envs in threads, async ones on the loop)."""
        batch = self._submit(method, fn, afn, self.envs, args, self._thread_idx,
                             self._async_idx)
        self._wait(batch, timeout, method=method, mark_broken=False)
        self._raise_errors(batch, method)
        return batch.results

    # ------------------------------------------------------------------------------- reset --

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> tuple[ObsType, dict[str, Any]]:
        """Reset all envs, or those selected by ``options["reset_mask"]``, concurrently.

        Args:
            seed: ``None``; an int ``s`` (env ``i`` gets ``s + i``); or a list of one seed
                (int or None) per env.
            options: passed to each env's ``reset``. ``options["reset_mask"]`` (a numpy bool
                array of shape ``(num_envs,)`` with at least one True) resets only those envs
                and is not passed on. The caller's dict is never modified.
            timeout: seconds to wait for the envs (default: the instance's ``timeout``).

        Returns:
            The batched observations (rows of envs not reset keep their last observation)
            and the batched infos of the envs that were reset.

        Raises:
            TypeError / ValueError: bad ``seed``, ``options`` or ``reset_mask`` (as
                ``SyncVectorEnv``).
            ClosedEnvError: the env is closed.
            SubEnvError / SubEnvTimeoutError: envs raised / did not answer in time; the envs
                that did reset are recorded, the others must be reset again before stepping.
        """
        self._enter("reset")
        try:
            args, thread_idx, async_idx, idxs = self._reset_args(seed, options)
            batch = self._submit("reset", _reset_one, _areset_one, self.envs, args, thread_idx,
                                 async_idx)
            self._wait(batch, timeout, method="reset", mark_broken=True)
            return self._reset_finish(batch, idxs)
        finally:
            self._busy.release()

    async def areset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> tuple[ObsType, dict[str, Any]]:
        """:meth:`reset` for code running in an event loop: awaits instead of blocking it."""
        self._enter("areset")
        try:
            args, thread_idx, async_idx, idxs = self._reset_args(seed, options)
            fut, on_done = self._future_factory()
            batch = self._submit("reset", _reset_one, _areset_one, self.envs, args, thread_idx,
                                 async_idx, on_done)
            await self._await(batch, fut, timeout, method="reset", mark_broken=True)
            return self._reset_finish(batch, idxs)
        finally:
            self._busy.release()

    def _reset_args(self, seed: Any, options: Any):
        n = self.num_envs
        if seed is None:
            seeds: list[Any] = [None] * n
        elif isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(n)]
        elif isinstance(seed, (list, tuple, np.ndarray)):
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(
                    f"If seeds are passed as a list the length must match num_envs={n} but got "
                    f"length={len(seeds)}."
                )
        else:
            raise TypeError(
                f"`seed` must be None, an int or a list of {n} ints/None, got "
                f"{type(seed).__name__}"
            )
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"`options` must be a dict or None, got {type(options).__name__}")

        if options is not None and "reset_mask" in options:
            mask = options["reset_mask"]
            if not isinstance(mask, np.ndarray):
                raise TypeError(
                    f"`options['reset_mask']` must be a numpy array, got {type(mask)}"
                )
            if mask.shape != (n,):
                raise ValueError(
                    f"`options['reset_mask']` must have shape `({n},)`, got {mask.shape}"
                )
            if mask.dtype != np.bool_:
                raise TypeError(
                    f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}"
                )
            if not np.any(mask):
                raise ValueError(
                    "`options['reset_mask']` must contain a boolean array with at least one "
                    f"True value, got reset_mask={mask}"
                )
            sub_options = {k: v for k, v in options.items() if k != "reset_mask"}
            idxs = np.flatnonzero(mask).tolist()
        else:
            sub_options = options
            idxs = list(range(n))
        chosen = set(idxs)
        thread_idx = [i for i in self._thread_idx if i in chosen]
        async_idx = [i for i in self._async_idx if i in chosen]
        return [(s, sub_options) for s in seeds], thread_idx, async_idx, idxs

    def _reset_finish(self, batch: _Batch, idxs: list[int]):
        results = batch.results
        if batch.errors or batch.timed_out:
            # Record the envs that did reset; the others must be reset again.
            failed = set(batch.failed_envs())
            ok = [i for i in idxs if i not in failed]
            for i in ok:
                self._env_obs[i] = results[i][0]
            self._broken[sorted(set(batch.errors))] = True
            self._mark_reset(ok)
            self._raise_errors(batch, "reset")
        infos: dict[str, Any] = {}
        env_obs = self._env_obs
        add_info = self._add_info
        for i in idxs:
            env_obs[i], info = results[i]
            if info:
                infos = add_info(infos, info, i)
        self._mark_reset(idxs)
        self._observations = concatenate(
            self.single_observation_space, env_obs, self._observations
        )
        return self._obs_out(), infos

    def _mark_reset(self, idxs: list[int]) -> None:
        if idxs:
            self._autoreset[idxs] = False
            self._reset_done[idxs] = True
            self._broken[idxs] = False
        self._ready = bool(self._reset_done.all() and not self._broken.any())

    def _obs_out(self) -> Any:
        obs = self._observations
        if not self.copy:
            return obs
        return obs.copy() if isinstance(obs, np.ndarray) else deepcopy(obs)

    # -------------------------------------------------------------------------------- step --

    def step(self, actions: ActType, *, timeout: float | None = None):
        """Step every env with its action concurrently (auto-resetting as the mode says).

        Args:
            actions: batched actions, an element of :attr:`action_space` (lists accepted).
            timeout: seconds to wait for the envs (default: the instance's ``timeout``).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``: numpy arrays
            (rewards float64, flags bool) and batched infos with ``_key`` masks.

        Raises:
            ValueError: ``actions`` does not have the shape of :attr:`action_space`.
            StepBeforeResetError: ``reset()`` was not called (for all envs) yet.
            ResetNeeded: an env's last step or reset failed or timed out.
            ClosedEnvError: the env is closed.
            SubEnvError / SubEnvTimeoutError: envs raised / did not answer in time; the envs
                that did step keep consistent state, the failed ones must be reset.
        """
        self._enter("step")
        try:
            args = self._step_args(actions)
            batch = self._submit("step", self._step_fn, self._astep_fn, self.envs, args,
                                 self._thread_idx, self._async_idx)
            self._wait(batch, timeout, method="step", mark_broken=True)
            return self._step_finish(batch)
        finally:
            self._busy.release()

    async def astep(self, actions: ActType, *, timeout: float | None = None):
        """:meth:`step` for code running in an event loop: awaits instead of blocking it."""
        self._enter("astep")
        try:
            args = self._step_args(actions)
            fut, on_done = self._future_factory()
            batch = self._submit("step", self._step_fn, self._astep_fn, self.envs, args,
                                 self._thread_idx, self._async_idx, on_done)
            await self._await(batch, fut, timeout, method="step", mark_broken=True)
            return self._step_finish(batch)
        finally:
            self._busy.release()

    def _step_args(self, actions: Any) -> list[tuple[Any, bool]]:
        if not self._ready:
            self._raise_not_ready()
        _check_actions(self.single_action_space, self.action_space, actions, "actions",
                       self.num_envs)
        return list(zip(iterate(self.action_space, actions), self._autoreset.tolist(),
                        strict=True))

    def _raise_not_ready(self) -> None:
        never = np.flatnonzero(~self._reset_done).tolist()
        if never:
            if len(never) == self.num_envs:
                raise StepBeforeResetError("step() called before reset(): call reset() first")
            raise StepBeforeResetError(
                f"step() called before envs {_listed(never)} were ever reset: call reset() "
                "first"
            )
        broken = np.flatnonzero(self._broken).tolist()
        raise ResetNeeded(
            f"envs {_listed(broken)} failed or timed out in their last step/reset: reset them "
            "(reset(), or reset(options={'reset_mask': mask})) before stepping again"
        )

    def _step_finish(self, batch: _Batch):
        n = self.num_envs
        results = batch.results
        if batch.errors or batch.timed_out:
            # Keep the bookkeeping of the envs that did step, so that after a masked reset of
            # the failed envs every env continues exactly where it is.
            failed = set(batch.failed_envs())
            for i in range(n):
                r = results[i]
                if i not in failed and r is not _FROZEN:
                    self._env_obs[i] = r[0]
                    self._autoreset[i] = bool(r[2] or r[3])
            self._broken[sorted(set(batch.errors))] = True
            self._ready = False
            self._raise_errors(batch, "step")

        rewards = np.zeros(n, dtype=np.float64)
        terminations = np.zeros(n, dtype=np.bool_)
        truncations = np.zeros(n, dtype=np.bool_)
        env_obs = self._env_obs
        add_info = self._add_info
        infos: dict[str, Any] = {}
        i = 0
        try:
            if self.autoreset_mode is AutoresetMode.SAME_STEP:
                for i, (obs, reward, term, trunc, info, final) in enumerate(results):
                    env_obs[i] = obs
                    rewards[i] = reward
                    terminations[i] = term
                    truncations[i] = trunc
                    if final is not None:
                        infos = add_info(infos, final, i)
                    if info:
                        infos = add_info(infos, info, i)
            else:
                for i, result in enumerate(results):
                    if result is _FROZEN:  # DISABLED: obs unchanged, reward 0, flags False
                        continue
                    obs, reward, term, trunc, info = result
                    env_obs[i] = obs
                    rewards[i] = reward
                    terminations[i] = term
                    truncations[i] = trunc
                    if info:
                        infos = add_info(infos, info, i)
        except (TypeError, ValueError, AttributeError) as exc:
            self._broken[:] = True  # the bookkeeping of this step is incomplete
            self._ready = False
            raise ValueError(
                f"env {i}'s step() returned {_short_repr(results[i])}; expected (obs, reward, "
                "terminated, truncated, info) with a dict info; every env must be reset"
            ) from exc
        self._observations = concatenate(
            self.single_observation_space, env_obs, self._observations
        )
        if self.autoreset_mode is AutoresetMode.DISABLED:  # finished envs wait for a reset
            self._autoreset |= terminations | truncations
        else:
            self._autoreset = terminations | truncations
        return self._obs_out(), rewards, terminations, truncations, infos

    # ------------------------------------------------------------ render, call, attributes --

    def render(self, *, timeout: float | None = None) -> tuple[Any, ...]:
        """Render every env concurrently; returns the frames in env order."""
        self._enter("render")
        try:
            args = [("render",)] * self.num_envs
            return tuple(self._run_all("render", _method, _amethod, args, timeout))
        finally:
            self._busy.release()

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every env concurrently (or read it, if not callable).

        Plain envs' methods run in the pool threads, async envs' on the private loop;
        coroutine results are awaited there. Uses the instance ``timeout``.

        Returns:
            The results, in env order.
        """
        self._enter("call")
        try:
            method = f"call({name!r})"
            batch_args = [(name, args, kwargs)] * self.num_envs
            results = self._run_all(method, _call_attr, _acall_attr, batch_args, None)
            return tuple(self._await_results(results, None, method))
        finally:
            self._busy.release()

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every env (via ``get_wrapper_attr``), in env order."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` on every env: one value for all, or a list/tuple per env.

        Raises:
            ValueError: ``values`` is a list/tuple whose length is not ``num_envs``.
        """
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(
                "Values must be a list or tuple with length equal to the number of "
                f"environments. Got `{len(values)}` values for {self.num_envs} environments."
            )
        self._enter("set_attr")
        try:
            self._run_all(f"set_attr({name!r})", _set_attr, _aset_attr,
                          [(name, v) for v in values], None)
        finally:
            self._busy.release()

    def parallel(
        self,
        fn: Callable[..., Any],
        per_env_args: Sequence[Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> list[Any]:
        """Run ``fn(env, per_env_args[i])`` (or ``fn(env)``) for every env concurrently.

        A plain ``fn`` runs in the pool threads; an ``async def fn`` runs on the private
        event loop, all envs at once (as does the awaitable a plain ``fn`` may return).

        Returns:
            The results, in env order.

        Raises:
            TypeError: ``fn`` is not callable.
            ValueError: ``per_env_args`` does not have one entry per env.
            SubEnvError / SubEnvTimeoutError: ``fn`` raised / did not finish for some envs.
        """
        self._enter("parallel")
        try:
            batch = self._parallel_submit(fn, per_env_args, None)
            self._wait(batch, timeout, method="parallel", mark_broken=False)
            self._raise_errors(batch, "parallel")
            return self._await_results(batch.results, timeout, "parallel")
        finally:
            self._busy.release()

    async def aparallel(
        self,
        fn: Callable[..., Any],
        per_env_args: Sequence[Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> list[Any]:
        """:meth:`parallel` for code running in an event loop (``fn`` still runs in the
        pool threads or on the private loop)."""
        self._enter("aparallel")
        try:
            fut, on_done = self._future_factory()
            batch = self._parallel_submit(fn, per_env_args, on_done)
            results = await self._await(batch, fut, timeout, method="parallel",
                                        mark_broken=False)
            self._raise_errors(batch, "parallel")
            awaitables = [i for i, r in enumerate(results) if inspect.isawaitable(r)]
            results = list(results)
            if awaitables:
                fut, on_done = self._future_factory()
                batch = self._submit("parallel-await", _apply, _await_value, self.envs,
                                     [(r,) for r in results], [], awaitables, on_done)
                results2 = await self._await(batch, fut, timeout, mark_broken=False)
                self._raise_errors(batch, "parallel")
                for i in awaitables:
                    results[i] = results2[i]
            return results
        finally:
            self._busy.release()

    def _parallel_submit(self, fn: Any, per_env_args: Any, on_done: Any) -> _Batch:
        n = self.num_envs
        if not callable(fn):
            raise TypeError(f"`fn` must be callable, got {type(fn).__name__}")
        if per_env_args is None:
            args: list[tuple[Any, ...]] = [(fn,)] * n
        else:
            try:
                length = len(per_env_args)
            except TypeError:
                raise ValueError(
                    f"`per_env_args` must be a sequence with one entry per env (num_envs={n}), "
                    f"got {type(per_env_args).__name__}"
                ) from None
            if length != n:
                raise ValueError(
                    f"`per_env_args` must have one entry per env (num_envs={n}), got length "
                    f"{length}"
                )
            args = [(fn, a) for a in per_env_args]
        everyone = list(range(n))
        if inspect.iscoroutinefunction(fn):
            return self._submit("parallel", _apply, _aapply, self.envs, args, [], everyone,
                                on_done)
        return self._submit("parallel", _apply, _aapply, self.envs, args, everyone, [], on_done)

    def _await_results(self, results: list[Any], timeout: float | None, method: str) -> list:
        """Await, on the private loop, the awaitables that plain functions returned."""
        results = list(results)
        awaitables = [i for i, r in enumerate(results) if inspect.isawaitable(r)]
        if awaitables:
            batch = self._submit(method, _apply, _await_value, self.envs,
                                 [(r,) for r in results], [], awaitables)
            self._wait(batch, timeout, mark_broken=False)
            self._raise_errors(batch, method)
            for i in awaitables:
                results[i] = batch.results[i]
        return results

    @property
    def np_random_seed(self) -> tuple[int, ...]:
        """The np random seeds of the sub-envs."""
        return self.get_attr("np_random_seed")

    @property
    def np_random(self) -> tuple[np.random.Generator, ...]:
        """The numpy random generators of the sub-envs."""
        return self.get_attr("np_random")

    # ------------------------------------------------------------------------------- close --

    def close(self, *, timeout: float | None = None, **kwargs: Any) -> None:
        """Close the sub-envs concurrently and release the threads; never hangs.

        Envs still busy in a call that timed out are not waited for (their ``close`` runs
        when that call returns, if ever). The others get ``timeout`` seconds (default
        :data:`CLOSE_TIMEOUT`); a ``RuntimeWarning`` names those that did not close in time.
        Closing twice is a no-op.

        Raises:
            SubEnvError: envs raised in ``close()`` (everything is shut down anyway).
        """
        if self.closed:
            return
        t = CLOSE_TIMEOUT if timeout is None else self._check_timeout(timeout)
        self._shutdown(timeout=t, raise_errors=True, warn=True)

    def close_extras(self, **kwargs: Any) -> None:
        """Part of the ``VectorEnv`` interface; :meth:`close` does the work."""
        self._shutdown(timeout=CLOSE_TIMEOUT, raise_errors=True, warn=True)

    def _shutdown(self, *, timeout: float | None, raise_errors: bool, warn: bool) -> None:
        self.closed = True
        present = [i for i, e in enumerate(self.envs) if e is not None]
        # Envs still inside a call that timed out: close them once it returns, in the
        # background, instead of waiting for it.
        stuck = [i for i in present if not self._is_async[i] and self._env_locks[i].locked()]
        for i in stuck:
            threading.Thread(target=_close_when_free, args=(self.envs[i], self._env_locks[i]),
                             name=f"batchenv-close-{i}", daemon=True).start()
        stuck_set = set(stuck)
        now = [i for i in present if i not in stuck_set]
        errors: dict[int, BaseException] = {}
        if now:
            thread_idx = [i for i in now if not self._is_async[i]]
            batch = self._submit("close", _close_env, _aclose_env, self.envs, None, thread_idx,
                                 [i for i in now if self._is_async[i]],
                                 spread=len(thread_idx))
            if not self._wait_done(batch, timeout) and warn:
                warnings.warn(
                    f"{type(self).__name__}.close(): envs {_listed(batch.pending_envs()[0])} "
                    f"did not close within {timeout:g} s; abandoning them",
                    RuntimeWarning,
                    stacklevel=3,
                )
            errors = dict(list(batch.errors.items()))
        self._pool.shutdown()
        if self._loop_thread is not None:
            self._loop_thread.stop()
        if errors and raise_errors:
            raise SubEnvError("close", errors) from errors[min(errors)]

    def __del__(self) -> None:
        if getattr(self, "closed", True):
            return
        try:
            if sys.is_finalizing():  # no new threads now: just let the idle ones go
                self.closed = True
                self._pool.shutdown()
            else:
                self._shutdown(timeout=0.01, raise_errors=False, warn=False)
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    def __repr__(self) -> str:
        envs = getattr(self, "envs", None)
        spec = getattr(envs[0], "spec", None) if envs else None
        env_id = f"{spec.id}, " if getattr(spec, "id", None) else ""
        return (
            f"{type(self).__name__}({env_id}num_envs={getattr(self, 'num_envs', '?')}, "
            f"executor={getattr(self, 'executor', '?')!r})"
        )


def _close_when_free(env: Any, lock: threading.Lock) -> None:
    with lock:
        try:
            env.close()
        except Exception:  # noqa: BLE001 - nobody is left to tell
            pass


def _close_late_envs(batch: _Batch, late: list[int]) -> None:
    """Close the envs that factories abandoned by the caller (a timeout, Ctrl-C) return
    after all, from a daemon thread that waits for them: nobody else holds them.

    ``late``: the factories without a result when the caller adopted the others. Those
    never started (the batch is stopped, so they never will) are not waited for."""
    with batch.lock:
        started = set(batch.items[: batch.next]) | set(batch.tasks)
    pending = [i for i in late if i in started]
    if not pending:
        return

    def reap(pending: list[int] = pending) -> None:
        poll = 0.01
        while pending:
            time.sleep(poll)
            poll = min(2 * poll, 1.0)  # a factory that hangs for good costs ~1 wake-up/s
            still = []
            for i in pending:
                result = batch.results[i]
                if result is _PENDING:
                    still.append(i)
                elif result is not _FAILED:
                    _close_quietly(result)
            pending = still

    threading.Thread(target=reap, name="batchenv-late-env-closer", daemon=True).start()


def _close_quietly(obj: Any) -> None:
    """Close an env (or an awaitable) nobody will use; errors are ignored (nobody to tell)."""
    try:
        if inspect.isawaitable(obj):
            _close_awaitable(obj)
        else:
            obj.close()
    except Exception:  # noqa: BLE001
        pass


def _close_awaitable(obj: Awaitable) -> None:
    close = getattr(obj, "close", None)
    if close is not None:
        close()
