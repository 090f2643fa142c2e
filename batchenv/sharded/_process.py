"""``backend="process"``: one worker process per shard; outputs in shared memory.

Every output array of the batch (observations, rewards, the terminated/truncated block,
actions, SAME_STEP's final observations and their mask) is one
``multiprocessing.shared_memory`` block laid out as the whole batch; worker k reads and
writes only its rows ``[a_k, b_k)``. A step is then one small message each way per worker
("step" / "ok"), whatever the observation size. Workers start by ``forkserver`` (Linux) or
``spawn``: never ``fork``, which would copy the driver's threads' locks (torch, Ray, the
user's) in whatever state they are.

Clean-up is owned by a :class:`_Resources` object that ``weakref.finalize`` calls on
``close()``, when the env is garbage-collected, and at interpreter exit; the stdlib's
resource tracker (shared by the workers) also unlinks the blocks if the driver is killed.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import secrets
import signal
import sys
import time
import traceback
from multiprocessing import connection
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np

from batchenv.sharded._errors import ShardError
from batchenv.sharded._shard import Shard, StepOut

#: Prefix of every shared-memory block this module creates (``/dev/shm/<prefix>...``).
SHM_PREFIX = "batchenv_"
_JOIN_SECONDS = 2.0  # a worker asked to exit gets this long before terminate()
_KILL_SECONDS = 1.0  # ... and this long after terminate() before kill()


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


def adopt_buffers(env: Any, views: dict[str, np.ndarray]) -> bool:
    """Make the shard's env write its observations, rewards and flags straight into its
    rows of the shared arrays (its ``copy=False`` outputs are then those rows): a step
    copies no output at all. Envs that draw incrementally into their observation buffer
    (BatchPong's pixels) keep doing so there. Falls back to copying (False) if the env's
    buffers are not the base class's usual ones."""
    obs, reward, flags = views["obs"], views["reward"], views["flags"]
    try:
        ok = (env._obs.shape == obs.shape and env._obs.dtype == obs.dtype
              and env._reward.shape == reward.shape and env._flags.shape == flags.shape)
    except AttributeError:
        return False
    if not ok:
        return False
    obs[...] = env._obs
    obs.flags.writeable = env._obs.flags.writeable
    reward[...] = env._reward
    flags[...] = env._flags
    env._obs, env._reward, env._flags = obs, reward, flags
    env._terminated, env._truncated = views["terminated"], views["truncated"]
    return True


def _write(views: dict[str, np.ndarray], out: StepOut) -> None:
    if out.obs is not views["obs"]:  # else the env wrote there itself (adopt_buffers)
        views["obs"][...] = out.obs
    if out.reward is None:
        return
    if out.reward is not views["reward"]:
        views["reward"][...] = out.reward
    if out.terminated is not views["terminated"]:
        views["terminated"][...] = out.terminated
    if out.truncated is not views["truncated"]:
        views["truncated"][...] = out.truncated
    if "final_mask" in views:
        mask = views["final_mask"]
        mask[...] = False
        if out.final_rows is not None:
            mask[out.final_rows] = True
            views["final_obs"][out.final_rows] = out.final_obs


def worker_main(env_cls: type, start: int, stop: int, env_kwargs: dict[str, Any],
                specs: dict[str, tuple], conn: connection.Connection) -> None:
    """A worker's loop: build the shard, then serve commands until "close" or EOF."""
    # Ctrl-C goes to the whole process group: the driver handles it and closes us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    blocks: dict[str, SharedMemory] = {}
    views = {}
    for key, spec in specs.items():
        full = _attach(spec, blocks)
        views[key] = full[:, start:stop] if key == "flags" else full[start:stop]
    views["terminated"], views["truncated"] = views["flags"]
    try:
        shard = Shard(env_cls, stop - start, env_kwargs)
    except BaseException as exc:  # noqa: BLE001  (reported to the driver, which raises)
        conn.send(("error", _describe(exc)))
        return
    adopt_buffers(shard.env, views)
    conn.send(("ok", os.getpid()))
    while True:
        try:
            cmd, arg = conn.recv()
        except (EOFError, OSError):  # the driver is gone
            break
        if cmd == "close":
            break
        try:
            reply = _serve(shard, views, blocks, start, stop, cmd, arg)
        except BaseException as exc:  # noqa: BLE001
            conn.send(("error", _describe(exc)))
        else:
            conn.send(("ok", reply))
    views.clear()
    for block in blocks.values():
        try:
            block.close()
        except BufferError:  # a view still alive in the shard; the OS unmaps at exit
            pass


def _serve(shard: Shard, views: dict[str, np.ndarray], blocks: dict[str, SharedMemory],
           start: int, stop: int, cmd: str, arg: Any) -> Any:
    if cmd == "step":
        out = shard.step(views["actions"])
        _write(views, out)
        return out.info
    if cmd == "reset":
        out = shard.reset(*arg)
        _write(views, out)
        return out.info
    if cmd == "set_state":
        _write(views, shard.set_state(*arg))
        return None
    if cmd == "get_state":
        return shard.get_state()
    if cmd == "render":
        return shard.render()
    if cmd == "call":
        return shard.call(*arg)
    if cmd == "set_attr":
        return shard.set_attr(*arg)
    if cmd == "collect":
        policy_bytes, steps, specs = arg
        policy = None if policy_bytes is None else pickle.loads(policy_bytes)
        rollout: dict[str, np.ndarray] = {}
        for key, spec in specs.items():
            full = _attach(spec, blocks)
            if key == "flags":
                rollout["terminated"], rollout["truncated"] = full[:, :, start:stop]
            else:
                rollout[key] = full[:, start:stop]
        last, side = shard.collect(policy, steps, rollout)
        _write(views, last)
        del side["out"]
        return last.info, side
    if cmd == "getpid":
        return os.getpid()
    raise ValueError(f"unknown command {cmd!r}")


class _Resources:
    """What a process backend holds, released once (``weakref.finalize`` target: it must
    not reference the env)."""

    def __init__(self) -> None:
        self.blocks: list[SharedMemory] = []
        self.processes: list[Any] = []
        self.conns: list[connection.Connection] = []
        self.hung: set[int] = set()  # shards that timed out: killed without waiting

    def release(self) -> None:
        for k in self.hung:
            self.processes[k].kill()
        for conn, proc in zip(self.conns, self.processes):
            if proc.is_alive():
                try:
                    conn.send(("close", None))
                except (OSError, ValueError):
                    pass
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
        for block in self.blocks:
            unlink(block)
        self.blocks.clear()


def unlink(block: SharedMemory) -> None:
    try:
        block.unlink()
    except FileNotFoundError:
        pass
    try:
        block.close()
    except BufferError:  # the driver's arrays still view it: unmapped when they are freed
        pass


def default_start_method() -> str:
    return "forkserver" if sys.platform.startswith("linux") else "spawn"


class ProcessBackend:
    """Worker processes over shared-memory buffers (see the module docstring)."""

    def __init__(self, env_cls: type, bounds: list[int], env_kwargs: dict[str, Any],
                 layout: dict[str, tuple[tuple[int, ...], np.dtype]], *,
                 start_method: str | None, timeout: float | None) -> None:
        self.bounds = bounds
        self.timeout = timeout
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
        self.arrays: dict[str, np.ndarray] = {}
        self._specs: dict[str, tuple] = {}
        for key, (shape, dtype) in layout.items():
            self.arrays[key], self._specs[key] = self._new_array(key, shape, dtype)
        self._traj: tuple[int, dict[str, np.ndarray], dict[str, tuple]] | None = None
        method = start_method or default_start_method()
        if method == "fork":
            raise ValueError("start_method='fork' is not supported (fork after threads "
                             "deadlocks); use 'forkserver' or 'spawn'")
        ctx: Any = mp.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(["batchenv"])
        res = self.resources
        for k in range(len(bounds) - 1):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, daemon=True,
                               name=f"batchenv-shard-{k}",
                               args=(env_cls, bounds[k], bounds[k + 1], env_kwargs,
                                     self._specs, child))
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
        return (np.ndarray(shape, dtype=dtype, buffer=block.buf),
                (block.name, tuple(shape), dtype.str))

    def start(self, k: int, cmd: str, arg: Any = None) -> None:
        try:
            self.resources.conns[k].send((cmd, arg))
        except (OSError, ValueError):  # its end is closed: finish() reports how it died
            pass

    def finish(self, shards: Any, *, what: str = "step", timeout: float | None = None
               ) -> list[Any]:
        """The replies of ``shards`` (in order); ``ShardError`` if one raised, died or did
        not answer within the timeout (the others' replies are read first, so that the
        pipes stay in step)."""
        shards = list(shards)
        timeout = self.timeout if timeout is None else timeout
        res = self.resources
        replies: dict[int, Any] = {}
        failures: list[tuple[int, str, BaseException | None]] = []
        waiting: dict[Any, int] = {res.conns[k]: k for k in shards}
        sentinels = {res.processes[k].sentinel: k for k in shards}
        deadline = None if timeout is None else time.monotonic() + timeout
        while waiting:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = connection.wait([*waiting, *(s for s, k in sentinels.items()
                                                  if k in waiting.values())], left)
            if not ready:
                for k in waiting.values():
                    failures.append((k, f"did not answer {what} within {timeout} s", None))
                    res.hung.add(k)
                break
            for obj in ready:
                if obj in waiting:
                    k = waiting[obj]
                    try:
                        status, payload = res.conns[k].recv()
                    except (EOFError, OSError):
                        continue  # it died: its sentinel reports it
                    del waiting[obj]
                    if status == "ok":
                        replies[k] = payload
                    else:
                        failures.append((k, *_remote_failure(payload)))
                elif obj in sentinels and sentinels[obj] in waiting.values():
                    k = sentinels[obj]
                    proc = res.processes[k]
                    proc.join(0.1)
                    del waiting[res.conns[k]]
                    hint = ("; it could not start: the worker's stderr says why (a script "
                            "must create the env under `if __name__ == '__main__':`, and the "
                            "env class must be importable)") if what == "start" else ""
                    failures.append((k, f"died during {what} ({_exit_reason(proc.exitcode)})"
                                        f"{hint}", None))
        if failures:  # reported in shard order, whichever answered first
            failures.sort(key=lambda failure: failure[0])
            k, message, cause = failures[0]
            raise ShardError(k, self.bounds[k], self.bounds[k + 1], message,
                             others=[f[0] for f in failures[1:]]) from cause
        return [replies[k] for k in shards]

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
            arrays[key], specs[key] = self._new_array(f"traj{steps}_{key}", shape, dtype)
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
