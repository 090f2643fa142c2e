"""``backend="ray"``: one Ray actor per shard, placed by Ray (across machines if the
cluster has several). Ray is imported only when this backend is chosen
(``pip install batchenv[ray]``).

An actor is a :class:`Shard` with its own output arrays: it runs every command through
``Shard.run``, as a process worker does, and returns its rows of the outputs through Ray's
object store; the driver copies them into its batch buffers. A call costs milliseconds
(docs/performance.md), so over Ray the efficient call is :meth:`ShardedVectorEnv.collect`,
one call per shard per rollout. Its trajectories travel two ways (docs/performance.md says
why the copy matters):

* an actor on the driver's node (same Ray node id) writes them straight into the driver's
  shared-memory trajectory arrays (``_shm``), as a process worker does: no copy at all;
* an actor on another node fills its own reused arrays and returns them, and the driver
  copies them into its rows of the trajectory arrays.

The choice is per actor, by node id, never by guessing whether two nodes share ``/dev/shm``
(the simulated two-node cluster of the tests shares it, and still takes the object store).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from batchenv.sharded._errors import ShardError
from batchenv.sharded._shard import Shard, adopt_buffers, batch_layout, rows
from batchenv.sharded._shm import SHM_DIR, Attached, Blocks, TrajectoryArrays


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError("backend='ray' needs Ray: pip install 'batchenv[ray]'") from exc
    return ray


#: The outputs that each command writes and an actor returns (other commands: none).
_OUTPUTS = {"step": ("obs", "reward", "flags", "final_mask", "final_obs"),
            "collect": ("obs", "reward", "flags", "final_mask", "final_obs"),
            "reset": ("obs",), "set_state": ("obs",)}


class ShardActor:
    """The body of a Ray actor: a :class:`Shard` over rows ``[start, stop)`` writing into
    its own arrays, which it returns."""

    def __init__(self, env_cls: type, start: int, stop: int, env_kwargs: dict[str, Any]
                 ) -> None:
        self.start, self.stop = start, stop
        self.shard = Shard(env_cls, stop - start, env_kwargs)
        self.views = rows({key: np.zeros(shape, dtype) for key, (shape, dtype)
                           in batch_layout(self.shard.env, stop - start).items()},
                          0, stop - start)
        adopt_buffers(self.shard.env, self.views)
        self.trajectories = Attached()  # the driver's trajectory blocks, mapped

    def where(self) -> tuple[int, str]:
        """(process id, Ray node id)."""
        return os.getpid(), self.node_id()

    def node_id(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def call(self, cmd: str, arg: Any) -> tuple[dict[str, np.ndarray], Any]:
        """Run a command: (this shard's outputs, the reply)."""
        if cmd == "step":
            self.views["actions"][...] = arg
        elif cmd == "collect":
            policy, steps, specs = arg
            if policy is not None:  # an ObjectRef: put once, fetched by every actor
                import ray

                policy = ray.get(policy)
            arg = (policy, steps, None if specs is None else  # None: return them
                   rows(self.trajectories(specs), self.start, self.stop, axis=1))
        reply = self.shard.run(cmd, arg, self.views)
        outputs = {key: self.views[key] for key in _OUTPUTS.get(cmd, ()) if key in self.views}
        if "final_obs" in outputs:  # only the rows whose episode ended
            outputs["final_obs"] = outputs["final_obs"][outputs["final_mask"]]
        return outputs, reply


class _ShardFailed(Exception):
    """A shard's reply that is a failure: what to tell the user, and its cause."""

    def __init__(self, message: str, cause: BaseException | None) -> None:
        super().__init__(message)
        self.message, self.cause = message, cause


#: How long a cluster with room enough in all may take to free it for the actors (actors
#: of an env closed just before are still being reaped), before the start is refused.
FREE_WAIT = 10.0


def actor_ask(options: dict[str, Any]) -> dict[str, float]:
    """The resources one actor asks Ray for, by Ray's resource names."""
    ask = {"CPU": float(options.get("num_cpus", 1) or 0),
           "GPU": float(options.get("num_gpus", 0) or 0),
           "memory": float(options.get("memory", 0) or 0),
           **{str(k): float(v) for k, v in (options.get("resources") or {}).items()}}
    return {k: v for k, v in ask.items() if v > 0}


def _fits(have: dict[str, float], ask: dict[str, float]) -> int:
    """How many actors asking ``ask`` fit in ``have`` (unbounded: a large number)."""
    return min((int(have.get(k, 0.0) / v + 1e-9) for k, v in ask.items()), default=1 << 30)


def _shown(resources: dict[str, float]) -> str:
    return ", ".join(f"{v:g} {k}" for k, v in resources.items()) or "nothing"


def check_placeable(ray: Any, options: dict[str, Any], actors: int, first_shard: int) -> None:
    """ValueError, before any actor is made, when the cluster cannot place ``actors`` actors
    of ``options``: more than its nodes hold in all (each actor on one node), or more than
    is free after :data:`FREE_WAIT` seconds (Ray would otherwise wait minutes for room; not
    checked with a ``scheduling_strategy``, whose placement group holds resources that do
    not show as free)."""
    ask = actor_ask(options)
    if not ask:
        return
    nodes = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")]
    room = sum(_fits(node, ask) for node in nodes)
    workers = actors + first_shard
    what = (f"num_workers={workers}" + (f" with local_shard ({actors} Ray actors)"
                                        if first_shard else " Ray actors")
            + f", each asking for {_shown(ask)} (ray_options)")
    if room < actors:
        total = ray.cluster_resources()
        raise ValueError(f"{what}: the Ray cluster has room for {room} (its {len(nodes)} "
                         f"node(s) hold {_shown({k: total.get(k, 0.0) for k in ask})} in "
                         f"all); use num_workers <= {room + first_shard}, ask for less per "
                         f"actor (ray_options={{'num_cpus': ...}}), or add nodes")
    if "scheduling_strategy" in options or "placement_group" in options:
        return  # a placement group holds its resources already: they do not show as free
    deadline = time.monotonic() + FREE_WAIT
    while (free := _fits(ray.available_resources(), ask)) < actors:
        if time.monotonic() > deadline:
            available = ray.available_resources()
            raise ValueError(f"{what}: the Ray cluster has room for {room} but only "
                             f"{free} free ({_shown({k: available.get(k, 0.0) for k in ask})}"
                             f" free after {FREE_WAIT:g} s): other actors or tasks hold the "
                             f"rest; close the envs or actors that hold them, or use "
                             f"num_workers <= {free + first_shard}")
        time.sleep(0.1)


class RayBackend:
    """Ray actors holding the shards (see the module docstring)."""

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
        self._views = [rows(self.arrays, bounds[k], bounds[k + 1])
                       for k in range(self.num_shards)]
        self.blocks: Blocks | None = None
        options = {"num_cpus": 1, **(ray_options or {})}
        check_placeable(ray, options, self.num_shards, first_shard)
        actor_cls = ray.remote(ShardActor)
        self.actors = [actor_cls.options(**options).remote(env_cls, bounds[k], bounds[k + 1],
                                                           env_kwargs)
                       for k in range(self.num_shards)]
        self._pending: dict[int, Any] = {k: actor.where.remote()
                                         for k, actor in enumerate(self.actors)}
        places = self.finish(range(self.num_shards), what="start",
                             timeout=max(timeout or 0.0, 300.0))
        self.pids = [pid for pid, _node in places]
        here = ray.get_runtime_context().get_node_id()
        #: per shard: on the driver's node, so ``collect`` writes into shared memory
        self.same_node = [node == here and os.path.isdir(SHM_DIR) for _pid, node in places]
        if any(self.same_node):
            self.blocks = Blocks()
        #: collect's trajectories: in shared memory if an actor is on the driver's node
        self.trajectories = TrajectoryArrays(self.blocks)

    @property
    def num_shards(self) -> int:
        return len(self.bounds) - 1

    def start(self, k: int, cmd: str, arg: Any = None) -> None:
        if cmd == "step":
            arg = self._views[k]["actions"]
        elif cmd == "collect":
            policy, steps, specs = arg
            arg = (policy, steps, specs if self.same_node[k] else None)
        self._pending[k] = self.actors[k].call.remote(cmd, arg)

    def finish(self, shards: Any, *, what: str = "step", timeout: float | None = None
               ) -> list[Any]:
        from ray.exceptions import RayError

        shards = list(shards)
        timeout = self.timeout if timeout is None else timeout
        refs = {self._pending.pop(k): k for k in shards}
        deadline = None if timeout is None else time.monotonic() + timeout
        try:  # the usual case, in one call (ray.wait one by one costs more per shard)
            values = self.ray.get(list(refs), timeout=timeout)
        except RayError:  # which shard, and how: sorted out below (anything else, such as
            pass  # a signal handler's exception, is the caller's and propagates)
        else:
            return self._absorb(shards, values, what)
        replies, failures = self._one_by_one(refs, what, timeout, deadline)
        if failures:  # reported in shard order, whichever answered first
            failures.sort(key=lambda failure: failure[0])
            k, message, first_cause = failures[0]
            raise ShardError(k + self.first_shard, self.bounds[k], self.bounds[k + 1], message,
                             others=[f[0] + self.first_shard for f in failures[1:]]
                             ) from first_cause
        return self._absorb(shards, [replies[k] for k in shards], what)

    def _one_by_one(self, refs: dict[Any, int], what: str, timeout: float | None,
                    deadline: float | None
                    ) -> tuple[dict[int, Any], list[tuple[int, str, BaseException | None]]]:
        """The replies of the shards that answered ``what`` (``refs``: ObjectRef -> shard),
        and the failures ``(shard, message, cause)`` of the others, waited for one at a
        time until ``deadline``."""
        replies: dict[int, Any] = {}
        failures: list[tuple[int, str, BaseException | None]] = []
        waiting = list(refs)
        while waiting:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, waiting = self.ray.wait(waiting, num_returns=1, timeout=left)
            if not done:
                failures += [(refs[r], f"did not answer {what} within {timeout} s", None)
                             for r in waiting]
                break
            k = refs[done[0]]
            try:
                replies[k] = self._get(done[0], what, timeout)
            except _ShardFailed as failed:
                failures.append((k, failed.message, failed.cause))
        return replies, failures

    def _get(self, ref: Any, what: str, timeout: float | None) -> Any:
        """One shard's reply; ``_ShardFailed`` saying how the shard failed instead."""
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

        try:
            return self.ray.get(ref)
        except RayActorError as exc:
            raise _ShardFailed(f"died during {what} (Ray actor error: "
                               f"{str(exc).splitlines()[0]})", exc) from exc
        except RayTaskError as exc:
            cause: BaseException = exc.cause if isinstance(exc.cause, BaseException) else exc
            raise _ShardFailed(f"raised {type(cause).__name__}: {cause}", cause) from exc
        except GetTimeoutError as exc:
            raise _ShardFailed(f"did not answer {what} within {timeout} s", exc) from exc

    def pack_policy(self, policy: Any) -> Any:
        """What ``collect`` sends the actors: an ObjectRef, put once, fetched by each."""
        return self.ray.put(policy)

    def _absorb(self, shards: list[int], replies: list[Any], what: str) -> list[Any]:
        """Copy the shards' outputs into their rows of the batch buffers; return their
        replies (at ``start``: (pid, node id), no outputs)."""
        if what == "start":
            return replies
        out = []
        for k, (outputs, reply) in zip(shards, replies):
            views = self._views[k]
            for key, value in outputs.items():
                if key == "final_obs":  # the rows whose episode ended
                    views[key][views["final_mask"]] = value
                else:
                    views[key][...] = value
            out.append(reply)
        return out

    def close(self) -> None:
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001  (already dead)
                pass
        self.actors = []
        self._pending.clear()
        if self.blocks is not None:
            self.blocks.release()
