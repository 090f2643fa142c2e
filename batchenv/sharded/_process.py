"""``backend="process"``: one worker process per shard; outputs in shared memory.

Every output array of the batch (observations, rewards, the terminated/truncated block,
actions, SAME_STEP's final observations and their mask) is one
``multiprocessing.shared_memory`` block laid out as the whole batch; worker k reads and
writes only its rows ``[a_k, b_k)``. Workers start by ``forkserver`` (Linux) or ``spawn``:
never ``fork``, which would copy the driver's threads' locks (torch, Ray, the user's) in
whatever state they are.

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

**Waiting.** Both sides first poll their semaphore for a short while (yielding the core
at each turn), then block: back-to-back steps then put no process to sleep and wake none,
which is what the pipe round trip used to cost. Polling stops for a while when it noticed
a post late (a busy machine: see ``_LATE_NS``); docs/scaling-out.md gives the constants'
measured effects. A blocking wait is cut in slices of ``_SLICE`` seconds so that a dead
peer is noticed: the driver checks its workers' sentinels (a killed worker raises
``ShardError`` within a slice), a worker checks its pipe (the driver's end closes when the
driver dies).

Clean-up is owned by a :class:`_Resources` object that ``weakref.finalize`` calls on
``close()``, when the env is garbage-collected, and at interpreter exit; the stdlib's
resource tracker (shared by the workers) also unlinks the blocks and the semaphores if the
driver is killed.
"""

from __future__ import annotations

import glob
import multiprocessing as mp
import os
import pickle
import secrets
import signal
import sys
import time
import traceback
import weakref
from multiprocessing import connection
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np

from batchenv.sharded._errors import ShardError
from batchenv.sharded._shard import (
    DriverGone,
    Shard,
    adopt_buffers,
    pickle_policy,
    rollout_views,
    row_views,
    write_out,
)

#: Prefix of every shared-memory block this module creates (``/dev/shm/<prefix>...``).
SHM_PREFIX = "batchenv_"
_TRAJ = "_traj"  # in the names of collect's trajectory blocks
_JOIN_SECONDS = 2.0  # a worker asked to exit gets this long before terminate()
_KILL_SECONDS = 1.0  # ... and this long after terminate() before kill()

# The control array, one column per worker: row _KIND (set by the driver before go), row
# _STATUS (set by the worker before done), and the time (perf_counter_ns, one clock for
# all processes) at which go / done was last posted.
_KIND, _STATUS, _GO_POSTED, _DONE_POSTED = 0, 1, 2, 3
STEP, MESSAGE, CLOSE = 1, 2, 3  # kinds: step the shard / read the pipe / exit
OK, REPLY = 0, 1  # statuses: nothing to read / a reply follows in the pipe

#: Seconds a worker polls ``go`` after a command before it blocks. Back-to-back steps
#: (the driver's work between two steps is shorter than this) then never put the worker
#: to sleep and wake it up again, which is most of what a sharded step costs otherwise.
#: The price: an idle worker keeps a core busy this long after each command, yielding it
#: at each turn (``sched_yield``), so the driver's own work between steps (a policy) is
#: delayed only when the scheduler hands that core to the polling worker.
_WORKER_SPIN = 1e-3
#: Seconds the driver polls ``done`` before it blocks: the step of a large shard is caught
#: without a sleep and a wake-up; while it polls, the driver yields its core at each turn,
#: so a worker sharing that core (2 workers and the driver on 2 cores) keeps it.
_DRIVER_SPIN = 1e-3
#: Polling pays only while a yield gives the core to our own peer, which posts and yields
#: it back at once. On a machine busy with other work, a yield hands the core to another
#: process for a whole time slice, far longer than a blocked process takes to be woken by
#: the post. So a poller that notices a post this late (ns) stops polling, and blocks at
#: once for the next _PAUSE seconds.
_LATE_NS = 200_000
_PAUSE = 0.5
#: A blocking wait is cut into slices this long, to notice a dead peer.
_SLICE = 0.05

_yield = getattr(os, "sched_yield", lambda: time.sleep(0))


class _Poller:
    """Polls a semaphore for up to ``seconds`` before the caller blocks on it, while polling
    pays (``_LATE_NS``)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.paused_until = 0.0

    def take(self, sem: Any, posted: np.ndarray, k: int) -> bool:
        """True if ``sem`` was taken (``posted[k]``: when it was posted); False: block."""
        if sem.acquire(False):
            return True
        now = time.perf_counter()
        if now < self.paused_until or not self.seconds:
            return False
        until = now + self.seconds
        while True:
            _yield()
            if sem.acquire(False):
                if time.perf_counter_ns() - int(posted[k]) > _LATE_NS:
                    self.paused_until = time.perf_counter() + _PAUSE
                return True
            now = time.perf_counter()
            if now > until:
                if (now - until) * 1e9 > _LATE_NS:  # a yield came back that late
                    self.paused_until = now + _PAUSE
                return False


def _describe(exc: BaseException) -> tuple[str, str, str, bytes | None]:
    try:
        pickled = pickle.dumps(exc)
    except Exception:  # an exception that does not pickle still gets reported
        pickled = None
    return type(exc).__name__, str(exc), traceback.format_exc(), pickled


def _attach(spec: tuple[str, tuple[int, ...], str], cache: dict[str, SharedMemory]
            ) -> np.ndarray:
    name, shape, dtype = spec
    if name not in cache:
        cache[name] = SharedMemory(name=name)
    return np.ndarray(shape, dtype=dtype, buffer=cache[name].buf)


def worker_main(env_cls: type, k: int, start: int, stop: int, env_kwargs: dict[str, Any],
                specs: dict[str, tuple], conn: connection.Connection, go: Any, done: Any,
                spin: float) -> None:
    """A worker's loop: build the shard, then serve commands until CLOSE or the driver is
    gone (see the module docstring for the handshake)."""
    # Ctrl-C goes to the whole process group: the driver handles it and closes us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    blocks: dict[str, SharedMemory] = {}
    control = _attach(specs["control"], blocks)
    views = row_views({key: _attach(spec, blocks) for key, spec in specs.items()
                       if key != "control"}, start, stop)

    def post(status: int) -> None:
        control[_STATUS, k] = status
        control[_DONE_POSTED, k] = time.perf_counter_ns()
        done.release()

    def reply(message: tuple) -> None:
        post(REPLY)  # before sending: the driver reads while we write
        conn.send(message)

    try:
        shard = Shard(env_cls, stop - start, env_kwargs)
    except BaseException as exc:  # noqa: BLE001  (reported to the driver, which raises)
        reply(("error", _describe(exc)))
        return
    adopt_buffers(shard.env, views)
    actions = views["actions"]
    reply(("ok", os.getpid()))
    poller = _Poller(spin)
    while _wait_go(go, conn, poller, control[_GO_POSTED], k):
        kind = control[_KIND, k]
        if kind == STEP:  # the fast path: no pipe, no pickle
            try:
                out = shard.step(actions)
                write_out(views, out)
            except BaseException as exc:  # noqa: BLE001
                reply(("error", _describe(exc)))
                continue
            if out.info:
                reply(("ok", out.info))
            else:
                post(OK)
            continue
        if kind == CLOSE:
            break
        try:
            cmd, arg = conn.recv()
        except (EOFError, OSError):  # the driver is gone
            break
        try:
            result = _serve(shard, views, blocks, start, stop, cmd, arg, conn)
        except DriverGone:
            break
        except BaseException as exc:  # noqa: BLE001
            reply(("error", _describe(exc)))
        else:
            reply(("ok", result))
    views.clear()
    for block in blocks.values():
        try:
            block.close()
        except BufferError:  # a view still alive in the shard; the OS unmaps at exit
            pass


def _wait_go(go: Any, conn: connection.Connection, poller: _Poller, posted: np.ndarray,
             k: int) -> bool:
    """Take the driver's next ``go`` (True), or False if the driver is gone."""
    if poller.take(go, posted, k):
        return True
    while not go.acquire(True, _SLICE):
        if conn.poll(0):  # the driver posts go before it sends: without a go pending,
            return bool(go.acquire(False))  # a readable pipe is its end closing
    return True


def _serve(shard: Shard, views: dict[str, np.ndarray], blocks: dict[str, SharedMemory],
           start: int, stop: int, cmd: str, arg: Any, conn: connection.Connection) -> Any:
    if cmd == "collect":
        policy_bytes, steps, specs = arg
        policy = None if policy_bytes is None else pickle.loads(policy_bytes)
        _drop_old_trajectories(blocks, {spec[0] for spec in specs.values()})
        rollout = rollout_views({key: _attach(spec, blocks) for key, spec in specs.items()},
                                start, stop)
        # the driver sends nothing during a rollout: a readable pipe is its end closing
        last, side = shard.collect(policy, steps, rollout, driver_gone=lambda: conn.poll(0))
        write_out(views, last)
        del side["out"]
        return last.info, side
    if cmd == "getpid":
        return os.getpid()
    return shard.run(cmd, arg, views)


def _drop_old_trajectories(blocks: dict[str, SharedMemory], current: set[str]) -> None:
    """Unmap the trajectory blocks of earlier ``collect`` lengths (the driver unlinked
    them when it made the new ones): each use has its own names, so a worker never writes
    into a block the driver no longer reads, and holds one set of blocks at a time."""
    for name in [name for name in blocks if _TRAJ in name and name not in current]:
        block = blocks.pop(name)
        try:
            block.close()
        except BufferError:  # a view still alive; the mapping goes with it
            pass


class _Resources:
    """What a process backend holds, released once (``weakref.finalize`` target: it must
    not reference the env), by the process that made it only."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.token = ""  # the names of this backend's blocks start with it
        _LIVE.add(self)
        self.blocks: list[SharedMemory] = []
        self.processes: list[Any] = []
        self.conns: list[connection.Connection] = []
        self.go: list[Any] = []
        self.done: list[Any] = []
        self.control: np.ndarray | None = None
        self.hung: set[int] = set()  # shards that timed out: killed without waiting

    def disown(self) -> None:
        """In a child made by ``os.fork()``: let go of the parent's workers and blocks
        without touching them. multiprocessing would otherwise terminate the parent's
        daemonic workers at the child's exit (it lists them as the child's own, inherited
        from the parent), and the blocks' finalizers would fail on the arrays' views."""
        from multiprocessing import process

        for proc in self.processes:
            process._children.discard(proc)  # type: ignore[attr-defined]
        for block in self.blocks:  # the arrays' views keep the mapping while they live
            block._buf = block._mmap = None  # type: ignore[attr-defined]
        self.blocks = []

    def release(self) -> None:
        if os.getpid() != self.owner:  # a forked child: the parent owns all this
            return
        for k in self.hung:
            self.processes[k].kill()
        for k, proc in enumerate(self.processes):
            if proc.is_alive() and self.control is not None:
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
        self.control = None
        for block in self.blocks:
            unlink(block)
        self.blocks.clear()
        if self.token and os.path.isdir("/dev/shm"):  # a block whose creation an interrupt
            for path in glob.glob(f"/dev/shm/{self.token}*"):  # cut short (Ctrl-C between
                try:  # the stdlib's create and our bookkeeping) has our name: removed too
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        self.go.clear()  # the last reference: multiprocessing unlinks the semaphores
        self.done.clear()


_LIVE: weakref.WeakSet[_Resources] = weakref.WeakSet()  # for the fork hook below


def _disown_in_child() -> None:
    for resources in list(_LIVE):
        resources.disown()


os.register_at_fork(after_in_child=_disown_in_child)


def shared_array(block: SharedMemory, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An array over ``block`` that keeps it mapped while any view of it lives: the view
    holds a buffer export, so ``block.close()`` raises ``BufferError`` instead of
    unmapping. (``np.ndarray(buffer=block.buf)`` holds none: a view kept after ``close()``,
    by the user (``copy=False``) or by a traceback's locals (``local_shard``), would
    point at unmapped memory.)"""
    dtype, buffer = np.dtype(dtype), block.buf
    assert buffer is not None  # an open block
    return np.frombuffer(buffer, dtype=dtype, count=int(np.prod(shape))).reshape(shape)


def unlink(block: SharedMemory) -> None:
    """Remove ``block``'s name; unmap it now, or (views of it alive) when the last goes."""
    try:
        block.unlink()
    except FileNotFoundError:
        pass
    try:
        block.close()
    except BufferError:  # views still live: they hold the mapping, which goes with them;
        block._mmap = None  # type: ignore[attr-defined]  # so close() and __del__ skip it
        block.close()  # (closes the file descriptor)


def default_start_method() -> str:
    return "forkserver" if sys.platform.startswith("linux") else "spawn"


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
        self._poller = _Poller(_DRIVER_SPIN)  # read here: a benchmark may set it per env
        self.resources = _Resources()
        try:
            self._start(env_cls, env_kwargs, layout, start_method)
        except BaseException:
            self.resources.release()  # no worker or block outlives a failed start
            raise

    def _start(self, env_cls: type, env_kwargs: dict[str, Any],
               layout: dict[str, tuple[tuple[int, ...], np.dtype]], start_method: str | None
               ) -> None:
        bounds, timeout = self.bounds, self.timeout
        self._token = f"{SHM_PREFIX}{os.getpid()}_{secrets.token_hex(4)}_"
        self.resources.token = self._token
        self.arrays: dict[str, np.ndarray] = {}
        self._specs: dict[str, tuple] = {}
        for key, (shape, dtype) in layout.items():
            self.arrays[key], self._specs[key] = self._new_array(key, shape, dtype)
        self._traj: tuple[int, dict[str, np.ndarray], dict[str, tuple]] | None = None
        self._traj_uses = 0  # sets of trajectory blocks made so far: numbers their names
        method = start_method or default_start_method()
        if method == "fork":
            raise ValueError("start_method='fork' is not supported (fork after threads "
                             "deadlocks); use 'forkserver' or 'spawn'")
        ctx: Any = mp.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(["batchenv"])
        res = self.resources
        num_shards = len(bounds) - 1
        res.control, self._specs["control"] = self._new_array("control", (4, num_shards),
                                                              np.int64)
        self._control = res.control
        for k in range(num_shards):
            parent, child = ctx.Pipe()
            go, done = ctx.Semaphore(0), ctx.Semaphore(0)
            proc = ctx.Process(target=worker_main, daemon=True,
                               name=f"batchenv-shard-{k + self.first_shard}",
                               args=(env_cls, k, bounds[k], bounds[k + 1], env_kwargs,
                                     self._specs, child, go, done, _WORKER_SPIN))
            res.go.append(go)
            res.done.append(done)
            proc.start()
            child.close()
            res.processes.append(proc)
            res.conns.append(parent)
        self.pids = self.finish(range(self.num_shards), what="start",
                                timeout=max(timeout or 0.0, 120.0))

    @property
    def num_shards(self) -> int:
        return len(self.bounds) - 1

    def _new_array(self, key: str, shape: tuple[int, ...], dtype: Any
                   ) -> tuple[np.ndarray, tuple]:
        dtype = np.dtype(dtype)
        nbytes = max(1, int(np.prod(shape)) * dtype.itemsize)
        block = SharedMemory(name=f"{self._token}{key}", create=True, size=nbytes)
        self.resources.blocks.append(block)
        return (shared_array(block, shape, dtype),
                (block.name, tuple(shape), dtype.str))

    def start(self, k: int, cmd: str, arg: Any = None) -> None:
        """Send shard ``k`` a command; ``finish`` waits for its reply."""
        res = self.resources
        control = self._control
        control[_KIND, k] = STEP if cmd == "step" else MESSAGE
        control[_GO_POSTED, k] = time.perf_counter_ns()
        res.go[k].release()
        if cmd == "step":  # the actions are in shared memory already
            return
        try:  # after go: the worker reads while we write
            res.conns[k].send((cmd, arg))
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
            message: Any = waited or (("ok", None) if self._control[_STATUS, k] == OK
                                      else self._receive(k, deadline))
            if message == "hung":
                self.resources.hung.add(k)
                failures.append((k, f"did not answer {what} within {timeout} s", None))
            elif message == "dead":
                failures.append((k, self._death(k, what), None))
            elif message[0] == "ok":
                replies.append(message[1])
            else:
                failures.append((k, *_remote_failure(message[1])))
        if failures:  # reported in shard order
            k, message, cause = failures[0]
            raise ShardError(k + self.first_shard, self.bounds[k], self.bounds[k + 1], message,
                             others=[f[0] + self.first_shard for f in failures[1:]]
                             ) from cause
        return replies

    def pack_policy(self, policy: Any) -> bytes:
        """What ``collect`` sends the workers: the pickled policy."""
        return pickle_policy(policy)

    def _wait_done(self, k: int, deadline: float | None, later: list[int] = []  # noqa: B006
                   ) -> str | int | None:
        """Take worker k's ``done``: None, or "dead" / "hung" (past ``deadline``), or the
        index of a shard of ``later`` (still to be waited for) that died meanwhile."""
        done = self.resources.done[k]
        if self._poller.take(done, self._control[_DONE_POSTED], k):
            return None
        processes = self.resources.processes
        proc = processes[k]
        while True:
            left = _SLICE if deadline is None else min(_SLICE, deadline - time.monotonic())
            if left > 0 and done.acquire(True, left):
                return None
            if not proc.is_alive():
                return None if done.acquire(False) else "dead"
            for j in later:
                if not processes[j].is_alive():
                    return j
            if deadline is not None and time.monotonic() >= deadline:
                return "hung"

    def _receive(self, k: int, deadline: float | None) -> Any:
        """Worker k's reply from its pipe (it posted ``done`` first): the message, or
        "dead" / "hung"."""
        conn, proc = self.resources.conns[k], self.resources.processes[k]
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

    def _death(self, k: int, what: str) -> str:
        proc = self.resources.processes[k]
        proc.join(0.1)
        hint = ("; it could not start: the worker's stderr says why (a script must create "
                "the env under `if __name__ == '__main__':`, and the env class must be "
                "importable)") if what == "start" else ""
        return f"died during {what} ({_exit_reason(proc.exitcode)}){hint}"

    def collect_buffers(self, steps: int, obs_shape: tuple, obs_dtype: Any,
                        act_shape: tuple, act_dtype: Any
                        ) -> tuple[dict[str, np.ndarray], dict[str, tuple]]:
        """Shared (steps, n, ...) trajectory arrays, reused while ``steps`` is unchanged."""
        if self._traj is not None and self._traj[0] == steps:
            return self._traj[1], self._traj[2]
        if self._traj is not None:
            names = {spec[0] for spec in self._traj[2].values()}
            for block in [b for b in self.resources.blocks if b.name in names]:
                self.resources.blocks.remove(block)
                unlink(block)
        n = self.bounds[-1]
        layout = {"obs": ((steps, n, *obs_shape), obs_dtype),
                  "actions": ((steps, n, *act_shape), act_dtype),
                  "rewards": ((steps, n), np.float64),
                  "flags": ((2, steps, n), np.bool_)}
        arrays, specs = {}, {}
        for key, (shape, dtype) in layout.items():
            # a new name for every new set of blocks (never a name used before): a worker
            # attaches by name, so a reused name would leave it on the unlinked old block
            arrays[key], specs[key] = self._new_array(
                f"{_TRAJ}{self._traj_uses}_{key}", shape, dtype)
        self._traj_uses += 1
        self._traj = (steps, arrays, specs)
        return arrays, specs

    def close(self) -> None:
        self.arrays.clear()
        self._traj = None
        self.resources.release()


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
