""":class:`ConcurrentVectorEnv`. Each call is one coroutine awaiting one
:class:`~batchenv.concurrent._run.Batch`: the plain methods drive it in the calling thread,
blocking on the batch; ``areset``/``astep``/``aparallel`` await it in the caller's loop."""

from __future__ import annotations

import asyncio
import inspect
import math
import numbers
import sys
import threading
import types
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

from batchenv import core, validation
from batchenv._envpool import EnvPoolAPI
from batchenv.concurrent import _run
from batchenv.concurrent._run import BadResult, SubEnvError
from batchenv.validation import listed

#: Upper bound on the number of worker threads chosen by ``max_workers=None``.
MAX_THREADS = 256
#: Default time ``close()`` waits for the sub-envs to close before giving up on them.
CLOSE_TIMEOUT = 10.0
_NEXT, _SAME, _DISABLED = AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED
_STEP_OPS = {_NEXT: _run.next_step, _SAME: _run.same_step, _DISABLED: _run.step}
_Seed = int | Sequence[int | None] | None


@types.coroutine
def _wait(batch: _run.Batch, seconds: float | None) -> Any:
    """Awaited by a call's coroutine: its driver waits for ``batch`` (True: it finished)."""
    return (yield batch, seconds)


class ConcurrentVectorEnv(EnvPoolAPI, VectorEnv[ObsType, ActType, np.ndarray],
                          Generic[ObsType, ActType]):
    """A ``VectorEnv`` over ordinary envs that runs their calls concurrently, with the
    semantics of :class:`gymnasium.vector.SyncVectorEnv` (except that in ``DISABLED`` mode a
    finished env that is not reset stands still). See ``docs/concurrency.md``.

    Args:
        env_fns: callables making the sub-envs, called concurrently in the pool; one may be
            ``async def`` (or return an awaitable), awaited on the private loop.
        executor: ``"thread"`` (plain envs in a thread pool) or ``"asyncio"`` (also
            :class:`AsyncEnv` envs, as tasks of a private event loop).
        max_workers: maximum number of pool threads; ``None``: one per env, up to
            :data:`MAX_THREADS`.
        autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED`` (or its value).
        copy: return a copy of the observation buffer (``False``: the buffer itself).
        timeout: default seconds a call (and the factories) may take (``None`` or
            ``math.inf``: no limit); ``reset``, ``step``, ``render``, ``parallel`` and their
            async forms take one too.
        observation_mode: ``"same"``, ``"different"`` or ``(batched_space, single_space)``.
        reward_dtype: the dtype of the returned rewards: ``np.float64`` (default, as
            ``SyncVectorEnv``, whose results these are) or ``np.float32`` (the batched envs'
            default).

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
                 observation_mode: str | tuple[spaces.Space, spaces.Space] = "same",
                 reward_dtype: Any = np.float64) -> None:
        self.closed = True  # until built (no finalizer runs on a half-built object)
        self.env_fns = env_fns = list(env_fns)
        if not env_fns:
            raise ValueError("env_fns must contain at least one environment factory")
        for i, fn in enumerate(env_fns):
            if not callable(fn):
                raise TypeError(f"env_fns[{i}] must be callable, got {type(fn).__name__}")
        if executor not in ("thread", "asyncio"):
            raise ValueError(f"executor must be 'thread' or 'asyncio', got {executor!r}")
        if max_workers is not None and not (validation.is_int(max_workers) and max_workers >= 1):
            raise ValueError(f"max_workers must be None or an int >= 1, got {max_workers!r}")
        self.timeout = _check_timeout(timeout)
        self.autoreset_mode = validation.check_autoreset_mode(autoreset_mode)
        self.reward_dtype = validation.check_reward_dtype(reward_dtype)
        self.executor, self.copy, self.num_envs = executor, copy, len(env_fns)
        n = self.num_envs
        self.max_workers = min(n, MAX_THREADS) if max_workers is None else int(max_workers)
        self._pool, self._loop_lock = _run.Pool(self.max_workers), threading.Lock()
        self._event_loop: asyncio.AbstractEventLoop | None = None
        self._locks = [threading.Lock() for _ in range(n)]  # held while an env runs
        self._busy = threading.Lock()  # held during a call: calls must not overlap
        self.envs: list[Any] = [None] * n
        self._is_async = [False] * n
        self._autoreset = np.zeros(n, dtype=np.bool_)  # episode over: reset on next step
        self._never = set(range(n))  # never reset
        self._broken = set(range(n))  # must be reset: never reset, or failed
        self.closed = False
        try:
            self._drive(self._make_envs(env_fns))
            self._setup_spaces(observation_mode)
        except BaseException:
            self._shutdown(1.0, report=False)
            raise

    def reset(self, *, seed: _Seed = None, options: dict[str, Any] | None = None,
              timeout: float | None = None) -> tuple[ObsType, dict[str, Any]]:
        """Reset every env, or those of ``options["reset_mask"]`` (a bool array of shape
        ``(num_envs,)``; the other options go to the envs). ``seed``: ``None``, ``s`` (env
        ``i`` gets ``s + i``) or one seed (or None) per env."""
        return self._drive(self._reset(seed, options, timeout))

    async def areset(self, *, seed: _Seed = None, options: dict[str, Any] | None = None,
                     timeout: float | None = None) -> tuple[ObsType, dict[str, Any]]:
        """:meth:`reset` for code running in an event loop: awaits instead of blocking it."""
        return await self._drive(self._reset(seed, options, timeout), awaiting=True)

    def step(self, actions: ActType, *, timeout: float | None = None):
        """Step every env, auto-resetting as ``autoreset_mode`` says."""
        return self._drive(self._step(actions, timeout))

    async def astep(self, actions: ActType, *, timeout: float | None = None):
        """:meth:`step` for code running in an event loop: awaits instead of blocking it."""
        return await self._drive(self._step(actions, timeout), awaiting=True)

    def render(self, *, timeout: float | None = None) -> tuple[Any, ...]:
        """The frames of every env."""
        return tuple(self._drive(self._all("render", methodcaller("render"), [()], timeout)))

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every env (awaiting a coroutine), or read it if it is not
        callable."""
        return tuple(self._drive(self._all(f"call({name!r})", _call, [(name, args, kwargs)])))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every env (as ``SyncVectorEnv``: :meth:`call` it)."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every env: one value for all, or a list/tuple per env."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError("Values must be a list or tuple with length equal to the number of "
                             f"environments. Got `{len(values)}` values for {self.num_envs} "
                             "environments.")
        self._drive(self._all(f"set_attr({name!r})", _set_attr, [(name, v) for v in values]))

    def parallel(self, fn: Callable[..., Any], per_env_args: Sequence[Any] | None = None, *,
                 timeout: float | None = None) -> list[Any]:
        """``fn(env, per_env_args[i])`` (or ``fn(env)``) for every env, run where that env's
        calls run; an awaitable result is awaited on the private loop. Returns the results in
        env order."""
        return self._drive(self._parallel(fn, per_env_args, timeout))

    async def aparallel(self, fn: Callable[..., Any], per_env_args: Sequence[Any] | None = None,
                        *, timeout: float | None = None) -> list[Any]:
        """:meth:`parallel` for code running in an event loop."""
        return await self._drive(self._parallel(fn, per_env_args, timeout), awaiting=True)

    np_random_seed = property(lambda self: self.get_attr("np_random_seed"))
    """The sub-envs' ``np_random_seed``."""
    np_random = property(lambda self: self.get_attr("np_random"))
    """The sub-envs' ``np_random``."""

    def close(self, *, timeout: float | None = None, **kwargs: Any) -> None:
        """Close the sub-envs concurrently and stop the threads; never hangs: envs stuck in a
        call that timed out are closed when it returns, the others get ``timeout`` seconds
        (default :data:`CLOSE_TIMEOUT`, then a ``RuntimeWarning``). A second call does
        nothing. Raises :class:`SubEnvError` if envs raised in ``close()``."""
        if not self.closed:
            t = _check_timeout(timeout)
            self._shutdown(CLOSE_TIMEOUT if t is None else t, report=True)

    # ------------------------------------------------------------------- the one code path --

    def _drive(self, coro: Coroutine, awaiting: bool = False) -> Any:
        """Run a call's coroutine: in this thread, blocking on the batch it awaits; or (with
        ``awaiting``: returns a coroutine) in the caller's event loop, awaiting the batch."""
        if self.closed or not self._busy.acquire(False):
            coro.close()
            if self.closed:
                raise core.ClosedEnvError(f"this {type(self).__name__} is closed")
            raise RuntimeError(f"another call on this {type(self).__name__} is running; calls "
                               "must not overlap (await each astep/areset before the next)")
        return self._await(coro) if awaiting else self._block(coro)

    def _block(self, coro: Coroutine) -> Any:
        try:
            batch, seconds = coro.send(None)
            try:
                done = batch.wait(seconds)
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
            batch, seconds = coro.send(None)
            future = asyncio.wrap_future(batch.future)
            try:
                done, _ = await asyncio.wait({future}, timeout=seconds)
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

    async def _batch(self, method: str, op: Callable, args: list[tuple],
                     idx: Sequence[int] | None = None, timeout: float | None = None,
                     envs: list[Any] | None = None, late: Callable | None = None) -> _run.Batch:
        """Run ``op(env, *args[i])`` (``[args]``: the same for all) for the envs ``idx``
        (default: all) and wait, at most ``timeout`` (default: the constructor's); the envs
        that did not answer by then are given up on, and named by ``batch.check``."""
        n, t = self.num_envs, self.timeout if timeout is None else _check_timeout(timeout)
        batch = _run.Batch(op, self.envs if envs is None else envs, args * n if len(args) == 1
                           else args, list(range(n) if idx is None else idx), self._is_async,
                           self._locks, self._pool, self._loop, late)
        try:
            done = await _wait(batch, t)
        except BaseException:  # Ctrl-C or cancelled: the caller gets none of the results
            batch.stop()
            if method in ("step", "reset"):
                self._broken.update(batch.idx)
            raise
        if not done:
            batch.timed_out = (t, batch.stop())  # type: ignore[assignment]
        return batch

    async def _all(self, method: str, op: Callable, args: list[tuple],
                   timeout: float | None = None) -> list[Any]:
        batch = await self._batch(method, op, args, None, timeout)
        batch.check(method)
        return [batch.results[i] for i in range(self.num_envs)]

    async def _parallel(self, fn: Any, per_env_args: Any, timeout: float | None) -> list[Any]:
        if not callable(fn):
            raise TypeError(f"`fn` must be callable, got {type(fn).__name__}")
        if per_env_args is not None and (not hasattr(per_env_args, "__len__")
                                         or len(per_env_args) != self.num_envs):
            raise ValueError(f"`per_env_args` must be a sequence with one entry per env "
                             f"(num_envs={self.num_envs})")
        args = [(fn,)] if per_env_args is None else [(fn, a) for a in per_env_args]
        return await self._all("parallel", _apply, args, timeout)

    def _loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:  # started on first use (executor="thread": to await a coroutine)
            if self._event_loop is None:
                self._event_loop = _run.start_loop()
            return self._event_loop

    async def _make_envs(self, env_fns: list[Callable[[], Any]]) -> None:
        """Call the factories. What they made is kept even when some fail, so that the failed
        constructor closes it; what a late factory makes is closed when it arrives."""
        batch = await self._batch("env_fn", _apply, [(fn,) for fn in env_fns],
                                  envs=[None] * self.num_envs, late=_close_quietly)
        for i, env in batch.results.items():
            self.envs[i] = env
            self._is_async[i] = inspect.iscoroutinefunction(getattr(env, "step", None))
        batch.check("env_fn")
        for i, env in enumerate(self.envs):
            if self._is_async[i] and self.executor == "thread":
                raise TypeError(f"env {i} ({type(env).__name__}) is asynchronous (its step is a "
                                "coroutine function); use executor='asyncio'")
            if self._is_async[i] != inspect.iscoroutinefunction(getattr(env, "reset", None)):
                raise TypeError(f"env {i} ({type(env).__name__}): step and reset must both be "
                                "coroutine functions (AsyncEnv protocol) or both plain methods")

    def _setup_spaces(self, mode: Any) -> None:
        first, n = self.envs[0], self.num_envs
        self.metadata = {**first.metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = first.render_mode
        self.single_action_space, self.single_observation_space = (first.action_space,
                                                                   first.observation_space)
        self.action_space = core.batched_space(self.single_action_space, n)
        if isinstance(mode, tuple) and len(mode) == 2:
            if not all(isinstance(s, spaces.Space) for s in mode):
                raise TypeError("observation_mode as a tuple must hold two Spaces")
            self.observation_space, self.single_observation_space = mode
        elif mode in ("same", "different"):
            self.observation_space = (
                core.batched_space(first.observation_space, n) if mode == "same" else
                batch_differing_spaces([env.observation_space for env in self.envs]))
        else:
            raise ValueError("observation_mode must be 'same', 'different' or a tuple "
                             f"(batched_space, single_space), got {mode!r}")
        for i, env in enumerate(self.envs):
            for what in ("observation", "action")[mode != "same":]:
                space, own = getattr(first, f"{what}_space"), getattr(env, f"{what}_space")
                if own != space:
                    raise RuntimeError(f"env {i}'s {what}_space {own} differs from env 0's "
                                       f"{space}" + "; use observation_mode='different'"
                                       * (what == "observation"))
        self._observations: Any = create_empty_array(self.single_observation_space, n, np.zeros)
        self._env_obs = [_empty_obs(self.single_observation_space)] * n  # each env's last

    # ---------------------------------------------------------------------- reset and step --

    async def _reset(self, seed: Any, options: Any, timeout: float | None):
        n, idx = self.num_envs, list(range(self.num_envs))
        values, given = validation.check_seed(seed, n)  # BatchEnv's seed and mask rules
        seeds = [int(v) if g else None for v, g in zip(values.tolist(), given.tolist())]
        if isinstance(options, Mapping) and "reset_mask" in options:
            mask: Any = validation.check_options({"reset_mask": options["reset_mask"]}, n)
            idx = np.flatnonzero(mask).tolist()
            options = {k: v for k, v in options.items() if k != "reset_mask"}
        elif not isinstance(options, Mapping):  # other keys are the sub-envs' business
            validation.check_options(options, n)
        batch = await self._batch("reset", _run.reset, [(s, options) for s in seeds], idx,
                                  timeout)
        bad = self._store_obs({i: r[0] for i, r in batch.results.items()})
        ok = [i for i in idx if i in batch.results and i not in bad]
        infos: dict[str, Any] = {}
        for i in ok:
            infos = self._add_info(infos, batch.results[i][1], i)
        self._broken.update(idx)  # until they prove otherwise
        self._broken -= set(ok)
        self._never -= set(ok)
        self._autoreset[ok] = False
        batch.check("reset", bad)
        return self._obs_out(), infos

    async def _step(self, actions: Any, timeout: float | None):
        n, mode = self.num_envs, self.autoreset_mode
        if self._broken:
            if self._never:
                raise core.StepBeforeResetError(
                    "step() called before reset(): call reset() first" if len(self._never) == n
                    else f"step() called before envs {listed(np.array(sorted(self._never)))} "
                    "were ever reset: call reset() first")
            raise ResetNeeded(f"envs {listed(np.array(sorted(self._broken)))} failed or timed "
                              "out in their last step/reset: reset them (reset(), or reset("
                              "options={'reset_mask': mask})) before stepping again")
        _check_actions(self.action_space, actions)
        args = list(zip(iterate(self.action_space, actions), self._autoreset.tolist()))
        idx = np.flatnonzero(~self._autoreset).tolist() if mode is _DISABLED else range(n)
        batch = await self._batch("step", _STEP_OPS[mode], args, idx, timeout)
        rewards = np.zeros(n, dtype=self.reward_dtype)
        terminations, truncations = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
        new_obs: dict[int, Any] = {}
        infos: dict[str, Any] = {}
        for i in idx:
            if i in batch.results:
                new_obs[i], rewards[i], terminations[i], truncations[i], info = batch.results[i]
                if info:
                    infos = self._add_info(infos, info, i)
        bad = self._store_obs(new_obs)
        if bad or len(new_obs) < len(idx):
            self._broken.update(i for i in idx if i not in new_obs or i in bad)
        done = terminations | truncations
        if mode is _DISABLED:  # finished envs wait for a reset (failed ones are broken)
            self._autoreset |= done
        else:
            self._autoreset = done
        batch.check("step", bad)
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

    def _obs_out(self) -> Any:
        obs = self._observations
        if not self.copy:
            return obs
        return obs.copy() if isinstance(obs, np.ndarray) else deepcopy(obs)

    def _shutdown(self, timeout: float, *, report: bool) -> None:
        """Close the envs (one stuck in a call that timed out when that call returns), stop
        the threads and the loop; ``report``: warn about envs too slow, raise their errors."""
        self.closed = True
        present = [i for i, e in enumerate(self.envs) if e is not None]
        stuck = [i for i in present if not self._is_async[i] and self._locks[i].locked()]
        for i in stuck:
            threading.Thread(target=_close_quietly, args=(self.envs[i], self._locks[i]),
                             daemon=True).start()
        batch = _run.Batch(methodcaller("close"), self.envs, [()] * self.num_envs,
                           [i for i in present if i not in stuck], self._is_async, self._locks,
                           self._pool, self._loop)
        if not batch.wait(timeout) and (late := batch.stop()) and report:
            warnings.warn(f"{type(self).__name__}.close(): envs {listed(np.asarray(late))} did "
                          f"not close within {timeout:g} s; abandoning them", RuntimeWarning,
                          stacklevel=3)
        self._pool.shutdown()
        if self._event_loop is not None:
            self._event_loop.call_soon_threadsafe(self._event_loop.stop)
        if batch.errors and report:
            raise SubEnvError("close", batch.errors)

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            try:  # at interpreter exit no thread can start: just let the idle ones go
                self._pool.shutdown() if sys.is_finalizing() else self._shutdown(
                    0.01, report=False)
            except Exception:  # noqa: BLE001 - never raise from a finalizer
                pass

    def __repr__(self) -> str:
        env_id = getattr(getattr(getattr(self, "envs", [None])[0], "spec", None), "id", None)
        return (f"{type(self).__name__}({f'{env_id}, ' if env_id else ''}num_envs="
                f"{getattr(self, 'num_envs', '?')}, executor={getattr(self, 'executor', '?')!r})")


def _empty_obs(space: spaces.Space) -> Any:
    """One env's observation before its first reset: zeros, as ``create_empty_array``; for a
    space Gymnasium batches as a tuple (``Text``, a custom space such as MiniGrid's
    ``MissionSpace``), its one-env entry (``None`` for a custom space)."""
    if isinstance(space, spaces.Dict):
        return {key: _empty_obs(sub) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_empty_obs(sub) for sub in space.spaces)
    one = create_empty_array(space, 1, np.zeros)
    return one[0] if isinstance(one, (np.ndarray, tuple)) else one


def _check_timeout(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not float(timeout) > 0:
        raise ValueError(f"`timeout` must be None or a number > 0 (seconds), got {timeout!r}")
    return None if timeout == math.inf else float(timeout)


def _apply(env: Any, fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args) if env is None else fn(env, *args)  # env None: fn is a factory


def _call(env: Any, name: str, args: tuple, kwargs: dict) -> Any:
    attr = env.get_wrapper_attr(name)
    return attr(*args, **kwargs) if callable(attr) else attr


def _set_attr(env: Any, name: str, value: Any) -> None:
    env.set_wrapper_attr(name, value)


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
        for key, sub in space.spaces.items():
            _check_actions(sub, value[key], f"{where}[{key!r}]")
    elif isinstance(space, spaces.Tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(space.spaces):
            raise ValueError(f"`{where}` must be a tuple of {len(space.spaces)} components")
        for k, sub in enumerate(space.spaces):
            _check_actions(sub, value[k], f"{where}[{k}]")
    elif space.shape is not None:
        try:
            shape: Any = np.shape(value)
        except ValueError:  # ragged nested lists
            shape = "ragged"
        if shape != space.shape:
            raise ValueError(f"`{where}` must have shape {space.shape}, got shape {shape}")
