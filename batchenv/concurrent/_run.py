"""How a call runs: one job per env, in a pool of daemon threads (plain envs) or as tasks of
a private event loop (AsyncEnv envs), gathered into one :class:`Batch` the caller waits on.

Each per-env operation is written once (see :func:`then`): a plain env's runs in a pool
thread, an async env's coroutine as a task of the loop.

The pool is elastic, because how many threads pay depends on the env: a batch starts with as
many threads as the previous call of the same method needed, each thread waking the next
before it runs an env (so they take the GIL one after the other instead of all at once); and
while envs are still unclaimed and that chain has stalled (the awake threads block on I/O),
the caller doubles the threads wanted every ``TICK``. Cheap GIL-bound envs thus run in one
thread per call, envs that block on I/O get one thread each.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

import numpy as np

from batchenv.core import _listed

TICK = 2e-4  # seconds between checks for a stalled chain of threads, while envs are unclaimed


class SubEnvError(RuntimeError):
    """Sub-environments raised, or returned something malformed (then also a ``ValueError``).

    The first env's exception is chained as ``__cause__``, with its traceback from the worker
    thread or event-loop task.

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
            msg = _describe(self.env_index, method, self.errors[self.env_index])
        else:
            parts = [f"env {i}: {_describe(None, method, e)}"
                     for i, e in list(self.errors.items())[:5]]
            msg = (f"envs {_listed(np.asarray(list(self.errors)))} raised errors in {method}() "
                   "(the first one is chained below with its traceback): " + "; ".join(parts)
                   + ("; ..." if len(self.errors) > 5 else ""))
        super().__init__(msg)

    @classmethod
    def of(cls, method: str, errors: dict[int, BaseException]) -> SubEnvError:
        """The error for ``errors``: a ``ValueError`` too when every env returned bad data."""
        bad_data = all(isinstance(e, BadResult) for e in errors.values())
        err = (_SubEnvValueError if bad_data else cls)(method, errors)
        err.__cause__ = err.errors[err.env_index]
        return err


class _SubEnvValueError(SubEnvError, ValueError):
    """Every failing env returned a malformed result."""


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


def _describe(i: int | None, method: str, exc: BaseException) -> str:
    what = f"{type(exc).__name__}" + (f": {exc}" if str(exc) else "")
    if isinstance(exc, BadResult):
        what = f"{method}() returned {exc}"
    return what if i is None else (f"env {i}'s {what}" if isinstance(exc, BadResult)
                                   else f"env {i} raised in {method}(): {what}")


# ------------------------------------------------------------ per-env operations, written once


def awaitable(x: Any) -> bool:
    return hasattr(x, "__await__")


def then(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn(value)``; when ``value`` is awaitable (an async env's coroutine), a coroutine that
    awaits it first. So each operation is written once, for plain and async envs alike, and
    costs a plain env nothing but the call."""
    return _then(value, fn) if awaitable(value) else fn(value)


async def _then(value: Any, fn: Callable[[Any], Any]) -> Any:
    result = fn(await value)
    return (await result) if awaitable(result) else result


def next_step(env: Any, action: Any, needs_reset: bool) -> Any:
    """NEXT_STEP: an env whose episode ended last step is reset instead of stepped."""
    if needs_reset:
        return then(env.reset(), lambda r: (r[0], 0.0, False, False, r[1]))
    return env.step(action)


def same_step(env: Any, action: Any) -> Any:
    """SAME_STEP: step, and reset at once if the episode ended; 6th item: the final obs/info."""
    return then(env.step(action), lambda r: _reset_if_over(env, *r))


def _reset_if_over(env: Any, obs: Any, reward: Any, terminated: Any, truncated: Any,
                   info: dict) -> Any:
    if not (terminated or truncated):
        return obs, reward, terminated, truncated, info, None
    final = {"final_obs": obs, "final_info": info}
    return then(env.reset(), lambda r: (r[0], reward, terminated, truncated, r[1], final))


def step(env: Any, action: Any) -> Any:
    """DISABLED: a plain step (envs waiting for a reset are not sent one)."""
    return env.step(action)


def reset(env: Any, seed: int | None, options: Any) -> Any:
    return env.reset(seed=seed, options=options)


def apply(env: Any, fn: Callable[..., Any], *args: Any) -> Any:
    return fn(env, *args)


def close(env: Any) -> Any:
    return env.close()


# --------------------------------------------------------------------------- pool and batch

PENDING = object()  # no result yet
FAILED = object()  # raised: the exception is in Batch.errors


class Pool:
    """At most ``max_threads`` daemon threads, started on demand, reused last-in first-out;
    daemon, so that an env stuck for good never keeps the interpreter from exiting. A batch
    that finds no thread free is handed to the next thread that becomes free."""

    def __init__(self, max_threads: int):
        self.max_threads = max_threads
        self.lock = threading.Lock()
        self.idle: list[SimpleQueue] = []
        self.waiting: deque[Batch] = deque()  # batches that asked for a thread when none was free
        self.threads = 0
        self.closed = False

    def wake(self, batch: Batch) -> bool:
        """Hand ``batch`` to one more thread (False: none is free now)."""
        with self.lock:
            if self.closed:
                return False
            inbox = self.idle.pop() if self.idle else None
            if inbox is None:
                if self.threads >= self.max_threads:
                    if batch not in self.waiting:
                        self.waiting.append(batch)
                    return False
                self.threads += 1
        if inbox is None:
            inbox = SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), daemon=True,
                             name=f"batchenv-worker-{self.threads}").start()
        self._hand(batch, inbox)
        return True

    @staticmethod
    def _hand(batch: Batch, inbox: SimpleQueue) -> None:
        with batch.lock:
            batch.woken += 1
        inbox.put(batch)

    def _serve(self, inbox: SimpleQueue) -> None:
        while (batch := inbox.get()) is not None:
            batch.work(self, inbox)

    def park(self, inbox: SimpleQueue) -> None:
        """A thread is done with its batch: it takes a waiting batch, or becomes idle, or
        exits if the pool is closed."""
        with self.lock:
            if self.closed:
                self.threads -= 1
                batch = None
            else:
                while self.waiting and not self.waiting[0].todo:
                    self.waiting.popleft()
                if not self.waiting:
                    self.idle.append(inbox)
                    return
                batch = self.waiting.popleft()
        if batch is None:
            inbox.put(None)
        else:
            self._hand(batch, inbox)

    def shutdown(self) -> None:
        """Idle threads exit now, busy ones when their env returns; never blocks."""
        with self.lock:
            self.closed = True
            idle, self.idle = self.idle, []
            self.threads -= len(idle)
            self.waiting.clear()
        for inbox in idle:
            inbox.put(None)


class Batch:
    """One call: ``op(envs[i], *args[i])`` for the envs of ``threaded`` (claimed one at a time
    by pool threads) and of ``tasks`` (tasks of the private loop). With ``loop`` (a getter of
    the :class:`LoopThread`), an awaitable result is awaited there. ``late`` gets each result
    that arrives after the caller gave up (a factory's env, to be closed)."""

    __slots__ = ("op", "envs", "args", "locks", "threaded", "task_idx", "loop", "late",
                 "results", "errors", "todo", "left", "target", "woken", "helpers", "seen",
                 "stopped", "timed_out", "tasks", "lock", "finished", "_done", "_callbacks")

    def __init__(self, op: Callable, envs: list[Any], args: list[tuple], threaded: list[int],
                 tasks: list[int], locks: list[threading.Lock], target: int = 1,
                 loop: Callable[[], LoopThread] | None = None,
                 late: Callable[[Any], None] | None = None):
        self.op, self.envs, self.args, self.locks = op, envs, args, locks
        self.threaded, self.task_idx, self.loop, self.late = threaded, tasks, loop, late
        self.results: list[Any] = [PENDING] * len(envs)
        self.errors: dict[int, BaseException] = {}
        self.todo = deque(threaded)  # not claimed by a thread yet
        self.left = len(threaded) + len(tasks)
        self.target = target  # threads wanted
        self.woken = self.helpers = self.seen = 0
        self.stopped = False
        self.timed_out: tuple[float, list[int]] | None = None  # (timeout, envs not answered)
        self.tasks: list[asyncio.Future] = []
        self.lock = threading.Lock()
        self.finished = not self.left
        self._done = threading.Lock()  # held until finished (cheaper to wait on than an Event)
        if self.left:
            self._done.acquire()
        self._callbacks: list[Callable[[], None]] = []

    def work(self, pool: Pool, inbox: SimpleQueue) -> None:
        """Claim and run envs until none is left (in a pool thread). Storing a result and
        claiming the next env take the batch's lock once."""
        lock, todo, results, locks = self.lock, self.todo, self.results, self.locks
        op, envs, args, loop = self.op, self.envs, self.args, self.loop
        i = result = None
        helped = last = late = False
        while True:
            with lock:
                if i is not None:  # store env i's result, unless it is still to be awaited
                    late = self.stopped
                    if not late and result is not PENDING:
                        results[i] = result
                        self.left -= 1
                        last = not self.left
                if last or not todo:
                    i = None
                else:
                    i = todo.popleft()
                    if not helped:  # threads that claimed an env: how many the next call wakes
                        helped, self.helpers = True, self.helpers + 1
                    chain = self.woken < self.target and todo
            if late and self.late is not None and result is not FAILED and result is not PENDING:
                self.late(result)  # the caller gave up on it
            if i is None:
                break
            if chain:  # wake the next thread now: it takes the GIL when this one blocks
                pool.wake(self)
            with locks[i]:
                try:
                    result = op(envs[i], *args[i])
                except BaseException as exc:  # noqa: BLE001 - reported to the caller
                    self.errors[i], result = exc, FAILED
            if loop is not None and awaitable(result):  # awaited on the loop, stored then
                loop().call_soon(self._task, i, result)
                result = PENDING
        pool.park(inbox)  # before finishing: the caller's next call can reuse this thread
        if last:
            self._finish()

    def record(self, i: int, result: Any) -> None:
        """Store env i's result (from the event loop's thread); the last one finishes."""
        if self.loop is not None and awaitable(result):
            self.loop().call_soon(self._task, i, result)
            return
        with self.lock:
            late = self.stopped
            if not late:
                self.results[i] = result
                self.left -= 1
            last = not late and not self.left
        if late and self.late is not None and result is not FAILED:
            self.late(result)
        if last:
            self._finish()

    def _finish(self) -> None:
        with self.lock:
            self.finished = True
            callbacks, self._callbacks = self._callbacks, []
        self._done.release()
        for callback in callbacks:
            callback()

    def wait(self, seconds: float | None) -> bool:
        """Block until finished (True) or ``seconds`` have passed (False)."""
        if self._done.acquire(True, -1 if seconds is None else max(seconds, 0.0)):
            self._done.release()
            return True
        return self.finished

    def on_finish(self, callback: Callable[[], None]) -> None:
        with self.lock:
            if not self.finished:
                self._callbacks.append(callback)
                return
        callback()

    def start_tasks(self) -> None:  # in the loop's thread
        for i in self.task_idx:
            try:
                self._task(i, self.op(self.envs[i], *self.args[i]))
            except BaseException as exc:  # noqa: BLE001
                self.errors[i] = exc
                self.record(i, FAILED)

    def _task(self, i: int, result: Any) -> None:  # in the loop's thread
        if not awaitable(result):
            self.record(i, result)
            return
        if self.stopped:
            if hasattr(result, "close"):
                result.close()
            return
        task = asyncio.ensure_future(result)
        self.tasks.append(task)
        task.add_done_callback(lambda t: self._task_done(i, t))

    def _task_done(self, i: int, task: asyncio.Future) -> None:
        if task.cancelled():
            self.errors[i] = asyncio.CancelledError(f"env {i}'s task was cancelled")
        elif task.exception() is not None:
            self.errors[i] = task.exception()  # type: ignore[assignment]
        self.record(i, FAILED if i in self.errors else task.result())

    def needs_threads(self, pool: Pool) -> bool:
        return bool(self.todo) and self.woken < min(len(self.threaded), pool.max_threads)

    def ramp(self, pool: Pool) -> None:
        """Envs are still unclaimed after a tick: unless the chain of threads waking each other
        is still growing, the awake ones are blocked or busy, so double the threads wanted."""
        with self.lock:
            claimed = len(self.threaded) - len(self.todo)
            alive = self.woken < self.target and claimed > self.seen
            self.seen = claimed
            if not alive:
                self.target = min(len(self.threaded), max(self.target, self.woken, 1) * 2)
        if not alive:
            pool.wake(self)

    def stop(self) -> tuple[list[int], list[int]]:
        """The caller gives up: nothing more starts. Returns (envs without a result, those of
        them that had started)."""
        with self.lock:
            self.stopped = True
            unclaimed, self.todo = set(self.todo), deque()
        pending = [i for i in sorted(self.threaded + self.task_idx)
                   if self.results[i] is PENDING]
        return pending, [i for i in pending if i not in unclaimed]


class LoopThread:
    """A private asyncio event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="batchenv-asyncio-loop",
                                       daemon=True)
        self.thread.start()

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            if tasks:  # give cancelled tasks a moment, never forever
                loop.run_until_complete(asyncio.wait(tasks, timeout=1.0))
            loop.close()

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed
            pass

    def stop(self) -> None:
        self.call_soon(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join(1.0)
