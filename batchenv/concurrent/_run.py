"""How a call runs: each env's operation (written once for plain and async envs), the pool of
daemon threads, and the :class:`Batch` of one call's jobs that the caller waits on."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
from collections.abc import Callable
from operator import length_hint
from queue import SimpleQueue
from typing import Any

import numpy as np

from batchenv.validation import listed


class SubEnvError(RuntimeError):
    """Sub-environments raised, or returned something malformed (then it is also a
    ``ValueError``). The first env's exception is chained as ``__cause__``, with its traceback.

    Attributes:
        method: the operation that failed, e.g. ``"step"``.
        env_index: the first env that failed.
        errors: ``{env_index: exception}`` for every env that failed in the call.
    """

    def __new__(cls, method: str, errors: dict[int, BaseException]) -> SubEnvError:
        if cls is SubEnvError and all(isinstance(e, BadResult) for e in errors.values()):
            cls = _SubEnvValueError
        return super().__new__(cls, method, errors)

    def __init__(self, method: str, errors: dict[int, BaseException]):
        self.method, self.errors = method, dict(sorted(errors.items()))
        self.env_index = next(iter(self.errors))
        self.__cause__ = self.errors[self.env_index]
        each = [f"env {i}{_describe(method, e)}" for i, e in self.errors.items()]
        super().__init__(each[0] if len(each) == 1 else
                         f"envs {listed(np.asarray(list(self.errors)))} raised errors in "
                         f"{method}(): " + "; ".join(each[:5]) + "; ..." * (len(each) > 5))


class _SubEnvValueError(SubEnvError, ValueError):
    pass


class BadResult(ValueError):
    """What an env returned does not fit the space or the Gymnasium signature."""


def _describe(method: str, exc: BaseException) -> str:
    if isinstance(exc, BadResult):
        return f"'s {method}() returned {exc}"
    return f" raised in {method}(): {type(exc).__name__}" + (f": {exc}" if str(exc) else "")


class SubEnvTimeoutError(TimeoutError):
    """Some sub-environments did not answer within the call's ``timeout``.

    Attributes:
        method: the operation that timed out, e.g. ``"step"``.
        env_indices: the envs that did not answer, in increasing order.
        timeout: the timeout in seconds.
    """

    def __init__(self, method: str, env_indices: list[int], timeout: float, num_envs: int):
        self.method, self.env_indices, self.timeout = method, env_indices, timeout
        super().__init__(f"{method}() timed out after {timeout:g} s: envs "
                         f"{listed(np.asarray(env_indices))} (of {num_envs}) did not answer."
                         + " They must be reset (reset() or reset(options={'reset_mask': m}))"
                         " before the next step." * (method in ("step", "reset")))


# ------------------------------------------------------------ per-env operations, written once


def then(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn(value)``, or a coroutine awaiting ``value`` first if it is awaitable (an async
    env's coroutine): so each operation below is written once for plain and async envs."""
    return _then(value, fn) if hasattr(value, "__await__") else fn(value)


async def _then(value: Any, fn: Callable[[Any], Any]) -> Any:
    result = fn(await value)
    return (await result) if hasattr(result, "__await__") else result


def checked(r: Any, size: int = 5) -> tuple:
    """``env.step``'s result (``size`` 5) or ``env.reset``'s (2), checked."""
    if not (isinstance(r, tuple) and len(r) == size and isinstance(r[-1], dict)):
        raise BadResult(f"{repr(r)[:200]}; expected (obs, "
                        f"{'reward, terminated, truncated, ' * (size == 5)}info) with a dict info")
    return r if size == 2 else (r[0], float(r[1]), bool(r[2]), bool(r[3]), r[4])


def reset(env: Any, seed: int | None, options: Any) -> Any:
    return then(env.reset(seed=seed, options=options), lambda r: checked(r, 2))


def step(env: Any, action: Any, needs_reset: bool) -> Any:
    """DISABLED: a plain step (envs waiting for a reset are not sent one)."""
    return then(env.step(action), checked)


def next_step(env: Any, action: Any, needs_reset: bool) -> Any:
    """NEXT_STEP: an env whose episode ended last step is reset instead of stepped."""
    if needs_reset:
        return then(env.reset(), lambda r: (checked(r, 2)[0], 0.0, False, False, r[1]))
    return then(env.step(action), checked)


def same_step(env: Any, action: Any, needs_reset: bool) -> Any:
    """SAME_STEP: step, and reset at once if the episode ended (``final_obs``/``final_info``
    go into the reset's info)."""
    def reset_if_over(r: Any) -> Any:
        obs, reward, terminated, truncated, info = checked(r)
        if not (terminated or truncated):
            return obs, reward, terminated, truncated, info
        return then(env.reset(), lambda s: (checked(s, 2)[0], reward, terminated, truncated,
                                            {**s[1], "final_obs": obs, "final_info": info}))
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
    """``op(envs[i], *args[i])`` for each env ``i`` of ``idx``: in the pool, or as tasks of the
    loop ``loop()`` gives for the envs of ``on_loop``; an awaitable result is awaited on that
    loop. ``results``/``errors`` map envs to what they returned/raised; ``future`` completes
    when every env answered; results that come after :meth:`stop` go to ``late``."""

    def __init__(self, op: Callable, envs: list[Any], args: list[tuple], idx: list[int],
                 on_loop: list[bool], locks: list[threading.Lock], pool: Pool,
                 loop: Callable[[], asyncio.AbstractEventLoop],
                 late: Callable[[Any], None] | None = None):
        self.op, self.envs, self.args, self.idx, self.locks = op, envs, args, idx, locks
        self.pool, self.loop, self.late = pool, loop, late
        self.results: dict[int, Any] = {}
        self.errors: dict[int, BaseException] = {}
        self.left, self.stopped, self.woken, self.lock = len(idx), False, 0, threading.Lock()
        self.timed_out: tuple[float, list[int]] | None = None  # (timeout, envs not answered)
        self.future: cf.Future = cf.Future()
        self.future.set_running_or_notify_cancel()  # so that no awaiter can cancel it
        self.tasks: list[cf.Future] = []  # what runs on the loop, cancelled by stop()
        threaded = [i for i in idx if not on_loop[i]]
        self.todo = iter(threaded)  # claimed one by one by the threads
        if len(threaded) < len(idx):
            self.tasks.append(asyncio.run_coroutine_threadsafe(
                self._on_loop([i for i in idx if on_loop[i]]), loop()))
        if threaded:
            self._wake()
        elif not idx:
            self.future.set_result(None)

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
                    self.record(i, None, exc)
                    continue
            if hasattr(result, "__await__"):
                with self.lock:
                    if not self.stopped:
                        self.tasks.append(asyncio.run_coroutine_threadsafe(
                            self._task(i, result), self.loop()))
                        continue
            self.record(i, result)

    async def _on_loop(self, idx: list[int]) -> None:
        await asyncio.gather(*[self._task(i) for i in idx])

    async def _task(self, i: int, result: Any = None) -> None:
        try:
            if result is None:
                result = self.op(self.envs[i], *self.args[i])
            self.record(i, await result if hasattr(result, "__await__") else result)
        except BaseException as exc:  # noqa: BLE001 - raised, or cancelled by stop()
            self.record(i, None, exc)

    def record(self, i: int, result: Any, exc: BaseException | None = None) -> None:
        with self.lock:
            late = self.stopped
            if not late:
                self.left -= 1
                if exc is None:
                    self.results[i] = result
                else:
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
        go to ``late``. Returns the envs that did not answer."""
        with self.lock:
            self.stopped = True
            for _ in self.todo:
                pass
        for task in self.tasks:
            task.cancel()
        return [i for i in self.idx if i not in self.results and i not in self.errors]

    def check(self, method: str, bad: dict[int, BadResult] | None = None) -> None:
        """Raise :class:`SubEnvTimeoutError` if the call timed out, else :class:`SubEnvError`
        if envs failed (or returned the ``bad`` results the caller found)."""
        errors = {**self.errors, **(bad or {})}
        cause = SubEnvError(method, errors) if errors else None
        if self.timed_out is not None:
            raise SubEnvTimeoutError(method, self.timed_out[1], self.timed_out[0],
                                     len(self.envs)) from cause
        if cause is not None:
            raise cause


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
