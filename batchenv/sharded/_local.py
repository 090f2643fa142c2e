"""``local_shard=True``: shard 0 lives in the driver and the driver steps it.

With worker processes only, the driver of a step mostly waits: it posts ``go`` to every
worker and waits for their ``done``. On a machine with as many cores as workers, the
driver's own work (validation, the handshakes, the policy) then shares a core with a
worker, and every step pays two handoffs per worker. With ``local_shard=True`` shard 0 is
an ordinary :class:`~batchenv.sharded._shard.Shard` in the driver, writing straight into
its rows of the batch arrays (``adopt_buffers``, as a worker does): a command to it is
recorded by ``start`` and run by ``finish``, after every worker was posted, so the driver
steps its shard while the workers step theirs, and ``step_async`` still returns at once.

The other shards are an ordinary backend (process or Ray) over ``bounds[1:]``, numbering
its shards from 1 in its errors. This wrapper is what ``ShardedVectorEnv`` sees: the
backend interface (``arrays``, ``trajectories``, ``start``, ``finish``,
``pack_policy``, ``pids``, ``close``) over all the shards.

The price: no fault isolation for shard 0 (a segfault there kills the driver; a Python
exception there is reported as a ``ShardError`` naming shard 0, with the exception as its
``__cause__``), and no ``timeout`` for it (the driver cannot interrupt itself).
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from batchenv.core import BatchEnv
from batchenv.sharded._errors import ShardError
from batchenv.sharded._shard import Shard, adopt_buffers, pickle_policy, rows
from batchenv.sharded._shm import TrajectoryArrays


def unpack_policy(payload: Any) -> Any:
    """The policy that ``pack_policy`` packed (pickled bytes, or a Ray ObjectRef): the
    local shard runs its own copy, as a worker does, so that a policy holding state (a
    random generator) behaves the same whichever shard runs it."""
    if payload is None or isinstance(payload, bytes):
        return None if payload is None else pickle.loads(payload)
    import ray

    return ray.get(payload)


class LocalShard:
    """Shard 0, rows ``[start, stop)``, in the driver: a :class:`Shard` whose env writes
    into its rows of the batch ``arrays`` (and of the ``trajectories``)."""

    def __init__(self, env_cls: type[BatchEnv], start: int, stop: int,
                 env_kwargs: dict[str, Any], arrays: dict[str, np.ndarray],
                 trajectories: TrajectoryArrays) -> None:
        self.start, self.stop = start, stop
        self.shard = Shard(env_cls, stop - start, env_kwargs)
        self.views = rows(arrays, start, stop)
        self.trajectories = trajectories
        adopt_buffers(self.shard.env, self.views)

    def run(self, cmd: str, arg: Any) -> Any:
        """Run a command; returns what a worker would reply."""
        if cmd == "collect":
            payload, steps, _specs = arg
            arg = (unpack_policy(payload), steps,
                   rows(self.trajectories.arrays, self.start, self.stop, axis=1))
        return self.shard.run(cmd, arg, self.views)

    def close(self) -> None:
        self.shard.env.close()
        self.views.clear()


class WithLocalShard:
    """The backend of a ``ShardedVectorEnv(..., local_shard=True)``: shard 0 is a
    :class:`LocalShard`, shards ``1..`` are ``remote``'s (``None``: there are none)."""

    def __init__(self, env_cls: type[BatchEnv], bounds: list[int],
                 env_kwargs: dict[str, Any],
                 layout: dict[str, tuple[tuple[int, ...], Any]], remote: Any | None) -> None:
        self.bounds = bounds
        self.remote: Any = remote  # a ProcessBackend or RayBackend, or None
        self.arrays: dict[str, np.ndarray] = remote.arrays if remote is not None else {
            key: np.zeros(shape, dtype) for key, (shape, dtype) in layout.items()}
        #: collect's trajectories: the remote backend's (shard 0 writes its rows there)
        self.trajectories: TrajectoryArrays = (remote.trajectories if remote is not None
                                               else TrajectoryArrays(None))
        self.pids: list[int] = list(remote.pids) if remote is not None else []
        self.local: LocalShard | None = LocalShard(env_cls, bounds[0], bounds[1],
                                                   env_kwargs, self.arrays, self.trajectories)
        self._pending: tuple[str, Any] | None = None  # shard 0's command, run by finish

    def start(self, k: int, cmd: str, arg: Any = None) -> None:
        """Shard 0: remember the command (``finish`` runs it); others: send it."""
        if k == 0:
            self._pending = (cmd, arg)
        else:
            self.remote.start(k - 1, cmd, arg)

    def finish(self, shards: Any, *, what: str = "step", timeout: float | None = None
               ) -> list[Any]:
        """Run shard 0's command here (the workers were posted already, so they work
        meanwhile), then collect the workers' replies; errors as the remote backend's,
        shard 0's first."""
        shards = list(shards)
        replies: list[Any] = []
        failure: Exception | None = None
        if shards and shards[0] == 0:
            assert self._pending is not None and self.local is not None
            (cmd, arg), self._pending = self._pending, None
            try:
                replies.append(self.local.run(cmd, arg))
            except Exception as exc:  # noqa: BLE001  (reported after the workers answer)
                failure = exc
        others: list[int] = []
        workers = [k - 1 for k in shards if k != 0]
        if workers:
            try:
                replies += self.remote.finish(workers, what=what, timeout=timeout)
            except ShardError as exc:
                if failure is None:
                    raise
                others = [exc.shard, *exc.others]
        if failure is not None:
            raise ShardError(0, self.bounds[0], self.bounds[1],
                             f"raised {type(failure).__name__}: {failure} (in the "
                             f"driver: local_shard)", others=others
                             ) from failure
        return replies

    def pack_policy(self, policy: Any) -> Any:
        return pickle_policy(policy) if self.remote is None else self.remote.pack_policy(policy)

    def close(self) -> None:
        local, self.local = self.local, None
        self._pending = None
        try:
            if local is not None:
                local.close()
        finally:
            if self.remote is not None:
                self.remote.close()
