"""``backend="process"``: one worker process per shard; outputs in shared memory.

Every output array of the batch (observations, rewards, the terminated/truncated block,
actions, SAME_STEP's final observations and their mask) is one shared-memory block laid out
as the whole batch (``_shm``: the driver owns the blocks, workers map them); worker k reads
and writes only its rows ``[a_k, b_k)``. Workers start by ``forkserver`` (Linux) or
``spawn``: never ``fork``, which would copy the driver's threads' locks (torch, Ray, the
user's) in whatever state they are.

**Commands.** The driver sends a command ``(cmd, arg)`` through the worker's pipe and the
worker replies ``("ok", result)`` or ``("error", ...)``; a step is ``("step", None)``, its
actions being in shared memory already, and its reply ``("ok", None)`` unless the env
returned other info. Both sides block on well-kept primitives, nothing is polled: the
worker in ``recv`` (the driver's end closing, when the driver dies, ends it), the driver in
``multiprocessing.connection.wait`` on the replies and the workers' sentinels together, so
a worker that dies is reported at once, whichever shard it is. An A/B of the earlier
spin-then-block handshake against blocking is in docs/performance.md.

Clean-up: ``weakref.finalize`` (in ``ShardedVectorEnv``) closes the backend on
``close()``, when the env is garbage-collected, and at interpreter exit; in the process
that made it only.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import sys
import time
import traceback
import weakref
from multiprocessing import connection
from typing import Any

import numpy as np

from batchenv.sharded._errors import ShardError
from batchenv.sharded._shard import DriverGone, Shard, adopt_buffers, pickle_policy, rows
from batchenv.sharded._shm import Attached, Blocks, TrajectoryArrays, attach

_JOIN_SECONDS = 2.0  # a worker asked to exit gets this long before terminate()
_KILL_SECONDS = 1.0  # ... and this long after terminate() before kill()


def _describe(exc: BaseException) -> tuple[str, str, str, bytes | None]:
    try:
        pickled = pickle.dumps(exc)
    except Exception:  # an exception that does not pickle still gets reported
        pickled = None
    return type(exc).__name__, str(exc), traceback.format_exc(), pickled


def worker_main(env_cls: type, start: int, stop: int, env_kwargs: dict[str, Any],
                specs: dict[str, tuple], conn: connection.Connection) -> None:
    """A worker's loop: build the shard, then serve commands until ``close`` or until the
    driver is gone."""
    # Ctrl-C goes to the whole process group: the driver handles it and closes us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        shard = Shard(env_cls, stop - start, env_kwargs)
        views = rows({key: attach(spec) for key, spec in specs.items()}, start, stop)
        adopt_buffers(shard.env, views)
    except BaseException as exc:  # noqa: BLE001  (reported to the driver, which raises)
        conn.send(("error", _describe(exc)))
        return
    # the driver sends nothing during a rollout: a readable pipe is its end closing
    shard.driver_gone = lambda: conn.poll(0)
    trajectories = Attached()
    reply: tuple = ("ok", os.getpid())
    while _send(conn, reply):
        try:
            cmd, arg = conn.recv()
        except (EOFError, OSError):  # the driver is gone
            break
        if cmd == "close":
            break
        try:
            if cmd == "collect":
                payload, steps, traj_specs = arg
                arg = (None if payload is None else pickle.loads(payload), steps,
                       rows(trajectories(traj_specs), start, stop, axis=1))
            reply = ("ok", shard.run(cmd, arg, views))
        except DriverGone:
            break
        except BaseException as exc:  # noqa: BLE001
            reply = ("error", _describe(exc))


def _send(conn: connection.Connection, reply: tuple) -> bool:
    """Send a reply (one that does not pickle: the error saying so); False if the driver
    is gone."""
    try:
        conn.send(reply)
    except (EOFError, OSError):
        return False
    except Exception as exc:  # noqa: BLE001  (pickling the result failed: nothing sent)
        return _send(conn, ("error", _describe(exc)))
    return True


class ProcessBackend:
    """Worker processes over shared-memory buffers (see the module docstring)."""

    def __init__(self, env_cls: type, bounds: list[int], env_kwargs: dict[str, Any],
                 layout: dict[str, tuple[tuple[int, ...], np.dtype]], *,
                 start_method: str | None, timeout: float | None, first_shard: int = 0
                 ) -> None:
        self.bounds = bounds
        #: the batch-wide number of this backend's shard 0, in errors (1 when the driver
        #: holds shard 0 itself: ``local_shard``)
        self.first_shard = first_shard
        self.timeout = timeout
        self.owner = os.getpid()
        self.processes: list[Any] = []
        self.conns: list[connection.Connection] = []
        self.hung: set[int] = set()  # shards that timed out: killed without waiting
        method = start_method or default_start_method()
        if method == "fork":
            raise ValueError("start_method='fork' is not supported (fork after threads "
                             "deadlocks); use 'forkserver' or 'spawn'")
        self.blocks = Blocks()
        _LIVE.add(self)
        try:
            self.arrays, specs = self.blocks.new(layout, "batch")
            #: collect's trajectories, in shared memory too
            self.trajectories = TrajectoryArrays(self.blocks)
            ctx: Any = mp.get_context(method)
            if method == "forkserver":
                ctx.set_forkserver_preload(["batchenv"])
            for k in range(self.num_shards):
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=worker_main, daemon=True,
                                   name=f"batchenv-shard-{k + first_shard}",
                                   args=(env_cls, bounds[k], bounds[k + 1], env_kwargs,
                                         specs, child))
                proc.start()
                child.close()
                self.processes.append(proc)
                self.conns.append(parent)
            self.pids = self.finish(range(self.num_shards), what="start",
                                    timeout=max(timeout or 0.0, 120.0))
        except BaseException:
            self.close()  # no worker or block outlives a failed start
            raise

    @property
    def num_shards(self) -> int:
        return len(self.bounds) - 1

    def start(self, k: int, cmd: str, arg: Any = None) -> None:
        """Send shard ``k`` a command; ``finish`` waits for its reply."""
        try:
            self.conns[k].send((cmd, arg))
        except (OSError, ValueError):  # its end is closed: finish() reports how it died
            pass

    def finish(self, shards: Any, *, what: str = "step", timeout: float | None = None
               ) -> list[Any]:
        """The replies of ``shards`` (in order); ``ShardError`` naming the first shard (in
        shard order) that raised, died or did not answer within the timeout. Waits for
        every reply unless a worker died (reported at once: the env is unusable then)."""
        shards = list(shards)
        timeout = self.timeout if timeout is None else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        replies: dict[int, Any] = {}
        failures: list[tuple[int, str, BaseException | None]] = []
        waiting: dict[Any, int] = {self.conns[k]: k for k in shards}  # replies, and
        waiting.update({self.processes[k].sentinel: k for k in shards})  # deaths
        died = False
        while waiting and not died:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = connection.wait(list(waiting), left)
            if not ready:
                late = sorted(set(waiting.values()))
                self.hung.update(late)
                failures += [(k, f"did not answer {what} within {timeout} s", None)
                             for k in late]
                break
            for k in sorted({waiting[obj] for obj in ready}):
                conn = self.conns[k]
                waiting.pop(conn, None)
                waiting.pop(self.processes[k].sentinel, None)
                try:  # a reply sent before the worker died is still read
                    message = conn.recv() if conn.poll(0) else None
                except (EOFError, OSError):
                    message = None
                if message is None:
                    died = True
                    failures.append((k, self._death(k, what), None))
                elif message[0] == "ok":
                    replies[k] = message[1]
                else:
                    failures.append((k, *_remote_failure(message[1])))
        if failures:  # reported in shard order
            failures.sort(key=lambda failure: failure[0])
            k, message, cause = failures[0]
            raise ShardError(k + self.first_shard, self.bounds[k], self.bounds[k + 1], message,
                             others=[f[0] + self.first_shard for f in failures[1:]]
                             ) from cause
        return [replies[k] for k in shards]

    def pack_policy(self, policy: Any) -> bytes:
        """What ``collect`` sends the workers: the pickled policy."""
        return pickle_policy(policy)

    def _death(self, k: int, what: str) -> str:
        proc = self.processes[k]
        proc.join(0.1)
        hint = ("; it could not start: the worker's stderr says why (a script must create "
                "the env under `if __name__ == '__main__':`, and the env class must be "
                "importable)") if what == "start" else ""
        return f"died during {what} ({_exit_reason(proc.exitcode)}){hint}"

    def disown(self) -> None:
        """In a child made by ``os.fork()``: let go of the parent's workers without
        touching them. multiprocessing would otherwise terminate the parent's daemonic
        workers at the child's exit (it lists them as the child's own, inherited from the
        parent): the one private name used here, as the stdlib offers no other way."""
        from multiprocessing import process

        for proc in self.processes:
            process._children.discard(proc)  # type: ignore[attr-defined]

    def close(self) -> None:
        """Stop the workers (asked, then terminated, then killed) and unlink the blocks;
        in the process that made them only."""
        if os.getpid() != self.owner:
            return
        for k in self.hung:
            self.processes[k].kill()
        for k, proc in enumerate(self.processes):
            if proc.is_alive():
                self.start(k, "close")
        deadline = time.monotonic() + _JOIN_SECONDS
        for proc in self.processes:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self.processes:
            if proc.is_alive():
                proc.terminate()
        deadline = time.monotonic() + _KILL_SECONDS
        for proc in self.processes:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(_KILL_SECONDS)
        for conn in self.conns:
            conn.close()
        self.processes, self.conns = [], []
        self.arrays = {}
        self.blocks.release()


_LIVE: weakref.WeakSet[ProcessBackend] = weakref.WeakSet()  # for the fork hook below


def _disown_in_child() -> None:
    for backend in list(_LIVE):
        backend.disown()


os.register_at_fork(after_in_child=_disown_in_child)


def default_start_method() -> str:
    return "forkserver" if sys.platform.startswith("linux") else "spawn"


def _remote_failure(payload: tuple) -> tuple[str, BaseException | None]:
    name, text, trace, pickled = payload
    cause = None
    if pickled is not None:
        try:
            cause = pickle.loads(pickled)
        except Exception:  # noqa: BLE001
            cause = None
    return f"raised {name}: {text}\n--- worker traceback ---\n{trace}", cause


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
