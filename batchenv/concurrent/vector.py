""":class:`ConcurrentVectorEnv`. Each call is one coroutine awaiting one
:class:`~batchenv.concurrent._run.Batch`: ``reset``/``step`` drive it in the calling thread,
blocking on the batch; ``areset``/``astep`` await it in the caller's event loop."""

from __future__ import annotations

import asyncio
import inspect
import math
import numbers
import sys
import threading
import warnings
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import nullcontext
from copy import deepcopy
from operator import methodcaller
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
_NEXT, _SAME, _DISABLED = AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED
_STEP_OPS: dict[AutoresetMode, Callable[..., Any]] = {
    _NEXT: _run.next_step, _SAME: _run.same_step, _DISABLED: _run.step}
_Seed = int | Sequence[int | None] | None


class _Wait:
    """Awaited by a call coroutine: True once ``batch`` finished, False after ``seconds``."""

    def __init__(self, batch: _run.Batch, seconds: float | None):
        self.batch, self.seconds = batch, seconds

    def __await__(self):
        return (yield self)


class ConcurrentVectorEnv(VectorEnv[ObsType, ActType, np.ndarray], Generic[ObsType, ActType]):
    """A ``VectorEnv`` over ordinary envs that runs their calls concurrently, with the
    semantics of :class:`gymnasium.vector.SyncVectorEnv` (except that in ``DISABLED`` mode a
    finished env that is not reset stands still). See ``docs/concurrency.md``.

    Args:
        env_fns: callables creating the sub-envs, called concurrently in the pool threads; a
            factory may be ``async def`` (or return an awaitable), awaited on the private loop.
        executor: ``"thread"`` (plain envs in a thread pool) or ``"asyncio"`` (also
            :class:`AsyncEnv` envs, as tasks of a private event loop).
        max_workers: maximum number of pool threads; ``None``: one per env, up to
            :data:`MAX_THREADS`.
        autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED`` (or its value).
        copy: return a copy of the observation buffer (``False``: the buffer itself).
        timeout: default per-call timeout in seconds (``None`` or ``math.inf``: none);
            ``reset``, ``step``, ``render``, ``parallel`` and their async forms take one too.
        observation_mode: ``"same"``, ``"different"`` or ``(batched_space, single_space)``.

    Raises:
        ValueError / TypeError: a bad argument; an async env under ``executor="thread"``.
        RuntimeError: the sub-envs' spaces differ.
        SubEnvError / SubEnvTimeoutError: a factory raised / did not return in time (the envs
            made are closed, and so is any env a late factory returns).
    """

    def __init__(self, env_fns: Sequence[Callable[[], Any]], *, executor: str = "thread",
                 max_workers: int | None = None,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                 copy: bool = True, timeout: float | None = None,
                 observation_mode: str | tuple[spaces.Space, spaces.Space] = "same") -> None:
        self.closed = True  # until fully built, so that a failed __init__ never closes twice
        self.env_fns = env_fns = list(env_fns)
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
        self.executor, self.copy, self.observation_mode = executor, copy, observation_mode
        self.num_envs = n = len(env_fns)
        self.max_workers = min(n, MAX_THREADS) if max_workers is None else int(max_workers)
        self._pool, self._loop_lock = _run.Pool(self.max_workers), threading.Lock()
        self._event_loop: asyncio.AbstractEventLoop | None = None
        self._locks = [threading.Lock() for _ in range(n)]  # held while an env runs
        self._busy = threading.Lock()  # held during a call: calls must not overlap
        self.envs: list[Any] = [None] * n
        self._is_async = [False] * n
        self._autoreset = np.zeros(n, dtype=np.bool_)  # episode over: reset on next step
        self._reset_done = np.zeros(n, dtype=np.bool_)  # reset at least once
        self._broken = np.zeros(n, dtype=np.bool_)  # last step/reset failed: must be reset
        self._ready = False  # every env reset and none broken: step() may run
        try:
            self._drive(self._make_envs(env_fns), "make")
            self._setup_spaces(observation_mode)
        except BaseException:
            self._shutdown(1.0, raise_errors=False, warn=False)
            raise
        self.closed = False

    def reset(self, *, seed: _Seed = None, options: dict[str, Any] | None = None,
              timeout: float | None = None) -> tuple[ObsType, dict[str, Any]]:
        """Reset all envs, or those of ``options["reset_mask"]`` (a bool array of shape
        ``(num_envs,)``; the other options go to the envs), concurrently. ``seed``: ``None``,
        ``s`` (env ``i`` gets ``s + i``) or one seed (or None) per env."""
        return self._drive(self._reset(seed, options, timeout), "reset")

    async def areset(self, *, seed: _Seed = None, options: dict[str, Any] | None = None,
                     timeout: float | None = None) -> tuple[ObsType, dict[str, Any]]:
        """:meth:`reset` for code running in an event loop: awaits instead of blocking it."""
        return await self._drive(self._reset(seed, options, timeout), "areset", awaiting=True)

    def step(self, actions: ActType, *, timeout: float | None = None):
        """Step every env concurrently, auto-resetting as the mode says."""
        return self._drive(self._step(actions, timeout), "step")

    async def astep(self, actions: ActType, *, timeout: float | None = None):
        """:meth:`step` for code running in an event loop: awaits instead of blocking it."""
        return await self._drive(self._step(actions, timeout), "astep", awaiting=True)

    def render(self, *, timeout: float | None = None) -> tuple[Any, ...]:
        """The frames of every env, rendered concurrently."""
        return tuple(self._drive(self._gather("render", methodcaller("render"), None, timeout),
                                 "render"))

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every env concurrently (or read it, if not callable)."""
        return tuple(self._drive(self._gather(f"call({name!r})", _call,
                                              [(name, args, kwargs)] * self.num_envs), "call"))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every env."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` on every env: one value for all, or a list/tuple per env."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError("Values must be a list or tuple with length equal to the number of "
                             f"environments. Got `{len(values)}` values for {self.num_envs} "
                             "environments.")
        self._drive(self._gather(f"set_attr({name!r})", _set_attr, [(name, v) for v in values]),
                    "set_attr")

    def parallel(self, fn: Callable[..., Any], per_env_args: Sequence[Any] | None = None, *,
                 timeout: float | None = None) -> list[Any]:
        """``fn(env, per_env_args[i])`` (or ``fn(env)``) for every env, concurrently, where
        that env's calls run; an awaitable result is awaited on the private loop."""
        args = self._parallel_args(fn, per_env_args)
        return self._drive(self._gather("parallel", _apply, args, timeout), "parallel")

    async def aparallel(self, fn: Callable[..., Any], per_env_args: Sequence[Any] | None = None,
                        *, timeout: float | None = None) -> list[Any]:
        """:meth:`parallel` for code running in an event loop."""
        args = self._parallel_args(fn, per_env_args)
        return await self._drive(self._gather("parallel", _apply, args, timeout), "aparallel",
                                 awaiting=True)

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]
        """The np random seeds of the sub-envs."""
        return self.get_attr("np_random_seed")

    @property  # type: ignore[misc]
    def np_random(self) -> tuple[np.random.Generator, ...]:  # type: ignore[override]
        """The numpy random generators of the sub-envs."""
        return self.get_attr("np_random")

    def close(self, *, timeout: float | None = None, **kwargs: Any) -> None:
        """Close the sub-envs concurrently and stop the threads; never hangs: envs stuck in a
        call that timed out are closed when it returns, the others get ``timeout`` seconds
        (default :data:`CLOSE_TIMEOUT`, then a ``RuntimeWarning``). A second call does
        nothing. Raises :class:`SubEnvError` if envs raised in ``close()``."""
        if not self.closed:
            t = _check_timeout(timeout)
            self._shutdown(CLOSE_TIMEOUT if t is None else t, raise_errors=True, warn=True)

    # ------------------------------------------------------------------------- the one core --

    def _drive(self, coro: Coroutine, method: str, awaiting: bool = False) -> Any:
        """Run a call coroutine: in this thread, blocking on the batch it awaits; or (with
        ``awaiting``: returns a coroutine) in the caller's event loop, awaiting the batch."""
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
        return self._await(coro) if awaiting else self._block(coro)

    def _block(self, coro: Coroutine) -> Any:
        try:
            wait = coro.send(None)
            try:
                done = wait.batch.wait(wait.seconds)
            except BaseException as exc:  # Ctrl-C: the call abandons its batch
                coro.throw(exc)
            coro.send(done)
        except StopIteration as stop:
            return stop.value
        finally:
            self._busy.release()

    async def _await(self, coro: Coroutine) -> Any:
        try:
            await asyncio.sleep(0)  # the caller's loop runs at least once per call
            wait = coro.send(None)
            future = asyncio.wrap_future(wait.batch.future)
            try:
                done, _ = await asyncio.wait({future}, timeout=wait.seconds)
            except BaseException as exc:  # cancelled: the call abandons its batch
                coro.throw(exc)
            finally:
                future.cancel()  # stop waiting for it (a no-op on the batch)
            coro.send(bool(done))
        except StopIteration as stop:
            return stop.value
        finally:
            coro.close()  # a no-op, unless cancelled before it started
            self._busy.release()

    async def _dispatch(self, method: str, op: Callable, args: list[tuple], idx: Sequence[int],
                        timeout: float | None, *, breaks: bool = False,
                        envs: list[Any] | None = None, on_loop: list[bool] | None = None,
                        late: Callable[[Any], None] | None = None) -> _run.Batch:
        """Run ``op(env, *args[i])`` for the envs ``idx`` and wait for them. On a timeout or
        cancellation the batch is abandoned; with ``breaks`` the envs it left are broken."""
        batch = _run.Batch(op, self.envs if envs is None else envs, args, list(idx),
                           self._is_async if on_loop is None else on_loop, self._locks,
                           self._pool, self._loop, late)
        t = self.timeout if timeout is None else _check_timeout(timeout)
        try:
            done = await _Wait(batch, t)
        except BaseException:  # Ctrl-C or cancelled: the caller gets none of the results
            batch.stop()
            self._set_broken(batch.idx if breaks else [])
            raise
        if not done:
            batch.timed_out = (t, pending := batch.stop())  # type: ignore[assignment]
            self._set_broken(pending if breaks else [])
        return batch

    def _loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:  # executor="thread" starts one only to await a coroutine
            if self._event_loop is None:
                self._event_loop = _run.start_loop()
            return self._event_loop

    def _set_broken(self, idx: Sequence[int]) -> None:
        if len(idx):
            self._broken[list(idx)] = True
            self._ready = False

    def _raise(self, batch: _run.Batch, method: str, bad: dict[int, BadResult] | None = None
               ) -> None:
        """Raise SubEnvTimeoutError if the call timed out, else SubEnvError if envs failed."""
        errors = {**batch.errors, **(bad or {})}
        if batch.timed_out is not None:
            raise SubEnvTimeoutError(method, batch.timed_out[1], batch.timed_out[0],
                                     self.num_envs) from (
                SubEnvError.of(method, errors) if errors else None)
        if errors:
            raise SubEnvError.of(method, errors)

    async def _gather(self, method: str, fn: Callable, args: list[tuple] | None,
                      timeout: float | None = None) -> list[Any]:
        n = self.num_envs
        batch = await self._dispatch(method, fn, args or [()] * n, range(n), timeout)
        self._raise(batch, method)
        return batch.results

    def _parallel_args(self, fn: Any, per_env_args: Any) -> list[tuple]:
        if not callable(fn):
            raise TypeError(f"`fn` must be callable, got {type(fn).__name__}")
        if per_env_args is None:
            return [(fn,)] * self.num_envs
        if not hasattr(per_env_args, "__len__") or len(per_env_args) != self.num_envs:
            raise ValueError(f"`per_env_args` must be a sequence with one entry per env "
                             f"(num_envs={self.num_envs})")
        return [(fn, a) for a in per_env_args]

    async def _make_envs(self, env_fns: list[Callable[[], Any]]) -> None:
        """Call the factories concurrently. What they made is adopted even when some fail, so
        that the failed constructor closes it; what a late factory makes is closed on arrival."""
        on_loop = [self.executor == "asyncio" and inspect.iscoroutinefunction(fn)
                   for fn in env_fns]
        batch = await self._dispatch("env_fn", _apply, [(fn,) for fn in env_fns],
                                     range(self.num_envs), None, envs=[None] * self.num_envs,
                                     on_loop=on_loop, late=_close_quietly)
        for i, env in enumerate(batch.results):
            if env is not PENDING and env is not FAILED:
                self.envs[i] = env
                self._is_async[i] = inspect.iscoroutinefunction(getattr(env, "step", None))
        self._raise(batch, "env_fn")
        for i, env in enumerate(self.envs):
            if self._is_async[i] and self.executor == "thread":
                raise TypeError(f"env {i} ({type(env).__name__}) is asynchronous (its step is a "
                                "coroutine function); use executor='asyncio'")
            if self._is_async[i] != inspect.iscoroutinefunction(getattr(env, "reset", None)):
                raise TypeError(f"env {i} ({type(env).__name__}): step and reset must both be "
                                "coroutine functions (AsyncEnv protocol) or both plain methods")

    def _setup_spaces(self, mode: Any) -> None:
        first, n = self.envs[0], self.num_envs
        self.metadata = {**(getattr(first, "metadata", None) or {}),
                         "autoreset_mode": self.autoreset_mode}
        self.render_mode = getattr(first, "render_mode", None)
        self.single_action_space = first.action_space
        self.action_space = batched_space(self.single_action_space, n)
        self.single_observation_space = first.observation_space
        if isinstance(mode, tuple) and len(mode) == 2:
            if not all(isinstance(s, spaces.Space) for s in mode):
                raise TypeError("observation_mode as a tuple must hold two Spaces")
            self.observation_space, self.single_observation_space = mode
        elif mode in ("same", "different"):
            self.observation_space = (batched_space(first.observation_space, n) if mode == "same"
                                      else batch_differing_spaces([e.observation_space
                                                                   for e in self.envs]))
        else:
            raise ValueError("observation_mode must be 'same', 'different' or a tuple "
                             f"(batched_space, single_space), got {mode!r}")
        for i, env in enumerate(self.envs):
            for what, same in (("observation", mode == "same"), ("action", True)):
                space, env_space = getattr(first, f"{what}_space"), getattr(env, f"{what}_space")
                if same and env_space != space:
                    raise RuntimeError(f"env {i}'s {what}_space {env_space} differs from env "
                                       f"0's {space}" + "; use observation_mode='different'"
                                       * (what == "observation"))
        self._observations: Any = create_empty_array(self.single_observation_space, n, np.zeros)
        try:
            self._env_obs = [deepcopy(o) for o in iterate(self.observation_space,
                                                          self._observations)]
        except Exception:  # noqa: BLE001 - spaces whose empty batch cannot be iterated
            self._env_obs = [None] * n

    # ---------------------------------------------------------------------- reset and step --

    async def _reset(self, seed: Any, options: Any, timeout: float | None):
        n = self.num_envs
        values, given = check_seed(seed, n)  # BatchEnv's seed and mask rules
        seeds = [int(v) if g else None for v, g in zip(values.tolist(), given.tolist())]
        idx: list[int] = list(range(n))
        if isinstance(options, Mapping) and "reset_mask" in options:
            mask: Any = _check_options({"reset_mask": options["reset_mask"]}, n)
            idx = np.flatnonzero(mask).tolist()
            options = {k: v for k, v in options.items() if k != "reset_mask"}
        else:  # other keys are the sub-envs' business
            _check_options(None if isinstance(options, Mapping) else options, n)
        batch = await self._dispatch("reset", _run.reset, [(s, options) for s in seeds], idx,
                                     timeout, breaks=True)
        results = {i: batch.results[i] for i in idx if batch.results[i] is not PENDING
                   and batch.results[i] is not FAILED}
        bad = self._store_obs({i: r[0] for i, r in results.items()})
        ok = [i for i in results if i not in bad]
        infos: dict[str, Any] = {}
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
        _check_actions(self.action_space, actions)
        args: list[tuple] = [(a,) for a in iterate(self.action_space, actions)]
        idx: Sequence[int] = range(n)
        if mode is _NEXT:
            args = [(a, r) for (a,), r in zip(args, self._autoreset.tolist())]
        elif mode is _DISABLED:  # an env waiting for a reset stands still
            idx = np.flatnonzero(~self._autoreset).tolist()
        batch = await self._dispatch("step", _STEP_OPS[mode], args, idx, timeout, breaks=True)
        rewards = np.zeros(n, dtype=np.float64)
        terminations, truncations = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
        new_obs: dict[int, Any] = {}
        infos: dict[str, Any] = {}
        for i in idx:
            r = batch.results[i]
            if r is not PENDING and r is not FAILED:
                new_obs[i], rewards[i], terminations[i], truncations[i], info = r[:5]
                if mode is _SAME and r[5] is not None:  # final_obs and final_info
                    infos = self._add_info(infos, r[5], i)
                if info:
                    infos = self._add_info(infos, info, i)
        bad = self._store_obs(new_obs)
        done = terminations | truncations
        if mode is _DISABLED:  # finished envs wait for a reset
            self._autoreset |= done
        elif len(new_obs) == n and not bad:
            self._autoreset = done
        else:  # only the envs that stepped have news
            ok = [i for i in new_obs if i not in bad]
            self._autoreset[ok] = done[ok]
        self._set_broken([*batch.errors, *bad])
        self._raise(batch, "step", bad)
        return self._obs_out(), rewards, terminations, truncations, infos

    def _store_obs(self, new_obs: dict[int, Any]) -> dict[int, BadResult]:
        """Batch the envs' observations, ``new_obs`` for some. New ones that do not fit the
        space are left out (their env keeps its row) and returned as errors."""
        space, bad = self.single_observation_space, {}
        rows = [new_obs.get(i, o) for i, o in enumerate(self._env_obs)]
        try:
            self._observations = concatenate(space, rows, self._observations)
        except (TypeError, ValueError, AttributeError):
            for i, obs in new_obs.items():
                try:
                    concatenate(space, [obs], create_empty_array(space, 1, np.zeros))  # type: ignore[arg-type]
                except (TypeError, ValueError, AttributeError, KeyError, IndexError):
                    bad[i] = BadResult(f"an observation that does not fit {space}" + (
                        "" if space.shape is None else
                        f": expected shape {space.shape}, got shape {np.shape(obs)}"))
                    rows[i] = self._env_obs[i]
            if not bad:
                raise
            self._observations = concatenate(space, rows, self._observations)
        self._env_obs = rows
        return bad

    def _raise_not_ready(self) -> None:
        never = np.flatnonzero(~self._reset_done)
        if len(never) == self.num_envs:
            raise StepBeforeResetError("step() called before reset(): call reset() first")
        if len(never):
            raise StepBeforeResetError(f"step() called before envs {_listed(never)} were ever "
                                       "reset: call reset() first")
        raise ResetNeeded(f"envs {_listed(np.flatnonzero(self._broken))} failed or timed out "
                          "in their last step/reset: reset them (reset(), or reset(options="
                          "{'reset_mask': mask})) before stepping again")

    def _obs_out(self) -> Any:
        obs = self._observations
        if not self.copy:
            return obs
        return obs.copy() if isinstance(obs, np.ndarray) else deepcopy(obs)

    def _shutdown(self, timeout: float, *, raise_errors: bool, warn: bool) -> None:
        self.closed, errors = True, {}
        present = [i for i, e in enumerate(self.envs) if e is not None]
        # Envs still inside a call that timed out are closed when it returns, in the
        # background, instead of being waited for.
        stuck = [i for i in present if not self._is_async[i] and self._locks[i].locked()]
        for i in stuck:
            threading.Thread(target=_close_quietly, args=(self.envs[i], self._locks[i]),
                             daemon=True).start()
        if now := [i for i in present if i not in stuck]:
            batch = _run.Batch(methodcaller("close"), self.envs, [()] * self.num_envs, now,
                               self._is_async, self._locks, self._pool, self._loop)
            if not batch.wait(timeout) and warn:
                warnings.warn(f"{type(self).__name__}.close(): envs "
                              f"{_listed(np.asarray(batch.stop()))} did not close within "
                              f"{timeout:g} s; abandoning them", RuntimeWarning, stacklevel=3)
            errors = dict(batch.errors)
        self._pool.shutdown()
        if self._event_loop is not None:
            self._event_loop.call_soon_threadsafe(self._event_loop.stop)
        if errors and raise_errors:
            raise SubEnvError.of("close", errors)

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            try:  # at interpreter exit no thread can start: just let the idle ones go
                self._pool.shutdown() if sys.is_finalizing() else self._shutdown(
                    0.01, raise_errors=False, warn=False)
            except Exception:  # noqa: BLE001 - never raise from a finalizer
                pass

    def __repr__(self) -> str:
        envs = getattr(self, "envs", None)
        env_id = getattr(getattr(envs[0], "spec", None), "id", None) if envs else None
        return (f"{type(self).__name__}({f'{env_id}, ' if env_id else ''}num_envs="
                f"{getattr(self, 'num_envs', '?')}, executor={getattr(self, 'executor', '?')!r})")


def _check_timeout(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not float(timeout) > 0:
        raise ValueError(f"`timeout` must be None or a number > 0 (seconds), got {timeout!r}")
    return None if timeout == math.inf else float(timeout)


def _apply(env: Any, fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args) if env is None else fn(env, *args)  # env None: fn is a factory


def _call(env: Any, name: str, args: tuple, kwargs: dict) -> Any:
    attr = getattr(env, "get_wrapper_attr", lambda name: getattr(env, name))(name)
    return attr(*args, **kwargs) if callable(attr) else attr


def _set_attr(env: Any, name: str, value: Any) -> None:
    getattr(env, "set_wrapper_attr", lambda name, value: setattr(env, name, value))(name, value)


def _close_quietly(env: Any, lock: Any = None) -> None:
    """Close an env nobody will use (once ``lock`` is free); errors have nobody to go to."""
    with lock or nullcontext():
        try:
            env.close()
        except Exception:  # noqa: BLE001
            pass


def _check_actions(space: spaces.Space, value: Any, where: str = "actions") -> None:
    """Raise ValueError naming ``where`` when ``value`` does not fit the batched ``space``'s
    shape (values are the sub-envs' business, as in SyncVectorEnv)."""
    if isinstance(space, spaces.Dict):
        if not isinstance(value, Mapping) or set(value) != set(space.spaces):
            raise ValueError(f"`{where}` must be a dict with keys {sorted(space.spaces)}")
        items: Any = space.spaces.items()
    elif isinstance(space, spaces.Tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(space.spaces):
            raise ValueError(f"`{where}` must be a tuple of {len(space.spaces)} components")
        items = enumerate(space.spaces)
    else:
        try:
            shape: Any = np.shape(value)
        except ValueError:  # ragged nested lists
            shape = "ragged"
        if space.shape is not None and shape != space.shape:
            raise ValueError(f"`{where}` must have shape {space.shape}, got shape {shape}")
        return
    for k, s in items:
        _check_actions(s, value[k], f"{where}[{k!r}]")
