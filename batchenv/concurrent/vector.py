""":class:`ConcurrentVectorEnv`, with one code path for the plain and the awaitable API.

Each call is one coroutine (``_reset``, ``_step``, ``_gather``) that starts a
:class:`~batchenv.concurrent._run.Batch` and awaits :class:`_Wait` objects. ``reset``/``step``
run it in the calling thread, blocking on the batch (:meth:`ConcurrentVectorEnv._blocking`);
``areset``/``astep`` run it inside the caller's event loop, awaiting a future instead
(:meth:`ConcurrentVectorEnv._awaiting`). Nothing else differs between the two.
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
from collections.abc import Callable, Coroutine, Mapping, Sequence
from copy import deepcopy
from typing import Any, Generic

import numpy as np
from gymnasium import spaces
from gymnasium.core import ActType, ObsType
from gymnasium.error import ResetNeeded
from gymnasium.vector.utils import batch_differing_spaces, concatenate, create_empty_array, iterate
from gymnasium.vector.vector_env import AutoresetMode, VectorEnv

from batchenv.concurrent import _run
from batchenv.concurrent._run import FAILED, PENDING, BadResult, SubEnvError, SubEnvTimeoutError
from batchenv.core import (
    ClosedEnvError,
    StepBeforeResetError,
    _check_autoreset_mode,
    _check_options,
    _is_int,
    _listed,
    batched_space,
    check_seed,
)

#: Upper bound on the number of worker threads chosen by ``max_workers=None``.
MAX_THREADS = 256
#: Default time ``close()`` waits for the sub-envs to close before giving up on them.
CLOSE_TIMEOUT = 10.0
_SAME_STEP = AutoresetMode.SAME_STEP
_STEP_OPS: dict[AutoresetMode, Callable[..., Any]] = {
    AutoresetMode.NEXT_STEP: _run.next_step, _SAME_STEP: _run.same_step,
    AutoresetMode.DISABLED: _run.step}


class _Wait:
    """What the call coroutines await: ``batch`` finished, or ``seconds`` passed (None: no
    limit). The driver running the coroutine does the waiting."""

    def __init__(self, batch: _run.Batch, seconds: float | None):
        self.batch, self.seconds = batch, seconds

    def __await__(self):
        yield self


class ConcurrentVectorEnv(VectorEnv[ObsType, ActType, np.ndarray], Generic[ObsType, ActType]):
    """A ``VectorEnv`` over ordinary envs that runs their calls concurrently.

    Semantics are those of :class:`gymnasium.vector.SyncVectorEnv` (results equal step by step
    for the same envs and seeds) in all three auto-reset modes, except that in ``DISABLED``
    mode a finished env that is not reset stands still (same observation, reward 0, flags
    False, its ``step`` not called) instead of failing an assertion. A call returns when every
    env has answered; then envs that failed are named in a :class:`SubEnvError` (or
    :class:`SubEnvTimeoutError`), and must be reset before the next step while the others
    keep their state. See ``docs/concurrency.md``.

    Args:
        env_fns: callables creating the sub-envs, called concurrently in the pool threads;
            under ``executor="asyncio"`` a factory may be ``async def`` (or return an
            awaitable), awaited on the private event loop.
        executor: ``"thread"`` (plain envs in a thread pool) or ``"asyncio"``
            (:class:`AsyncEnv` envs as tasks of a private event loop; plain envs accepted too
            and run in the thread pool).
        max_workers: maximum number of pool threads; ``None``: one per env, up to
            :data:`MAX_THREADS`. Threads start on demand, as many as the envs need.
        autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED`` (or its string
            value); stored in ``metadata["autoreset_mode"]``.
        copy: return a copy of the observation buffer (``False``: the internal buffer).
        timeout: default per-call timeout in seconds (``None``: none); ``reset``, ``step``,
            ``render``, ``parallel`` and their async forms take ``timeout=`` for one call
            (``math.inf``: wait forever).
        observation_mode: as in ``SyncVectorEnv``: ``"same"``, ``"different"`` or a tuple
            ``(batched_space, single_space)``.

    Raises:
        ValueError: bad ``executor``, ``max_workers``, ``timeout``, ``observation_mode``,
            ``autoreset_mode`` or an empty ``env_fns``.
        TypeError: a factory is not callable; an async env under ``executor="thread"``; an
            env's ``step`` and ``reset`` disagree about being coroutines.
        RuntimeError: the sub-envs' spaces differ (as in ``SyncVectorEnv``).
        SubEnvError / SubEnvTimeoutError: a factory raised / did not return in time (the
            envs already made are closed, and so is any env a late factory returns).
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
        if executor not in ("thread", "asyncio"):
            raise ValueError(f"executor must be 'thread' or 'asyncio', got {executor!r}")
        if max_workers is not None and not (_is_int(max_workers) and max_workers >= 1):
            raise ValueError(f"max_workers must be None or an int >= 1, got {max_workers!r}")
        self.timeout = _check_timeout(timeout)
        self.autoreset_mode = _check_autoreset_mode(autoreset_mode)
        self.env_fns, self.executor, self.copy = env_fns, executor, copy
        self.observation_mode = observation_mode
        self.num_envs = n = len(env_fns)
        self.max_workers = min(n, MAX_THREADS) if max_workers is None else int(max_workers)
        self._pool = _run.Pool(self.max_workers)
        self._loop_thread = _run.LoopThread() if executor == "asyncio" else None
        self._loop_lock = threading.Lock()
        self._spread: dict[str, int] = {}  # method -> threads its last call needed
        self._locks = [threading.Lock() for _ in range(n)]  # held while an env runs
        self._busy = threading.Lock()  # held during a call: calls must not overlap
        self.envs: list[Any] = [None] * n
        self._is_async = [False] * n
        try:
            self._blocking(self._make_envs(env_fns), "make")
            self._setup_spaces(observation_mode)
        except BaseException:
            self._shutdown(1.0, raise_errors=False, warn=False)
            raise
        self._autoreset = np.zeros(n, dtype=np.bool_)  # episode over: reset on next step
        self._reset_done = np.zeros(n, dtype=np.bool_)  # reset at least once
        self._broken = np.zeros(n, dtype=np.bool_)  # last step/reset failed: must be reset
        self._ready = False  # every env reset and none broken: the fast path of step()
        self.closed = False

    # ------------------------------------------------------------------------- public API --

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None, timeout: float | None = None
              ) -> tuple[ObsType, dict[str, Any]]:
        """Reset all envs, or those of ``options["reset_mask"]``, concurrently.

        Args:
            seed: ``None``; an int ``s`` (env ``i`` gets ``s + i``); or a list of one seed
                (int or None) per env.
            options: passed to each env's ``reset``, except ``"reset_mask"`` (a numpy bool
                array of shape ``(num_envs,)`` with a True): only those envs are reset. The
                caller's dict is never modified.
            timeout: seconds to wait for the envs (default: the instance's ``timeout``).

        Returns:
            The batched observations (envs not reset keep theirs) and the batched infos of
            the envs that were reset.

        Raises:
            TypeError / ValueError: bad ``seed``, ``options`` or ``reset_mask``.
            ClosedEnvError: the env is closed.
            SubEnvError / SubEnvTimeoutError: envs raised, returned an observation that does
                not fit the space (then a ``ValueError`` too) or did not answer in time; the
                envs that did reset are recorded, the others must be reset again.
        """
        return self._blocking(self._reset(seed, options, timeout), "reset")

    async def areset(self, *, seed: int | Sequence[int | None] | None = None,
                     options: dict[str, Any] | None = None, timeout: float | None = None
                     ) -> tuple[ObsType, dict[str, Any]]:
        """:meth:`reset` for code running in an event loop: awaits instead of blocking it."""
        return await self._awaiting(self._reset(seed, options, timeout), "areset")

    def step(self, actions: ActType, *, timeout: float | None = None):
        """Step every env with its action concurrently (auto-resetting as the mode says).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``: numpy arrays
            (rewards float64, flags bool) and batched infos with ``_key`` masks.

        Raises:
            ValueError: ``actions`` does not have the shape of :attr:`action_space`.
            StepBeforeResetError: some env was never reset.
            ResetNeeded: an env's last step or reset failed or timed out.
            ClosedEnvError: the env is closed.
            SubEnvError / SubEnvTimeoutError: as for :meth:`reset`; the envs that did step
                keep consistent state, the failed ones must be reset.
        """
        return self._blocking(self._step(actions, timeout), "step")

    async def astep(self, actions: ActType, *, timeout: float | None = None):
        """:meth:`step` for code running in an event loop: awaits instead of blocking it."""
        return await self._awaiting(self._step(actions, timeout), "astep")

    def render(self, *, timeout: float | None = None) -> tuple[Any, ...]:
        """Render every env concurrently; returns the frames in env order."""
        return tuple(self._blocking(self._gather("render", _render, None, timeout), "render"))

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every env concurrently (or read it, if not callable);
        coroutine results are awaited on the private loop. Returns the results in env order."""
        call = self._gather(f"call({name!r})", _call, [(name, args, kwargs)] * self.num_envs)
        return tuple(self._blocking(call, "call"))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every env (via ``get_wrapper_attr``), in env order."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` on every env: one value for all, or a list/tuple per env."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError("Values must be a list or tuple with length equal to the number of "
                             f"environments. Got `{len(values)}` values for {self.num_envs} "
                             "environments.")
        self._blocking(self._gather(f"set_attr({name!r})", _set_attr,
                                    [(name, v) for v in values]), "set_attr")

    def parallel(self, fn: Callable[..., Any], per_env_args: Sequence[Any] | None = None, *,
                 timeout: float | None = None) -> list[Any]:
        """Run ``fn(env, per_env_args[i])`` (or ``fn(env)``) for every env concurrently.

        A plain ``fn`` runs in the pool threads (for async envs, on the private loop); an
        awaitable it returns (``async def fn``) is awaited on the private event loop.

        Returns:
            The results, in env order.

        Raises:
            TypeError: ``fn`` is not callable.
            ValueError: ``per_env_args`` does not have one entry per env.
            SubEnvError / SubEnvTimeoutError: ``fn`` raised / did not finish for some envs.
        """
        return self._blocking(self._parallel(fn, per_env_args, timeout), "parallel")

    async def aparallel(self, fn: Callable[..., Any], per_env_args: Sequence[Any] | None = None,
                        *, timeout: float | None = None) -> list[Any]:
        """:meth:`parallel` for code running in an event loop."""
        return await self._awaiting(self._parallel(fn, per_env_args, timeout), "aparallel")

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]
        """The np random seeds of the sub-envs."""
        return self.get_attr("np_random_seed")

    @property  # type: ignore[override, misc]
    def np_random(self) -> tuple[np.random.Generator, ...]:  # type: ignore[override]
        """The numpy random generators of the sub-envs."""
        return self.get_attr("np_random")

    def close(self, *, timeout: float | None = None, **kwargs: Any) -> None:
        """Close the sub-envs concurrently and release the threads; never hangs.

        Envs still busy in a call that timed out are closed when that call returns (if
        ever), by a daemon thread. The others get ``timeout`` seconds (default
        :data:`CLOSE_TIMEOUT`); a ``RuntimeWarning`` names those that did not close in time.
        Closing twice does nothing.

        Raises:
            SubEnvError: envs raised in ``close()`` (everything is shut down anyway).
        """
        if not self.closed:
            t = _check_timeout(timeout)
            self._shutdown(CLOSE_TIMEOUT if t is None else t, raise_errors=True, warn=True)

    # ----------------------------------------------------- drivers of the call coroutines --

    def _enter(self, method: str, coro: Coroutine) -> None:
        error: Exception | None = None
        if self.closed and method != "make":
            error = ClosedEnvError(f"{method}() called on a closed {type(self).__name__}")
        elif not self._busy.acquire(False):
            error = RuntimeError(f"{method}() called while another call on this "
                                 f"{type(self).__name__} is running; calls must not overlap "
                                 "(await each astep/areset before the next)")
        if error is not None:
            coro.close()
            raise error

    def _blocking(self, coro: Coroutine, method: str) -> Any:
        """Run a call coroutine in this thread, blocking on each batch it waits for."""
        self._enter(method, coro)
        try:
            exc: BaseException | None = None
            while True:
                try:
                    wait = coro.throw(exc) if exc is not None else coro.send(None)
                except StopIteration as stop:
                    return stop.value
                try:
                    exc = None
                    wait.batch.wait(wait.seconds)
                except BaseException as e:  # Ctrl-C: the call abandons its batch
                    exc = e
        finally:
            self._busy.release()

    async def _awaiting(self, coro: Coroutine, method: str) -> Any:
        """Run a call coroutine inside the caller's event loop, awaiting each batch."""
        self._enter(method, coro)
        try:
            try:
                await asyncio.sleep(0)  # let the caller's loop run at least once per call
            except BaseException:  # cancelled before it started
                coro.close()
                raise
            loop = asyncio.get_running_loop()
            exc: BaseException | None = None
            while True:
                try:
                    wait = coro.throw(exc) if exc is not None else coro.send(None)
                except StopIteration as stop:
                    return stop.value
                try:
                    exc = None
                    future = loop.create_future()
                    wait.batch.on_finish(lambda f=future: _call_soon(loop, _set_done, f))
                    await asyncio.wait({future}, timeout=wait.seconds)
                except BaseException as e:  # cancelled: the call abandons its batch
                    exc = e
        finally:
            self._busy.release()

    # ----------------------------------------------------------------------- the one core --

    async def _dispatch(self, method: str, op: Callable, args: list[tuple], idx: Sequence[int],
                   timeout: float | None, *, breaks: bool = False, envs: list[Any] | None = None,
                   on_loop: Sequence[bool] | None = None, awaits: bool = False,
                   late: Callable[[Any], None] | None = None) -> _run.Batch:
        """Run ``op(env, *args[i])`` for the envs ``idx`` (async ones, or ``on_loop``, as tasks
        of the private loop, the others in the pool; with ``awaits``, awaitable results are
        awaited on the loop); wait for them, ramping up threads. On a timeout or cancellation,
        abandon the batch; ``breaks``: the envs it had started are ``_broken`` then."""
        batch = self._start(op, args, idx, self._spread.get(method, 1), envs, on_loop,
                            awaits, late)
        t = self.timeout if timeout is None else _check_timeout(timeout)
        deadline = None if t is None else time.monotonic() + t
        try:
            while not batch.finished:
                ramp = batch.needs_threads(self._pool)
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                await _Wait(batch, _run.TICK if ramp and (left is None or left > _run.TICK)
                            else left)
                if ramp and not batch.finished:
                    batch.ramp(self._pool)
        except BaseException:  # Ctrl-C or cancelled: the caller gets none of the results
            self._abandon(batch, batch.threaded + batch.task_idx if breaks else [])
            raise
        if batch.finished:
            if batch.threaded:
                self._spread[method] = max(1, batch.helpers)
        else:
            pending, started = self._abandon(batch, [])
            batch.timed_out = (t, pending)  # type: ignore[assignment]
            self._set_broken(started if breaks else [])
        return batch

    def _start(self, op: Callable, args: list[tuple], idx: Sequence[int], threads: int,
               envs: list[Any] | None = None, on_loop: Sequence[bool] | None = None,
               awaits: bool = False, late: Callable[[Any], None] | None = None) -> _run.Batch:
        on_loop = self._is_async if on_loop is None else on_loop
        threaded, tasks = (list(idx), []) if not any(on_loop) else (
            [i for i in idx if not on_loop[i]], [i for i in idx if on_loop[i]])
        batch = _run.Batch(op, self.envs if envs is None else envs, args, threaded, tasks,
                           self._locks, threads, self._loop if awaits else None, late)
        if batch.threaded:
            self._pool.wake(batch)
        if batch.task_idx:
            self._loop().call_soon(batch.start_tasks)
        return batch

    def _abandon(self, batch: _run.Batch, broken: list[int]) -> tuple[list[int], list[int]]:
        pending_started = batch.stop()
        if batch.tasks:
            self._loop().call_soon(lambda: [task.cancel() for task in batch.tasks])
        self._set_broken(broken)
        return pending_started

    def _set_broken(self, idx: Sequence[int]) -> None:
        if len(idx):
            self._broken[list(idx)] = True
            self._ready = False

    def _raise(self, batch: _run.Batch, method: str, bad: dict[int, BadResult] | None = None
               ) -> None:
        """Raise SubEnvTimeoutError if the call timed out, else SubEnvError if envs failed."""
        errors = {**batch.errors, **(bad or {})}
        if batch.timed_out is not None:
            t, late = batch.timed_out
            for i in late:  # their tasks' cancellation is our doing, not an env error
                errors.pop(i, None)
            cause = SubEnvError.of(method, errors) if errors else None
            raise SubEnvTimeoutError(method, late, t, self.num_envs) from cause
        if errors:
            raise SubEnvError.of(method, errors)

    async def _gather(self, method: str, fn: Callable, args: list[tuple] | None = None,
                      timeout: float | None = None, **kwargs: Any) -> list[Any]:
        """``fn(env, *args[i])`` for every env, awaiting the awaitables it returns."""
        n = self.num_envs
        args = [(fn, *a) for a in args] if args else [(fn,)] * n
        batch = await self._dispatch(method, _run.apply, args, range(n), timeout, awaits=True,
                                **kwargs)
        self._raise(batch, method)
        return batch.results

    async def _parallel(self, fn: Any, per_env_args: Any, timeout: float | None) -> list[Any]:
        n = self.num_envs
        if not callable(fn):
            raise TypeError(f"`fn` must be callable, got {type(fn).__name__}")
        if per_env_args is None:
            return await self._gather("parallel", fn, None, timeout)
        if not hasattr(per_env_args, "__len__") or len(per_env_args) != n:
            raise ValueError(f"`per_env_args` must be a sequence with one entry per env "
                             f"(num_envs={n})")
        return await self._gather("parallel", _apply, [(fn, a) for a in per_env_args], timeout)

    # ----------------------------------------------------------------------- construction --

    def _loop(self) -> _run.LoopThread:
        with self._loop_lock:  # executor="thread" starts one only to await a coroutine
            if self._loop_thread is None:
                self._loop_thread = _run.LoopThread()
            return self._loop_thread

    async def _make_envs(self, env_fns: list[Callable[[], Any]]) -> None:
        """Call the factories concurrently. What they made is adopted even when some fail, so
        that the failed constructor closes it; what a late factory makes is closed when it
        arrives."""
        on_loop = [self.executor == "asyncio" and inspect.iscoroutinefunction(fn)
                   for fn in env_fns]
        batch = await self._dispatch("env_fn", _run.apply, [(_make, fn) for fn in env_fns],
                                range(self.num_envs), None, envs=[None] * self.num_envs,
                                on_loop=on_loop, awaits=self.executor == "asyncio",
                                late=_close_quietly)
        pending = []
        for i, env in enumerate(batch.results):
            if _run.awaitable(env):  # executor="thread" cannot await it
                pending.append(i)
                _close_quietly(env)
            elif env is not PENDING and env is not FAILED:
                self.envs[i] = env
                self._is_async[i] = inspect.iscoroutinefunction(getattr(env, "step", None))
        self._raise(batch, "env_fn")
        if pending:
            raise TypeError(f"env_fns{pending} returned awaitables, which executor='thread' "
                            "cannot run; use executor='asyncio'")
        for i, env in enumerate(self.envs):
            if self._is_async[i] and self.executor == "thread":
                raise TypeError(f"env {i} ({type(env).__name__}) is asynchronous (its step is a "
                                "coroutine function); use executor='asyncio'")
            if self._is_async[i] != inspect.iscoroutinefunction(getattr(env, "reset", None)):
                raise TypeError(f"env {i} ({type(env).__name__}): step and reset must both be "
                                "coroutine functions (AsyncEnv protocol) or both plain methods")

    def _setup_spaces(self, observation_mode: Any) -> None:
        first, n = self.envs[0], self.num_envs
        self.metadata = {**(getattr(first, "metadata", None) or {}),
                         "autoreset_mode": self.autoreset_mode}
        self.render_mode = getattr(first, "render_mode", None)
        self.single_action_space = first.action_space
        self.action_space = batched_space(self.single_action_space, n)
        if isinstance(observation_mode, tuple) and len(observation_mode) == 2:
            if not all(isinstance(s, spaces.Space) for s in observation_mode):
                raise TypeError("observation_mode as a tuple must hold two Spaces")
            self.observation_space, self.single_observation_space = observation_mode
        elif observation_mode in ("same", "different"):
            self.single_observation_space = first.observation_space
            self.observation_space = (
                batched_space(first.observation_space, n) if observation_mode == "same"
                else batch_differing_spaces([env.observation_space for env in self.envs]))
        else:
            raise ValueError("observation_mode must be 'same', 'different' or a tuple "
                             f"(batched_space, single_space), got {observation_mode!r}")
        for i, env in enumerate(self.envs):
            if observation_mode == "same" and env.observation_space != first.observation_space:
                raise RuntimeError(f"env {i}'s observation_space {env.observation_space} "
                                   f"differs from env 0's {first.observation_space}; use "
                                   "observation_mode='different'")
            if env.action_space != self.single_action_space:
                raise RuntimeError(f"env {i}'s action_space {env.action_space} differs from "
                                   f"env 0's {self.single_action_space}")
        self._observations: Any = create_empty_array(self.single_observation_space, n=n,
                                                     fn=np.zeros)
        try:
            self._env_obs = [deepcopy(o) for o in iterate(self.observation_space,
                                                          self._observations)]
        except Exception:  # noqa: BLE001 - spaces whose empty batch cannot be iterated
            self._env_obs = [None] * n

    # ---------------------------------------------------------------------- reset and step --

    async def _reset(self, seed: Any, options: Any, timeout: float | None):
        n = self.num_envs
        values, given = check_seed(seed, n)  # BatchEnv's seed and mask rules
        seeds = [int(v) if g else None for v, g in zip(values.tolist(), given.tolist(),
                                                       strict=True)]
        idx: list[int] = list(range(n))
        if isinstance(options, Mapping) and "reset_mask" in options:
            mask = _check_options({"reset_mask": options["reset_mask"]}, n)
            idx = np.flatnonzero(mask).tolist()  # type: ignore[arg-type]
            options = {k: v for k, v in options.items() if k != "reset_mask"}
        else:  # other keys are the sub-envs' business
            _check_options(None if isinstance(options, Mapping) else options, n)
        batch = await self._dispatch("reset", _run.reset, [(s, options) for s in seeds], idx,
                                     timeout, breaks=True)
        results, prev_obs = batch.results, list(self._env_obs)
        bad: dict[int, BadResult] = {}
        changed: list[int] = []
        infos: dict[str, Any] = {}
        for i in idx:
            r = results[i]
            if r is PENDING or r is FAILED:
                continue
            if isinstance(r, tuple) and len(r) == 2 and isinstance(r[1], dict):
                self._env_obs[i] = r[0]
                changed.append(i)
            else:
                bad[i] = BadResult(f"{_short(r)}; expected (obs, info) with a dict info")
        bad.update(self._store_obs(changed, prev_obs))
        ok = [i for i in changed if i not in bad]
        for i in ok:
            if results[i][1]:
                infos = self._add_info(infos, results[i][1], i)
        self._autoreset[ok] = self._broken[ok] = False
        self._reset_done[ok] = True
        self._set_broken([*batch.errors, *bad])
        self._ready = bool(self._reset_done.all() and not self._broken.any())
        self._raise(batch, "reset", bad)
        return self._obs_out(), infos

    async def _step(self, actions: Any, timeout: float | None):
        n, mode = self.num_envs, self.autoreset_mode
        if not self._ready:
            self._raise_not_ready()
        _check_actions(self.single_action_space, self.action_space, actions, "actions", n)
        acts = list(iterate(self.action_space, actions))
        args: list[tuple[Any, ...]]
        idx: Sequence[int]
        if mode is AutoresetMode.NEXT_STEP:
            args, idx = list(zip(acts, self._autoreset.tolist(), strict=True)), range(n)
        else:  # DISABLED: an env waiting for a reset stands still
            args = [(a,) for a in acts]
            idx = (np.flatnonzero(~self._autoreset).tolist() if mode is AutoresetMode.DISABLED
                   else range(n))
        batch = await self._dispatch("step", _STEP_OPS[mode], args, idx, timeout, breaks=True)
        results, env_obs, prev_obs = batch.results, self._env_obs, list(self._env_obs)
        rewards = np.zeros(n, dtype=np.float64)
        terminations, truncations = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
        infos: dict[str, Any] = {}
        bad: dict[int, BadResult] = {}
        partial, same_step = bool(batch.errors) or bool(batch.timed_out), mode is _SAME_STEP
        for i in idx:
            r = results[i]
            if partial and (r is PENDING or r is FAILED):
                continue
            try:
                env_obs[i], rewards[i], terminations[i], truncations[i], info = (
                    r[:5] if same_step else r)
                if same_step and r[5] is not None:  # final_obs and final_info
                    infos = self._add_info(infos, r[5], i)
                if info:
                    infos = self._add_info(infos, info, i)
            except (TypeError, ValueError, AttributeError):
                env_obs[i] = prev_obs[i]
                bad[i] = BadResult(f"{_short(r)}; expected (obs, reward, terminated, "
                                   "truncated, info) with a dict info")
        stepped = [i for i in idx if results[i] is not PENDING and results[i] is not FAILED
                   and i not in bad] if partial or bad else idx
        bad.update(self._store_obs(stepped, prev_obs))
        done = terminations | truncations
        if mode is AutoresetMode.DISABLED:  # finished envs wait for a reset
            self._autoreset |= done
        elif stepped is idx and not bad and len(idx) == n:
            self._autoreset = done
        else:  # only the envs that stepped have news
            ok = [i for i in stepped if i not in bad]
            self._autoreset[ok] = done[ok]
        self._set_broken([*batch.errors, *bad])
        self._raise(batch, "step", bad)
        return self._obs_out(), rewards, terminations, truncations, infos

    def _store_obs(self, changed: Sequence[int], prev_obs: list[Any]) -> dict[int, BadResult]:
        """Batch the envs' observations (``changed`` ones are new). New ones that do not fit
        the space are taken back (``prev_obs``: their env keeps its row) and returned."""
        space = self.single_observation_space
        try:
            self._observations = concatenate(space, self._env_obs, self._observations)
            return {}
        except (TypeError, ValueError, AttributeError):
            bad = {i: BadResult(f"an observation that does not fit {space}"
                                f"{_expected(space, self._env_obs[i])}")
                   for i in changed if not _fits(space, self._env_obs[i])}
            if not bad:
                raise
            for i in bad:
                self._env_obs[i] = prev_obs[i]
            self._observations = concatenate(space, self._env_obs, self._observations)
            return bad

    def _raise_not_ready(self) -> None:
        never = np.flatnonzero(~self._reset_done).tolist()
        if len(never) == self.num_envs:
            raise StepBeforeResetError("step() called before reset(): call reset() first")
        if never:
            raise StepBeforeResetError(f"step() called before envs {_listed(np.asarray(never))} "
                                       "were ever reset: call reset() first")
        raise ResetNeeded(f"envs {_listed(np.flatnonzero(self._broken))} failed or timed out "
                          "in their last step/reset: reset them (reset(), or reset(options="
                          "{'reset_mask': mask})) before stepping again")

    def _obs_out(self) -> Any:
        obs = self._observations
        if not self.copy:
            return obs
        return obs.copy() if isinstance(obs, np.ndarray) else deepcopy(obs)

    # ---------------------------------------------------------------------------- closing --

    def _shutdown(self, timeout: float, *, raise_errors: bool, warn: bool) -> None:
        self.closed = True
        present = [i for i, e in enumerate(self.envs) if e is not None]
        # Envs still inside a call that timed out are closed when it returns, in the
        # background, instead of being waited for.
        stuck = {i for i in present if not self._is_async[i] and self._locks[i].locked()}
        for i in stuck:
            threading.Thread(target=_close_when_free, args=(self.envs[i], self._locks[i]),
                             name=f"batchenv-close-{i}", daemon=True).start()
        now = [i for i in present if i not in stuck]
        errors: dict[int, BaseException] = {}
        if now:
            # one thread per env from the start: a close may block
            batch = self._start(_run.close, [()] * self.num_envs, now, len(now))
            if not batch.wait(timeout) and warn:
                late = np.asarray(batch.stop()[0])
                warnings.warn(f"{type(self).__name__}.close(): envs {_listed(late)} did not "
                              f"close within {timeout:g} s; abandoning them",
                              RuntimeWarning, stacklevel=3)
            errors = dict(batch.errors)
        self._pool.shutdown()
        if self._loop_thread is not None:
            self._loop_thread.stop()
        if errors and raise_errors:
            raise SubEnvError.of("close", errors)

    def __del__(self) -> None:
        if getattr(self, "closed", True):
            return
        try:
            if sys.is_finalizing():  # no new threads now: just let the idle ones go
                self.closed = True
                self._pool.shutdown()
            else:
                self._shutdown(0.01, raise_errors=False, warn=False)
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    def __repr__(self) -> str:
        envs = getattr(self, "envs", None)
        spec = getattr(envs[0], "spec", None) if envs else None
        env_id = f"{spec.id}, " if spec is not None and getattr(spec, "id", None) else ""
        return (f"{type(self).__name__}({env_id}num_envs={getattr(self, 'num_envs', '?')}, "
                f"executor={getattr(self, 'executor', '?')!r})")


# ------------------------------------------------------------------------------- helpers --


def _check_timeout(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not float(timeout) > 0:
        raise ValueError(f"`timeout` must be None or a number > 0 (seconds), got {timeout!r}")
    return None if timeout == math.inf else float(timeout)


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # that loop is closed: nobody is waiting
        pass


def _set_done(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


def _render(env: Any) -> Any:
    return env.render()


def _make(_env: None, fn: Callable[[], Any]) -> Any:
    return fn()


def _apply(env: Any, fn: Callable[..., Any], arg: Any) -> Any:
    return fn(env, arg)


def _call(env: Any, name: str, args: tuple, kwargs: dict) -> Any:
    getter = getattr(env, "get_wrapper_attr", None)
    attr = getter(name) if getter is not None else getattr(env, name)
    return attr(*args, **kwargs) if callable(attr) else attr


def _set_attr(env: Any, name: str, value: Any) -> None:
    setter = getattr(env, "set_wrapper_attr", None)
    if setter is not None:
        setter(name, value)
    else:
        setattr(env, name, value)


def _close_quietly(obj: Any) -> None:
    """Close an env (or awaitable) nobody will use; errors are ignored (nobody to tell)."""
    try:
        obj.close()
    except Exception:  # noqa: BLE001
        pass


def _close_when_free(env: Any, lock: threading.Lock) -> None:
    with lock:
        _close_quietly(env)


def _fits(space: spaces.Space, obs: Any) -> bool:
    try:
        concatenate(space, [obs], create_empty_array(space, n=1, fn=np.zeros))  # type: ignore[arg-type]
        return True
    except (TypeError, ValueError, AttributeError, KeyError, IndexError):
        return False


def _expected(space: spaces.Space, obs: Any) -> str:
    if space.shape is None:
        return ""
    return f": expected shape {space.shape}, got shape {np.shape(obs)}"


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_actions(single: Any, batched: Any, value: Any, where: str, n: int) -> None:
    """Raise ValueError when ``value`` does not have the batched action space's shape."""
    if isinstance(single, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete,
                           spaces.MultiBinary)):
        try:
            shape = value.shape if isinstance(value, np.ndarray) else np.shape(value)
        except ValueError as exc:  # ragged nested lists
            raise ValueError(f"`{where}` is not array-like with a regular shape: {exc}") from None
        if shape != batched.shape:
            raise ValueError(f"`{where}` must have shape {batched.shape} (num_envs={n}, single "
                             f"action shape {single.shape} of {single}), got shape {shape}")
    elif isinstance(single, spaces.Tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(single.spaces):
            raise ValueError(f"`{where}` must be a tuple of {len(single.spaces)} batched "
                             f"components (one per component of {single})")
        for k, (s, b) in enumerate(zip(single.spaces, batched.spaces, strict=True)):
            _check_actions(s, b, value[k], f"{where}[{k}]", n)
    elif isinstance(single, spaces.Dict):
        if not hasattr(value, "keys") or set(value.keys()) != set(single.spaces):
            got = sorted(value.keys()) if hasattr(value, "keys") else type(value).__name__
            raise ValueError(f"`{where}` must be a dict with keys {sorted(single.spaces)}, "
                             f"got {got}")
        for key, s in single.spaces.items():
            _check_actions(s, batched[key], value[key], f"{where}[{key!r}]", n)
    elif not hasattr(value, "__len__") or len(value) != n:
        raise ValueError(f"`{where}` must hold one action per env (num_envs={n})")
