"""``backend="ray"``: one Ray actor per shard, placed by Ray (across machines if the
cluster has several). Ray is imported only when this backend is chosen
(``pip install batchenv[ray]``).

An actor call returns its shard's arrays through Ray's object store; the driver copies them
into its batch buffers. A call costs milliseconds (``docs/scaling-out.md``), so over Ray the
efficient call is :meth:`ShardedVectorEnv.collect`, one call per shard per rollout.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from batchenv.sharded._errors import ShardError
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

    def getpid(self) -> int:
        return os.getpid()

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
            policy, steps = arg
            if policy is not None:  # an ObjectRef: put once, fetched by every actor
                import ray

                policy = ray.get(policy)
            return shard.collect(policy, steps, None)
        raise ValueError(f"unknown command {cmd!r}")


class RayBackend:
    """Ray actors holding the shards; outputs copied into the driver's buffers."""

    def __init__(self, env_cls: type, bounds: list[int], env_kwargs: dict[str, Any],
                 layout: dict[str, tuple[tuple[int, ...], np.dtype]], *,
                 ray_options: dict[str, Any] | None, timeout: float | None) -> None:
        ray = self.ray = import_ray()
        if not ray.is_initialized():
            ray.init()
        self.bounds = bounds
        self.timeout = timeout
        self.arrays = {key: np.zeros(shape, dtype) for key, (shape, dtype) in layout.items()}
        options = {"num_cpus": 1, **(ray_options or {})}
        actor_cls = ray.remote(ShardActor)
        self.actors = [actor_cls.options(**options).remote(env_cls, bounds[k + 1] - bounds[k],
                                                           env_kwargs)
                       for k in range(self.num_shards)]
        self._pending: dict[int, Any] = {}
        for k, actor in enumerate(self.actors):
            self._pending[k] = actor.getpid.remote()
        self.pids = self.finish(range(self.num_shards), what="start",
                                timeout=max(timeout or 0.0, 300.0))

    @property
    def num_shards(self) -> int:
        return len(self.bounds) - 1

    def start(self, k: int, cmd: str, arg: Any = None) -> None:
        if cmd == "step":
            arg = self.arrays["actions"][self.bounds[k]:self.bounds[k + 1]]
        self._pending[k] = self.actors[k].call.remote(cmd, arg)

    def finish(self, shards: Any, *, what: str = "step", timeout: float | None = None
               ) -> list[Any]:
        ray = self.ray
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

        shards = list(shards)
        timeout = self.timeout if timeout is None else timeout
        refs = {self._pending.pop(k): k for k in shards}
        replies: dict[int, Any] = {}
        failures: list[tuple[int, str, BaseException | None]] = []
        deadline = None if timeout is None else time.monotonic() + timeout
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
            raise ShardError(k, self.bounds[k], self.bounds[k + 1], message,
                             others=[f[0] for f in failures[1:]]) from first_cause
        return [self._absorb(k, replies[k]) for k in shards]

    def _absorb(self, k: int, reply: Any) -> Any:
        """Copy a shard's outputs into the batch buffers; return what the process backend
        would have replied."""
        if isinstance(reply, StepOut):
            self._write(k, reply)
            return reply.info
        if isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[0], StepOut):
            last, side = reply  # collect
            self._write(k, last)
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
