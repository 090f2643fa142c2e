"""``backend="ray"``: one Ray actor per shard, placed by Ray (across machines if the
cluster has several). Ray is imported only when this backend is chosen
(``pip install batchenv[ray]``).

An actor call returns its shard's arrays through Ray's object store; the driver copies them
into its batch buffers. A call costs milliseconds (``docs/scaling-out.md``), so over Ray the
efficient call is :meth:`ShardedVectorEnv.collect`, one call per shard per rollout.

``collect`` moves hundreds of MB per call (128 steps x 65,536 state envs: 352 MB), and one
copy of those bytes costs 40-50 ms of CPU here, a third of what stepping them costs in one
process (150 ms). So the trajectories travel two ways:

* an actor on the driver's node (same Ray node id) writes them straight into the driver's
  shared-memory trajectory arrays, as a process worker does: no copy at all;
* an actor on another node fills its own reused arrays and returns them (one copy into its
  node's object store, Ray's transfer, a zero-copy ``ray.get``), and the driver copies them
  into its rows of the trajectory arrays.

The choice is per actor, by node id, never by guessing whether two nodes share ``/dev/shm``
(the simulated two-node cluster of the tests shares it, and still takes the object store).
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np

from batchenv.sharded._errors import ShardError
from batchenv.sharded._process import SHM_PREFIX, shared_array, unlink
from batchenv.sharded._shard import Shard, StepOut


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError("backend='ray' needs Ray: pip install 'batchenv[ray]'") from exc
    return ray


class ShardActor:
    """The body of a Ray actor: a :class:`Shard` and its commands."""

    def __init__(self, env_cls: type, num_rows: int, env_kwargs: dict[str, Any]) -> None:
        self.shard = Shard(env_cls, num_rows, env_kwargs)
        self.blocks: dict[str, SharedMemory] = {}  # the driver's trajectory blocks, attached

    def getpid(self) -> int:
        return os.getpid()

    def where(self) -> tuple[int, str]:
        """(process id, Ray node id)."""
        return os.getpid(), self.node_id()

    def node_id(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def call(self, cmd: str, arg: Any) -> Any:
        shard = self.shard
        if cmd == "step":
            return shard.step(arg)
        if cmd == "reset":
            return shard.reset(*arg)
        if cmd == "set_state":
            return shard.set_state(*arg)
        if cmd == "get_state":
            return shard.get_state()
        if cmd == "render":
            return shard.render()
        if cmd == "call":
            return shard.call(*arg)
        if cmd == "set_attr":
            return shard.set_attr(*arg)
        if cmd == "collect":
            policy, steps, shared = arg
            if policy is not None:  # an ObjectRef: put once, fetched by every actor
                import ray

                policy = ray.get(policy)
            if shared is None:  # another node: return the arrays through the object store
                return shard.collect(policy, steps, None)
            specs, a, b = shared  # the driver's node: write into its shared memory
            out: dict[str, np.ndarray] = {}
            for key, spec in specs.items():
                whole = self._attach(spec)
                if key == "flags":
                    out["terminated"], out["truncated"] = whole[:, :, a:b]
                else:
                    out[key] = whole[:, a:b]
            last, side = shard.collect(policy, steps, out)
            del out, side["out"]
            self._forget({spec[0] for spec in specs.values()})
            return last, side
        raise ValueError(f"unknown command {cmd!r}")

    def _attach(self, spec: tuple[str, tuple[int, ...], str]) -> np.ndarray:
        name, shape, dtype = spec
        if name not in self.blocks:
            if sys.version_info >= (3, 13):
                self.blocks[name] = SharedMemory(name=name, track=False)
            else:  # attaching registers the block with this process's resource tracker,
                # which would unlink the driver's block when the actor exits: unregister
                from multiprocessing import resource_tracker

                block = self.blocks[name] = SharedMemory(name=name)
                resource_tracker.unregister(getattr(block, "_name", "/" + name),
                                            "shared_memory")
        return np.ndarray(shape, dtype=dtype, buffer=self.blocks[name].buf)

    def _forget(self, keep: set[str]) -> None:
        """Unmap blocks of an earlier rollout length (the driver has unlinked them)."""
        for name in [name for name in self.blocks if name not in keep]:
            self.blocks.pop(name).close()


class RayBackend:
    """Ray actors holding the shards; outputs copied into the driver's buffers, except
    ``collect``'s from actors on the driver's node (see the module docstring)."""

    def __init__(self, env_cls: type, bounds: list[int], env_kwargs: dict[str, Any],
                 layout: dict[str, tuple[tuple[int, ...], np.dtype]], *,
                 ray_options: dict[str, Any] | None, timeout: float | None,
                 first_shard: int = 0) -> None:
        ray = self.ray = import_ray()
        if not ray.is_initialized():
            ray.init()
        self.bounds = bounds
        self.first_shard = first_shard  # the batch-wide number of our shard 0, in errors
        self.timeout = timeout
        self.arrays = {key: np.zeros(shape, dtype) for key, (shape, dtype) in layout.items()}
        options = {"num_cpus": 1, **(ray_options or {})}
        actor_cls = ray.remote(ShardActor)
        self.actors = [actor_cls.options(**options).remote(env_cls, bounds[k + 1] - bounds[k],
                                                           env_kwargs)
                       for k in range(self.num_shards)]
        self._pending: dict[int, Any] = {}
        for k, actor in enumerate(self.actors):
            self._pending[k] = actor.where.remote()
        places = self.finish(range(self.num_shards), what="start",
                             timeout=max(timeout or 0.0, 300.0))
        self.pids = [pid for pid, _node in places]
        here = ray.get_runtime_context().get_node_id()
        #: per shard: on the driver's node, so ``collect`` writes into shared memory
        self.same_node = [node == here for _pid, node in places]
        self._traj: tuple[int, dict[str, np.ndarray], dict[str, tuple]] | None = None
        self._blocks: list[SharedMemory] = []

    @property
    def num_shards(self) -> int:
        return len(self.bounds) - 1

    def start(self, k: int, cmd: str, arg: Any = None) -> None:
        if cmd == "step":
            arg = self.arrays["actions"][self.bounds[k]:self.bounds[k + 1]]
        elif cmd == "collect":
            policy, steps, specs = arg
            shared = (specs, self.bounds[k], self.bounds[k + 1]) if self.same_node[k] \
                and specs is not None else None
            arg = (policy, steps, shared)
        self._pending[k] = self.actors[k].call.remote(cmd, arg)

    def collect_buffers(self, steps: int, obs_shape: tuple, obs_dtype: Any,
                        act_shape: tuple, act_dtype: Any
                        ) -> tuple[dict[str, np.ndarray], dict[str, tuple] | None]:
        """The (steps, n, ...) trajectory arrays, reused while ``steps`` is unchanged:
        shared memory (with specs for the actors to attach) if an actor is on the driver's
        node, else ordinary arrays (specs ``None``)."""
        if self._traj is not None and self._traj[0] == steps:
            return self._traj[1], self._traj[2]
        self._free_traj()
        n = self.bounds[-1]
        layout = {"obs": ((steps, n, *obs_shape), obs_dtype),
                  "actions": ((steps, n, *act_shape), act_dtype),
                  "rewards": ((steps, n), np.float64),
                  "flags": ((2, steps, n), np.bool_)}
        arrays: dict[str, np.ndarray] = {}
        specs: dict[str, tuple] | None = None
        if any(self.same_node):
            specs = {}
            token = f"{SHM_PREFIX}{os.getpid()}_{secrets.token_hex(4)}_traj{steps}_"
            for key, (shape, dtype) in layout.items():
                dtype = np.dtype(dtype)
                block = SharedMemory(name=token + key, create=True,
                                     size=max(1, int(np.prod(shape)) * dtype.itemsize))
                self._blocks.append(block)
                arrays[key] = shared_array(block, shape, dtype)
                specs[key] = (block.name, tuple(shape), dtype.str)
        else:
            arrays = {key: np.empty(shape, dtype) for key, (shape, dtype) in layout.items()}
        self._traj = (steps, arrays, specs)  # type: ignore[assignment]
        return arrays, specs

    def _free_traj(self) -> None:
        self._traj = None
        for block in self._blocks:
            unlink(block)
        self._blocks.clear()

    def finish(self, shards: Any, *, what: str = "step", timeout: float | None = None
               ) -> list[Any]:
        ray = self.ray
        from ray.exceptions import GetTimeoutError, RayActorError, RayError, RayTaskError

        shards = list(shards)
        timeout = self.timeout if timeout is None else timeout
        refs = {self._pending.pop(k): k for k in shards}
        deadline = None if timeout is None else time.monotonic() + timeout
        try:  # the usual case, in one call; ray.wait one by one costs ~0.1 ms per shard
            values = ray.get(list(refs), timeout=timeout)
        except RayError:  # which shard, and how: sorted out below (anything else, such as
            pass  # a signal handler's exception, is the caller's and propagates)
        else:
            return [self._absorb(k, value) for k, value in zip(shards, values)]
        replies: dict[int, Any] = {}
        failures: list[tuple[int, str, BaseException | None]] = []
        waiting = list(refs)
        while waiting:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, waiting = ray.wait(waiting, num_returns=1, timeout=left)
            if not done:
                failures += [(refs[r], f"did not answer {what} within {timeout} s", None)
                             for r in waiting]
                break
            k = refs[done[0]]
            try:
                replies[k] = ray.get(done[0])
            except RayActorError as exc:
                failures.append((k, f"died during {what} (Ray actor error: "
                                    f"{str(exc).splitlines()[0]})", exc))
            except RayTaskError as exc:
                cause: BaseException = exc.cause if isinstance(exc.cause, BaseException) \
                    else exc
                failures.append((k, f"raised {type(cause).__name__}: {cause}", cause))
            except GetTimeoutError as exc:
                failures.append((k, f"did not answer {what} within {timeout} s", exc))
        if failures:  # reported in shard order, whichever answered first
            failures.sort(key=lambda failure: failure[0])
            k, message, first_cause = failures[0]
            raise ShardError(k + self.first_shard, self.bounds[k], self.bounds[k + 1], message,
                             others=[f[0] + self.first_shard for f in failures[1:]]
                             ) from first_cause
        return [self._absorb(k, replies[k]) for k in shards]

    def pack_policy(self, policy: Any) -> Any:
        """What ``collect`` sends the actors: an ObjectRef, put once, fetched by each."""
        return self.ray.put(policy)

    def _absorb(self, k: int, reply: Any) -> Any:
        """Copy a shard's outputs into the batch buffers; return what the process backend
        would have replied."""
        if isinstance(reply, StepOut):
            self._write(k, reply)
            return reply.info
        if isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[0], StepOut):
            last, side = reply  # collect
            self._write(k, last)
            if "out" in side:  # from another node: into the driver's trajectory arrays
                assert self._traj is not None
                a, b = self.bounds[k], self.bounds[k + 1]
                whole, part = self._traj[1], side.pop("out")
                for key in ("obs", "actions", "rewards"):
                    whole[key][:, a:b] = part[key]
                whole["flags"][0, :, a:b] = part["terminated"]
                whole["flags"][1, :, a:b] = part["truncated"]
            return last.info, side
        return reply

    def _write(self, k: int, out: StepOut) -> None:
        a, b = self.bounds[k], self.bounds[k + 1]
        arrays = self.arrays
        arrays["obs"][a:b] = out.obs
        if out.reward is None:
            return
        arrays["reward"][a:b] = out.reward
        arrays["flags"][0, a:b] = out.terminated
        arrays["flags"][1, a:b] = out.truncated
        if "final_mask" in arrays:
            arrays["final_mask"][a:b] = False
            if out.final_rows is not None:
                arrays["final_mask"][a + out.final_rows] = True
                arrays["final_obs"][a + out.final_rows] = out.final_obs

    def close(self) -> None:
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001  (already dead)
                pass
        self.actors = []
        self._pending.clear()
        self._free_traj()
