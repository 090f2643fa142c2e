"""``backend="process"``: one worker process per shard; outputs in shared memory.

Every output array of the batch (observations, rewards, the terminated/truncated block,
actions, SAME_STEP's final observations and their mask) is one shared-memory block laid out
as the whole batch (``_shm``: the driver owns the blocks, workers map them); worker k reads
and writes only its rows ``[a_k, b_k)``. Workers start by ``forkserver`` (Linux) or
``spawn``: never ``fork``, which would copy the driver's threads' locks (torch, Ray, the
user's) in whatever state they are.

**The handshake.** Each worker has two semaphores, ``go`` (driver to worker) and ``done``
(worker to driver), and a slot in a shared ``control`` array: the command kind the driver
sets before posting ``go``, the status the worker sets before posting ``done``. A step
needs nothing else: the actions are already in shared memory, so the driver sets STEP and
posts ``go``, and the worker steps and posts ``done``; no pipe, no pickle. Every other
command (reset, get_state, collect, ...) is kind MESSAGE: ``go`` is posted first, then the
command is pickled through the worker's pipe. A reply that carries data (any reply to a
MESSAGE, a step's error or non-empty info) sets status REPLY, posts ``done`` and then
sends; the driver reads the pipe when it sees REPLY. Posting before sending keeps large
messages (a policy's weights, ``get_state`` of a big batch) from deadlocking on a full
pipe. Commands and replies alternate per worker, so one kind slot and one status slot
suffice.

**Waiting.** Both sides block on their semaphore, nothing polls (an A/B of the earlier
spin-then-block waits found no gain: docs/performance.md). A wait is cut in slices of
``_SLICE`` seconds so that a dead peer is noticed: the driver checks its workers'
sentinels (a killed worker raises ``ShardError`` within a slice, whichever shard it is), a
worker checks its pipe (the driver's end closes when the driver dies).

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
#: A blocking wait is cut into slices this long, to notice a dead peer.
_SLICE = 0.05

# The control array, one column per worker: row _KIND (set by the driver before go), row
# _STATUS (set by the worker before done).
_KIND, _STATUS = 0, 1
STEP, MESSAGE, CLOSE = 1, 2, 3  # kinds: step the shard / read the pipe / exit
OK, REPLY = 0, 1  # statuses: nothing to read / a reply follows in the pipe


def _describe(exc: BaseException) -> tuple[str, str, str, bytes | None]:
    try:
        pickled = pickle.dumps(exc)
    except Exception:  # an exception that does not pickle still gets reported
        pickled = None
    return type(exc).__name__, str(exc), traceback.format_exc(), pickled


def worker_main(env_cls: type, k: int, start: int, stop: int, env_kwargs: dict[str, Any],
                specs: dict[str, tuple], conn: connection.Connection, go: Any, done: Any
                ) -> None:
    """A worker's loop: build the shard, then serve commands until CLOSE or the driver is
    gone (see the module docstring for the handshake)."""
    # Ctrl-C goes to the whole process group: the driver handles it and closes us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control = attach(specs["control"])

    def reply(message: tuple) -> None:
        control[_STATUS, k] = REPLY
        done.release()  # before sending: the driver reads while we write
        _send(conn, message)

    try:
        shard = Shard(env_cls, stop - start, env_kwargs)
        views = rows({key: attach(spec) for key, spec in specs.items() if key != "control"},
                     start, stop)
        adopt_buffers(shard.env, views)
    except BaseException as exc:  # noqa: BLE001  (reported to the driver, which raises)
        reply(("error", _describe(exc)))
        return
    # the driver sends nothing during a rollout: a readable pipe is its end closing
    shard.driver_gone = lambda: conn.poll(0)
    trajectories = Attached()
    reply(("ok", os.getpid()))
    while _wait_go(go, conn):
        kind = control[_KIND, k]
        if kind == CLOSE:
            break
        try:
            if kind == STEP:  # the fast path: no pipe, no pickle
                info = shard.run("step", None, views)
                if not info:
                    control[_STATUS, k] = OK
                    done.release()
                    continue
                result: Any = info
            else:
                try:
                    cmd, arg = conn.recv()
                except (EOFError, OSError):  # the driver is gone
                    break
                if cmd == "collect":
                    payload, steps, traj_specs = arg
                    arg = (None if payload is None else pickle.loads(payload), steps,
                           rows(trajectories(traj_specs), start, stop, axis=1))
                result = shard.run(cmd, arg, views)
        except DriverGone:
            break
        except BaseException as exc:  # noqa: BLE001
            reply(("error", _describe(exc)))
        else:
            reply(("ok", result))


def _wait_go(go: Any, conn: connection.Connection) -> bool:
    """Take the driver's next ``go`` (True), or False if the driver is gone."""
    while not go.acquire(True, _SLICE):
        if conn.poll(0):  # the driver posts go before it sends: without a go pending,
            return bool(go.acquire(False))  # a readable pipe is its end closing
    return True


def _send(conn: connection.Connection, reply: tuple) -> None:
    """Send a reply (one that does not pickle: the error saying so)."""
    try:
        conn.send(reply)
    except (EOFError, OSError):  # the driver is gone: the next wait notices
        pass
    except Exception as exc:  # noqa: BLE001  (pickling the result failed: nothing sent)
        conn.send(("error", _describe(exc)))


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
        self.go: list[Any] = []
        self.done: list[Any] = []
        self.hung: set[int] = set()  # shards that timed out: killed without waiting
        method = self.method = start_method or default_start_method()
        if method == "fork":
            raise ValueError("start_method='fork' is not supported (fork after threads "
                             "deadlocks); use 'forkserver' or 'spawn'")
        self.blocks = Blocks()
        _LIVE.add(self)
        try:
            self.arrays, specs = self.blocks.new(
                {**layout, "control": ((2, self.num_shards), np.int64)}, "batch")
            self.control = self.arrays.pop("control")
            #: collect's trajectories, in shared memory too
            self.trajectories = TrajectoryArrays(self.blocks)
            ctx: Any = mp.get_context(method)
            if method == "forkserver":
                ctx.set_forkserver_preload(["batchenv"])
            for k in range(self.num_shards):
                parent, child = ctx.Pipe()
                go, done = ctx.Semaphore(0), ctx.Semaphore(0)
                proc = ctx.Process(target=worker_main, daemon=True,
                                   name=f"batchenv-shard-{k + first_shard}",
                                   args=(env_cls, k, bounds[k], bounds[k + 1], env_kwargs,
                                         specs, child, go, done))
                self.go.append(go)
                self.done.append(done)
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
        self.control[_KIND, k] = STEP if cmd == "step" else MESSAGE
        self.go[k].release()
        if cmd == "step":  # the actions are in shared memory already
            return
        try:  # after go: the worker reads while we write
            self.conns[k].send((cmd, arg))
        except (OSError, ValueError):  # its end is closed: finish() reports how it died
            pass

    def finish(self, shards: Any, *, what: str = "step", timeout: float | None = None
               ) -> list[Any]:
        """The replies of ``shards`` (in order); ``ShardError`` if one raised, died or did
        not answer within the timeout (the others' replies are read first, so that every
        worker is between commands again)."""
        shards = list(shards)
        timeout = self.timeout if timeout is None else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        replies: list[Any] = []
        failures: list[tuple[int, str, BaseException | None]] = []
        for i, k in enumerate(shards):
            waited = self._wait_done(k, deadline, shards[i + 1:])
            if isinstance(waited, int):  # a later shard died meanwhile: reported now, not
                failures.append((waited, self._death(waited, what), None))  # after k
                break
            message: Any = waited or (("ok", None) if self.control[_STATUS, k] == OK
                                      else self._receive(k, deadline))
            if message == "hung":
                self.hung.add(k)
                failures.append((k, f"did not answer {what} within {timeout} s", None))
            elif message == "dead":
                failures.append((k, self._death(k, what), None))
            elif message[0] == "ok":
                replies.append(message[1])
            else:
                failures.append((k, *_remote_failure(message[1])))
        if failures:  # reported in shard order
            failures.sort(key=lambda failure: failure[0])
            k, message, cause = failures[0]
            raise ShardError(k + self.first_shard, self.bounds[k], self.bounds[k + 1], message,
                             others=[f[0] + self.first_shard for f in failures[1:]]
                             ) from cause
        return replies

    def _wait_done(self, k: int, deadline: float | None, later: list[int]
                   ) -> str | int | None:
        """Take worker k's ``done``: None, or "dead" / "hung" (past ``deadline``), or the
        index of a shard of ``later`` (still to be waited for) that died meanwhile."""
        done, proc = self.done[k], self.processes[k]
        while True:
            left = _SLICE if deadline is None else min(_SLICE, deadline - time.monotonic())
            if left > 0 and done.acquire(True, left):
                return None
            if not proc.is_alive():
                return None if done.acquire(False) else "dead"
            for j in later:
                if not self.processes[j].is_alive():
                    return j
            if deadline is not None and time.monotonic() >= deadline:
                return "hung"

    def _receive(self, k: int, deadline: float | None) -> Any:
        """Worker k's reply from its pipe (it posted ``done`` first): the message, or
        "dead" / "hung"."""
        conn, proc = self.conns[k], self.processes[k]
        while True:
            left = _SLICE if deadline is None else min(_SLICE, deadline - time.monotonic())
            if left > 0 and conn.poll(left):
                try:
                    return conn.recv()
                except (EOFError, OSError):
                    return "dead"
            if not proc.is_alive():
                return "dead"
            if deadline is not None and time.monotonic() >= deadline:
                return "hung"

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
        touching them. multiprocessing lists them as the child's own processes too (its
        list of children is inherited), and at the child's exit would terminate them and
        then fail to join them. So the child closes its copies of the worker ``Process``
        objects (``Process.close()``, which also drops them from that list): each one's
        ``sentinel`` is first pointed at ``/dev/null`` in the child, so that it reads as
        ended there (the real sentinel, the parent's pipe from the forkserver, is never
        read in the child: that would take the worker's exit status from the parent).
        A worker started by ``"spawn"`` is a direct child of the driver, whose liveness
        multiprocessing checks with ``waitpid`` (not the sentinel); the child cannot
        close it and leaves it listed (documented in docs/scaling-out.md)."""
        if self.method != "forkserver":
            return
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            for proc in self.processes:
                try:
                    os.dup2(null, proc.sentinel)
                    proc.close()
                except ValueError:  # closed already, or (not expected) still running
                    pass
        finally:
            os.close(null)

    def close(self) -> None:
        """Stop the workers (asked, then terminated, then killed) and unlink the blocks;
        in the process that made them only."""
        if os.getpid() != self.owner:
            return
        for k in self.hung:
            self.processes[k].kill()
        for k, proc in enumerate(self.processes):
            if proc.is_alive():
                self.control[_KIND, k] = CLOSE
                self.go[k].release()
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
        self.go, self.done = [], []  # the last references: the semaphores are unlinked
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
