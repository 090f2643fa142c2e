"""How a call runs: one job per env, in a pool of daemon threads (plain envs) or as tasks of
a private event loop (async envs), gathered into one :class:`Batch` the caller waits on."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
from collections.abc import Callable
from operator import length_hint
from queue import SimpleQueue
from typing import Any

import numpy as np

from batchenv.core import _listed

PENDING, FAILED = object(), object()  # a result slot: no result yet / raised


class SubEnvError(RuntimeError):
    """Sub-environments raised, or returned something malformed (then also a ``ValueError``).
    The first env's exception is chained as ``__cause__``, with its traceback.

    Attributes:
        method: the operation that failed, e.g. ``"step"``.
        env_index: the first env that failed.
        errors: ``{env_index: exception}`` for every env that failed in this call.
    """

    def __init__(self, method: str, errors: dict[int, BaseException]):
        self.method, self.errors = method, dict(sorted(errors.items()))
        self.env_index = i = next(iter(self.errors))
        msg = _describe(method, self.errors[i], f"env {i}")
        if len(self.errors) > 1:
            msg = (f"envs {_listed(np.asarray(list(self.errors)))} raised errors in {method}() "
                   "(the first one is chained below with its traceback): " + "; ".join(
                       [f"env {i}: {_describe(method, e)}" for i, e in self.errors.items()][:5]
                       + ["..."] * (len(self.errors) > 5)))
        super().__init__(msg)

    @classmethod
    def of(cls, method: str, errors: dict[int, BaseException]) -> SubEnvError:
        """The error for ``errors``: a ``ValueError`` too when every env returned bad data."""
        bad_data = all(isinstance(e, BadResult) for e in errors.values())
        err = (_SubEnvValueError if bad_data else cls)(method, errors)
        err.__cause__ = err.errors[err.env_index]
        return err


class _SubEnvValueError(SubEnvError, ValueError):
    pass


class BadResult(ValueError):
    """What an env returned does not fit the space or the Gymnasium signature."""


class SubEnvTimeoutError(TimeoutError):
    """Some sub-environments did not answer within the call's ``timeout``.

    Attributes:
        method: the operation that timed out, e.g. ``"step"``.
        env_indices: the envs that did not answer, in increasing order.
        timeout: the timeout in seconds.
    """

    def __init__(self, method: str, env_indices: list[int], timeout: float, num_envs: int):
        self.method, self.env_indices, self.timeout = method, env_indices, timeout
        after = (" They must be reset (reset() or reset(options={'reset_mask': m})) before the "
                 "next step." if method in ("step", "reset") else "")
        super().__init__(f"{method}() timed out after {timeout:g} s: envs "
                         f"{_listed(np.asarray(env_indices))} (of {num_envs}) did not "
                         f"answer.{after}")


def _describe(method: str, exc: BaseException, env: str = "") -> str:
    if isinstance(exc, BadResult):
        return f"{env}'s {method}() returned {exc}" if env else f"{method}() returned {exc}"
    what = type(exc).__name__ + (f": {exc}" if str(exc) else "")
    return f"{env} raised in {method}(): {what}" if env else what


# ------------------------------------------------------------ per-env operations, written once


def then(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn(value)``; when ``value`` is awaitable (an async env's coroutine), a coroutine that
    awaits it first: each operation is written once for plain and async envs."""
    return _then(value, fn) if hasattr(value, "__await__") else fn(value)


async def _then(value: Any, fn: Callable[[Any], Any]) -> Any:
    result = fn(await value)
    return (await result) if hasattr(result, "__await__") else result


def stepped(r: Any) -> tuple:
    """``env.step``'s result, checked: ``(obs, reward, terminated, truncated, info)``."""
    if isinstance(r, tuple) and len(r) == 5 and isinstance(r[4], dict):
        return r[0], float(r[1]), bool(r[2]), bool(r[3]), r[4]
    raise BadResult(f"{_short(r)}; expected (obs, reward, terminated, truncated, info) with a "
                    "dict info")


def was_reset(r: Any) -> tuple:
    """``env.reset``'s result, checked: ``(obs, info)``."""
    if isinstance(r, tuple) and len(r) == 2 and isinstance(r[1], dict):
        return r
    raise BadResult(f"{_short(r)}; expected (obs, info) with a dict info")


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def reset(env: Any, seed: int | None, options: Any) -> Any:
    return then(env.reset(seed=seed, options=options), was_reset)


def step(env: Any, action: Any) -> Any:
    """DISABLED: a plain step (envs waiting for a reset are not sent one)."""
    return then(env.step(action), stepped)


def next_step(env: Any, action: Any, needs_reset: bool) -> Any:
    """NEXT_STEP: an env whose episode ended last step is reset instead of stepped."""
    if not needs_reset:
        return then(env.step(action), stepped)
    return then(env.reset(), lambda r: (was_reset(r)[0], 0.0, False, False, r[1]))


def same_step(env: Any, action: Any) -> Any:
    """SAME_STEP: step, and reset at once if the episode ended; 6th item: the final obs/info."""
    def reset_if_over(r: Any) -> Any:
        obs, reward, terminated, truncated, info = stepped(r)
        if not (terminated or truncated):
            return obs, reward, terminated, truncated, info, None
        final = {"final_obs": obs, "final_info": info}
        return then(env.reset(), lambda s: (was_reset(s)[0], reward, terminated, truncated,
                                            s[1], final))
    return then(env.step(action), reset_if_over)


# --------------------------------------------------------------------------- pool and batch


class Pool:
    """At most ``size`` threads, started when none is idle. Not a ``ThreadPoolExecutor``,
    whose workers are joined at interpreter exit (an env stuck for good would hang the
    exit): these are daemon threads."""

    def __init__(self, size: int):
        self.size, self.threads, self.lock = size, 0, threading.Lock()
        self.jobs: SimpleQueue[Callable[[], None] | None] = SimpleQueue()
        self.idle = threading.Semaphore(0)

    def submit(self, job: Callable[[], None]) -> None:
        self.jobs.put(job)
        if not self.idle.acquire(False):
            with self.lock:
                if self.threads >= self.size:
                    return
                self.threads += 1
            threading.Thread(target=self._serve, daemon=True, name="batchenv-worker").start()

    def _serve(self) -> None:
        while (job := self.jobs.get()) is not None:
            job()
            self.idle.release()

    def shutdown(self) -> None:
        """Idle threads exit now, busy ones when their env returns; never blocks."""
        for _ in range(self.threads):
            self.jobs.put(None)


class Batch:
    """``op(envs[i], *args[i])`` for each env of ``idx``: in the pool, or as tasks of the loop
    ``loop()`` gives (``on_loop``); awaitable results are awaited on that loop. ``future``
    completes when every env answered; ``late`` gets results that arrive after :meth:`stop`."""

    def __init__(self, op: Callable, envs: list[Any], args: list[tuple], idx: list[int],
                 on_loop: list[bool], locks: list[threading.Lock], pool: Pool,
                 loop: Callable[[], asyncio.AbstractEventLoop],
                 late: Callable[[Any], None] | None = None):
        self.op, self.envs, self.args, self.idx, self.locks = op, envs, args, idx, locks
        self.pool, self.loop, self.late = pool, loop, late
        self.results: list[Any] = [PENDING] * len(envs)
        self.errors: dict[int, BaseException] = {}
        self.left, self.stopped, self.woken = len(idx), False, 0
        self.timed_out: tuple[float, list[int]] | None = None  # (timeout, envs not answered)
        self.lock = threading.Lock()
        self.future: cf.Future = cf.Future()
        self.future.set_running_or_notify_cancel()  # so that no awaiter can cancel it
        self.tasks: list[cf.Future] = []  # what runs on the loop, cancelled by stop()
        if not idx:
            self.future.set_result(None)
        threaded = [i for i in idx if not on_loop[i]]
        self.todo = iter(threaded)  # claimed one by one by the threads
        if len(threaded) < len(idx):
            coros = [self._task(i) for i in idx if on_loop[i]]
            self.tasks.append(asyncio.run_coroutine_threadsafe(_gather(coros), loop()))
        if threaded:
            self._wake()

    def _wake(self) -> None:
        self.woken += 1
        self.pool.submit(self._work)

    def _work(self) -> None:
        """Claim and run envs until none is left. A thread wakes the next one before it runs
        its first env, so threads join only while envs are unclaimed: cheap envs run in one
        thread, envs that block on I/O get a thread each."""
        first = True
        for i in self.todo:
            if first and length_hint(self.todo) and self.woken < self.pool.size:
                self._wake()
            first = False
            with self.locks[i]:
                try:
                    result = self.op(self.envs[i], *self.args[i])
                except BaseException as exc:  # noqa: BLE001 - reported to the caller
                    self.record(i, FAILED, exc)
                    continue
            if hasattr(result, "__await__"):
                with self.lock:
                    if not self.stopped:
                        self.tasks.append(asyncio.run_coroutine_threadsafe(
                            self._task(i, result), self.loop()))
                        continue
            self.record(i, result)

    async def _task(self, i: int, result: Any = PENDING) -> None:
        try:
            if result is PENDING:
                result = self.op(self.envs[i], *self.args[i])
            self.record(i, await result if hasattr(result, "__await__") else result)
        except BaseException as exc:  # noqa: BLE001 - raised, or cancelled by stop()
            self.record(i, FAILED, exc)

    def record(self, i: int, result: Any, exc: BaseException | None = None) -> None:
        with self.lock:
            late = self.stopped
            if not late:
                self.results[i], self.left = result, self.left - 1
                if exc is not None:
                    self.errors[i] = exc
            last = not late and not self.left
        if last:
            self.future.set_result(None)
        elif late and hasattr(result, "__await__"):
            result.close()  # a coroutine that will never run
        elif late and self.late is not None and exc is None:
            self.late(result)

    def wait(self, seconds: float | None) -> bool:
        """Block until every env answered (True) or ``seconds`` passed (False)."""
        try:
            self.future.result(seconds)
            return True
        except cf.TimeoutError:
            return False

    def stop(self) -> list[int]:
        """The caller gives up: unclaimed envs never start, tasks are cancelled, later results
        go to ``late``. Returns the envs without a result."""
        with self.lock:
            self.stopped = True
            for _ in self.todo:
                pass
        for task in self.tasks:
            task.cancel()
        return [i for i in self.idx if self.results[i] is PENDING]


async def _gather(coros: list) -> None:
    await asyncio.gather(*coros)


def start_loop() -> asyncio.AbstractEventLoop:
    """A private event loop running in a daemon thread until ``loop.stop()``."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=_run_loop, args=(loop,), name="batchenv-loop", daemon=True).start()
    return loop


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:  # give cancelled tasks a moment, never forever
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.wait(tasks, timeout=1.0))
        loop.close()
