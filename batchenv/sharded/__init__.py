"""``ShardedVectorEnv``: one batch of envs split over worker processes or Ray actors.

numpy runs each kernel on one core. A ``ShardedVectorEnv`` of ``num_envs`` envs holds
``num_workers`` shards; shard k is an ordinary ``BatchEnv`` over the contiguous rows
``[a_k, b_k)`` (``a_k = k * num_envs // num_workers``), in its own process
(``backend="process"``: outputs in shared memory, a step signalled through two semaphores
per worker, no message) or Ray actor (``backend="ray"``: on any machine of a Ray
cluster). To the user it is one Gymnasium ``VectorEnv`` that returns exactly what the
unsharded env returns:

* ``reset(seed=s)`` seeds shard k with ``s + a_k`` (a seed list is split by rows), so row i
  behaves like a batch of one seeded ``s + i``, whatever ``num_workers``;
* SAME_STEP's ``info["final_obs"]`` is assembled across shards; ``reset_mask``,
  ``get_state``/``set_state`` (with or without a mask) and ``render`` split and join by rows;
* actions are validated once, in the driver, so errors name batch-wide env indices.

Beyond the ``VectorEnv`` API (see ``docs/scaling-out.md``):

* ``step_async(actions)`` / ``step_wait()``: the driver is free while the workers step;
* double buffering, ``async_reset`` / ``recv`` / ``send`` (EnvPool's names): the batch is
  split in two halves that alternate, so the policy runs on one half while the other steps;
* ``collect(policy, steps)``: every worker steps its shard ``steps`` times with a policy it
  holds and the trajectories come back as arrays (one call per worker per rollout: the
  IMPALA / RLlib env-runner pattern, what pays across machines).

A worker that raises, dies or hangs (past ``timeout``) raises :class:`ShardError` naming
the shard and its rows; ``close()`` stops every worker and frees the shared memory.

``local_shard=True`` keeps shard 0 in the driver process, stepped by the driver between
posting the workers and collecting them (``batchenv/sharded/_local.py``): ``num_workers=2``
is then the driver and one worker process. On a machine with as many cores as shards this
measured faster than a worker per shard (the driver steps instead of sitting on a core
waiting, one handoff per step instead of two); the price is no fault isolation for shard 0
and a driver busy during ``step_wait``.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from batchenv.core import BatchEnv, ClosedEnvError, batched_space
from batchenv.registration import list_envs, resolve
from batchenv.sharded._errors import ShardError
from batchenv.sharded._shard import batch_layout, rows, trajectory_layout
from batchenv.validation import (
    StepBeforeResetError,
    action_checker,
    check_num_envs,
    check_reset,
    check_set_state,
    check_state_values,
    is_int,
    one_attr_value,
)

__all__ = ["ShardedVectorEnv", "ShardError", "Trajectories", "BACKENDS"]

#: Values of ``backend=``.
BACKENDS = ("process", "ray")


@dataclass
class Trajectories:
    """What :meth:`ShardedVectorEnv.collect` returns: ``T`` steps of ``n`` envs, time-major.

    ``obs[t]`` is the observation the policy chose ``actions[t]`` from; ``rewards[t]``,
    ``terminated[t]``, ``truncated[t]`` are what that step returned; ``next_obs`` is the
    observation after the last step (to bootstrap from). In SAME_STEP mode the true last
    observation of every episode that ended is ``final_obs[j]``, for step and env
    ``final_index[j] = (t, env)`` (sorted by t, then env); in the other modes these are
    empty. ``extras[key]`` stacks what the policy returned besides the actions (a policy
    may return ``(actions, {"logp": ..., ...})``), shape ``(T, n, ...)``."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    next_obs: np.ndarray
    final_obs: np.ndarray
    final_index: np.ndarray
    extras: dict[str, np.ndarray] = field(default_factory=dict)


def _resolve_env(env: Any) -> tuple[type[BatchEnv], dict[str, Any]]:
    """The class and the id's constructor keywords (none for a class), read as ``make``
    reads an id (:func:`batchenv.registration.resolve`)."""
    if isinstance(env, str):
        resolved = resolve(env)
        if resolved is None:
            raise ValueError(f"env must be a BatchEnv subclass, a native env id "
                             f"({list_envs()}) or an id registered with gymnasium.register("
                             f"id, vector_entry_point=<a BatchEnv subclass>), got {env!r}")
        return resolved.cls, dict(resolved.kwargs)
    if not (isinstance(env, type) and issubclass(env, BatchEnv)):
        raise TypeError(f"env must be a BatchEnv subclass or an env id, got {env!r}")
    return env, {}


F = TypeVar("F", bound=Callable[..., Any])


def _exclusive(method: F) -> F:
    """One call at a time: a call made while another thread's call on the same env is
    running raises ``RuntimeError`` (as ``ConcurrentVectorEnv``), instead of mixing the two
    calls' rows in the shared buffers. (Re-entrant: ``step`` runs ``step_async``.)"""
    @functools.wraps(method)
    def run(self: ShardedVectorEnv, *args: Any, **kwargs: Any) -> Any:
        if not self._busy.acquire(blocking=False):
            raise RuntimeError(f"another thread's call on this ShardedVectorEnv is running "
                               f"({method.__name__} refused, nothing was changed); calls "
                               f"from several threads must not overlap: give each thread "
                               f"its own env, or hold a lock around the calls")
        try:
            return method(self, *args, **kwargs)
        finally:
            self._busy.release()

    return run  # type: ignore[return-value]


class ShardedVectorEnv(VectorEnv):
    """A batch of ``num_envs`` envs of class ``env`` split over ``num_workers`` workers.

    Args:
        env: a :class:`~batchenv.BatchEnv` subclass (importable by the workers: defined at
            module level) or a native env id ("batchenv/Pong-v0", "CartPole-v1").
        num_envs: envs in the whole batch.
        num_workers: shards (processes or Ray actors), at most ``num_envs``.
        backend: ``"process"`` (this machine; shared memory) or ``"ray"`` (Ray actors;
            ``pip install batchenv[ray]``; uses the running Ray instance, or starts one).
        copy: return copies (default) or, with ``False``, views of the batch buffers that
            the next call overwrites (the process backend's are shared memory).
        validate: check actions in the driver (errors name batch-wide env indices).
        timeout: seconds a call may wait for a worker before ``ShardError`` (``None``: no
            limit; a worker that dies is reported at once either way).
        start_method: ``"forkserver"`` (default on Linux) or ``"spawn"`` (process backend).
        ray_options: options of each Ray actor (``num_cpus`` 1 by default, ``resources``,
            ``scheduling_strategy``, ...), passed to ``ActorClass.options``. More
            actors than the cluster's nodes can hold (or, after 10 s, than is free) is a
            ``ValueError`` before any actor is made.
        local_shard: keep shard 0 in the driver process, as an ordinary ``BatchEnv``
            writing into its rows of the batch arrays, and run its part of every command
            in the driver after the workers were posted, so that they work meanwhile (a
            step in ``step_wait``, half 0's in the ``recv`` that returns it, a rollout in
            ``collect``); only shards ``1..num_workers-1`` get a worker
            process or actor (``num_workers=1``: none at all). Results are identical
            either way. The trade-off: shard 0 has no fault isolation (a crash in its env
            kills the driver; an exception there raises ``ShardError`` naming shard 0 with
            the exception as ``__cause__``), no ``timeout``, and the driver is busy stepping
            it during ``step_wait``. :attr:`worker_pids` then lists shards ``1..`` only.
        **env_kwargs: the env's constructor arguments (``autoreset_mode``,
            ``max_episode_steps``, ``render_mode``, ``obs_type``, ...).
    """

    def __init__(self, env: type[BatchEnv] | str, num_envs: int, *, num_workers: int,
                 backend: str = "process", copy: bool = True, validate: bool = True,
                 timeout: float | None = None, start_method: str | None = None,
                 ray_options: Mapping[str, Any] | None = None, local_shard: bool = False,
                 **env_kwargs: Any) -> None:
        self._busy = threading.RLock()  # held during a call: see _exclusive
        env_cls, id_kwargs = _resolve_env(env)
        env_kwargs = {**id_kwargs, **env_kwargs}  # an id's registered keywords, then the caller's
        n = self.num_envs = check_num_envs(num_envs, None)
        _check_sharding(n, num_workers, backend, local_shard, timeout)
        template = env_cls(1, **env_kwargs)  # checks the kwargs here, in the driver
        self.env_cls, self.env_kwargs = env_cls, dict(env_kwargs)
        self.num_workers, self.backend = int(num_workers), backend
        self.local_shard = bool(local_shard)
        self.copy, self.validate, self.timeout = bool(copy), bool(validate), timeout
        self.single_observation_space = template.single_observation_space
        self.single_action_space = template.single_action_space
        self.observation_space = batched_space(self.single_observation_space, n)
        self.action_space = batched_space(self.single_action_space, n)
        self.metadata = dict(template.metadata)
        self.autoreset_mode: AutoresetMode = template.autoreset_mode
        self.reward_dtype: np.dtype = template.reward_dtype
        self.max_episode_steps = template.max_episode_steps
        self.render_mode = template.render_mode
        self.full_state_dtype = template.full_state_dtype
        bounds_rule = template.box_action_bounds
        #: a one-env instance kept in the driver: its ``check_state`` judges set_state's
        #: records before any shard is touched
        self._template = template
        self._action_check = action_checker(self.single_action_space, n, bounds_rule)
        self._half_checks: list[Callable] = []

        #: ``bounds[k]:bounds[k + 1]`` are the rows of shard k.
        self.bounds = [k * n // self.num_workers for k in range(self.num_workers + 1)]
        half = self.num_workers // 2
        self._half_shards = [range(0, half), range(half, self.num_workers)]
        self._half_rows = [(0, self.bounds[half]), (self.bounds[half], n)]
        if not half:  # one worker: one "half", every row, stepped synchronously
            self._half_shards, self._half_rows = self._half_shards[1:], self._half_rows[1:]
        self._half_checks = [action_checker(self.single_action_space, b - a, bounds_rule)
                             for a, b in self._half_rows]

        self.closed = True  # until the workers are up: close() has nothing to do
        #: ProcessBackend, RayBackend or WithLocalShard
        self._backend: Any = self._start_workers(batch_layout(template, n), start_method,
                                                 ray_options)
        self._finalizer = weakref.finalize(self, _close_in_owner, self._backend, os.getpid())
        self.closed = False
        self._arrays = self._backend.arrays
        self._needs_reset = True
        self._failure: Exception | None = None
        self._in_flight = False  # step_async sent, step_wait not yet called
        self._double: dict[str, Any] | None = None  # double-buffered mode's state

    def _start_workers(self, layout: Any, start_method: str | None,
                       ray_options: Mapping[str, Any] | None) -> Any:
        """The backend that runs the shards on ``self.backend``: a worker for each shard,
        or with ``local_shard`` for shards ``1..`` and shard 0 in this process."""
        first = int(self.local_shard)  # the first shard that gets a worker
        remote: Any = None
        if first == self.num_workers:
            pass  # local_shard with one shard: no worker at all
        elif self.backend == "process":
            from batchenv.sharded._process import ProcessBackend

            remote = ProcessBackend(self.env_cls, self.bounds[first:], self.env_kwargs,
                                    layout, start_method=start_method, timeout=self.timeout,
                                    first_shard=first)
        else:
            from batchenv.sharded._ray import RayBackend

            remote = RayBackend(self.env_cls, self.bounds[first:], self.env_kwargs, layout,
                                ray_options=dict(ray_options or {}), timeout=self.timeout,
                                first_shard=first)
        if not self.local_shard:
            return remote
        from batchenv.sharded._local import WithLocalShard

        try:
            return WithLocalShard(self.env_cls, self.bounds, self.env_kwargs, layout, remote)
        except BaseException:
            if remote is not None:
                remote.close()  # no worker or block outlives a failed start
            raise

    # ------------------------------------------------------------------ introspection
    @property
    def shard_rows(self) -> list[range]:
        """The rows (env indices) of each shard."""
        return [range(self.bounds[k], self.bounds[k + 1]) for k in range(self.num_workers)]

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers (Ray: of the actors; on other nodes they name
        processes there), one per shard; with ``local_shard``, of shards ``1..`` only
        (shard 0 is the driver)."""
        return list(self._backend.pids)

    def __repr__(self) -> str:
        local = ", local_shard=True" if self.local_shard else ""
        return (f"ShardedVectorEnv({self.env_cls.__name__}, num_envs={self.num_envs}, "
                f"num_workers={self.num_workers}, backend={self.backend!r}{local})")

    # ------------------------------------------------------------------ Gymnasium API
    @_exclusive
    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: Mapping[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """As :meth:`BatchEnv.reset`; shard k gets seed ``seed + a_k`` (or its slice of a
        seed list). Ends the double-buffered mode (waiting for a half in flight)."""
        self._check_usable()
        self._drain()
        mask, _, _ = check_reset(seed, options, self.num_envs, self._needs_reset)
        shards = []
        for k, (a, b) in enumerate(self._pairs()):
            shard_mask = None if mask is None else mask[a:b]
            if shard_mask is not None and not shard_mask.any():
                continue  # nothing to reset there; its observations stay as they are
            self._backend.start(k, "reset", (_shard_seed(seed, a, b), shard_mask))
            shards.append(k)
        replies = self._finish(shards, "reset")
        if mask is None:
            self._needs_reset = False
        info: dict[str, Any] = {}
        for k, extra in zip(shards, replies):
            _merge_info(info, extra, self.bounds[k], self.num_envs)
        return self._out(self._arrays["obs"]), info

    @_exclusive
    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """Step every env (see ``docs/autoreset.md``); the shards step in parallel."""
        self.step_async(actions)
        return self.step_wait()

    @_exclusive
    def step_async(self, actions: Any) -> None:
        """Send ``actions`` to the workers and return at once; :meth:`step_wait` collects
        the results. The driver may run other work (a policy on other data) meanwhile."""
        self._check_usable()
        if self._in_flight:
            raise ValueError("step_async() called twice: call step_wait() first")
        if self._double is not None:
            raise ValueError("step()/step_async() in double-buffered mode: use recv()/send(), "
                             "or reset() to leave that mode")
        if self._needs_reset:
            raise StepBeforeResetError("step() called before reset(): call reset() first")
        checked = self._action_check(actions) if self.validate else np.asarray(actions)
        self._arrays["actions"][...] = checked
        for k in range(self.num_workers):
            self._backend.start(k, "step")
        self._in_flight = True

    @_exclusive
    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                 dict[str, Any]]:
        """The results of the step sent by :meth:`step_async`."""
        self._check_usable()
        if not self._in_flight:
            raise ValueError("step_wait() without step_async()")
        self._in_flight = False
        replies = self._finish(range(self.num_workers), "step")
        return self._outputs(0, self.num_envs, range(self.num_workers), replies)

    @_exclusive
    def render(self) -> tuple[Any, ...] | None:
        """One frame per env, in env order (``None`` when ``render_mode`` is ``None``)."""
        self._check_usable()
        if self.render_mode is None:
            gym.logger.warn("ShardedVectorEnv.render() called without a render_mode; pass "
                            "render_mode=... to the constructor")
            return None
        if self._needs_reset:
            raise StepBeforeResetError("render() called before reset(): call reset() first")
        self._drain()
        frames: list[Any] = []
        for part in self._call_all("render"):
            frames.extend(part)
        return tuple(frames)

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]  # as Sync's
        """The seed of each env's random stream (as :attr:`BatchEnv.np_random_seed`),
        gathered from the shards."""
        return self._gather_seeds()

    @_exclusive
    def _gather_seeds(self) -> tuple[int, ...]:
        self._check_usable()
        self._drain()
        return tuple(x for part in self._call_all("call", ("np_random_seed", (), {}))
                     for x in part)

    @_exclusive
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """As :meth:`BatchEnv.call`: one entry per env. The driver's own attributes
        (``num_envs``, the spaces, ``metadata``, ...) are the whole batch's, returned once
        per env; ``render`` and ``np_random_seed`` give their per-env entries; any other
        name runs on every shard (once per shard) and each env gets its shard's result."""
        self._check_usable()
        if name not in ("render", "np_random_seed") and name not in self.__dict__:
            # a missing attribute is refused here, before any shard is asked (as the
            # unsharded env raises AttributeError and carries on)
            getattr(self._template, name)
        if name == "render":
            frames = self.render()
            return (None,) * self.num_envs if frames is None else frames
        if name == "np_random_seed":
            return self.np_random_seed
        if name in self.__dict__:
            attr = self.__dict__[name]
            value = attr(*args, **kwargs) if callable(attr) else attr
            return (value,) * self.num_envs
        self._drain()
        return tuple(x for part in self._call_all("call", (name, args, kwargs)) for x in part)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name``, one entry per env (:meth:`call`)."""
        return self.call(name)

    @_exclusive
    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """As :meth:`BatchEnv.set_attr`, on every shard: one value, or ``num_envs`` equal
        values (``ValueError`` names the envs whose value differs from env 0's)."""
        self._check_usable()
        first = one_attr_value(name, values, self.num_envs)
        self._drain()
        self._call_all("set_attr", (name, first))
        self._template.set_attr(name, first)  # so that call/get_attr know the name
        if name in self.__dict__ and not name.startswith("_"):  # the driver's copy too
            setattr(self, name, first)

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the workers (within seconds, whatever state they are in) and free the
        shared memory."""
        self._arrays = {}
        finalizer = self.__dict__.get("_finalizer")  # (none after a constructor that raised:
        if finalizer is not None:  # Gymnasium's VectorEnv.__del__ closes that object too)
            finalizer()

    # ------------------------------------------------------------------ state access
    @_exclusive
    def get_state(self) -> np.ndarray:
        """The whole batch as records of ``full_state_dtype`` (as :meth:`BatchEnv.get_state`)."""
        self._check_usable()
        self._drain()
        return np.concatenate(self._call_all("get_state"))

    @_exclusive
    def set_state(self, states: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """As :meth:`BatchEnv.set_state`: restore all envs, or (with ``mask``) the masked
        ones; returns the observations of all envs (a copy)."""
        self._check_usable()
        self._drain()
        n = self.num_envs
        # checked here, in full, before any shard is touched: a refused call changes
        # nothing anywhere and names batch-wide env indices
        states, idx = check_set_state(states, mask, n, self.full_state_dtype,
                                      self._needs_reset)
        check_state_values(self._template, states, np.arange(n) if idx is None else idx)
        shards: list[int] = []
        args: list[tuple[np.ndarray, np.ndarray | None]] = []
        if idx is None:
            for k, (a, b) in enumerate(self._pairs()):
                shards.append(k)
                args.append((states[a:b], None))
        else:
            idx_mask = np.zeros(n, dtype=bool)
            idx_mask[idx] = True
            first = np.searchsorted(idx, self.bounds)  # compact records of each shard
            for k, (a, b) in enumerate(self._pairs()):
                if first[k + 1] > first[k]:
                    shards.append(k)
                    args.append((states[first[k]:first[k + 1]], idx_mask[a:b]))
        for k, arg in zip(shards, args):
            self._backend.start(k, "set_state", arg)
        self._finish(shards, "set_state")
        if mask is None:
            self._needs_reset = False
        return self._arrays["obs"].copy()

    # ------------------------------------------------------------------ rollouts
    @_exclusive
    def collect(self, policy: Callable[[np.ndarray], Any] | None, steps: int
                ) -> Trajectories:
        """Every worker steps its shard ``steps`` times with ``policy`` and returns the
        trajectories (see :class:`Trajectories`).

        ``policy(obs)`` gets a shard's observations ``(rows, ...)`` and returns its actions,
        or ``(actions, extras)`` with ``extras`` a dict of arrays over the rows. It must
        pickle: it is sent once per call (``None``: reuse the one sent last), so a network
        policy's weights travel once per rollout. It runs in the workers: limit its
        threads (``torch.set_num_threads(1)``) when workers share the cores. With
        ``local_shard``, the driver runs shard 0's part of the rollout (with its own
        unpickled copy of the policy, as a worker has) while the workers run theirs. Continues
        from the env's current state; afterwards ``step`` continues from the last one.
        With ``copy=False`` the arrays are views of the env's buffers (shared memory on the
        driver's node) that the next ``collect`` of as many steps overwrites."""
        self._check_usable()
        self._drain()
        if self._needs_reset:
            raise StepBeforeResetError("collect() called before reset(): call reset() first")
        if not is_int(steps) or steps < 1:
            raise ValueError(f"steps must be a positive int, got {steps!r}")
        steps = int(steps)
        # (steps, n, ...) arrays, kept while steps is unchanged; the shards write their rows
        arrays, specs = self._backend.trajectories.get(
            steps, trajectory_layout(self._template, steps, self.num_envs))
        # pickled once (Ray: put once, fetched by every actor)
        payload = None if policy is None else self._backend.pack_policy(policy)
        for k in range(self.num_workers):
            self._backend.start(k, "collect", (payload, steps, specs))
        replies = self._finish(range(self.num_workers), "collect")
        sides = [side for _info, side in replies]
        for k, side in enumerate(sides):  # a shard that kept its own (a Ray actor on
            if "out" in side:  # another node) returned them: into its rows
                ours = rows(arrays, self.bounds[k], self.bounds[k + 1], axis=1)
                for key, part in side.pop("out").items():
                    ours[key][...] = part
        terminated, truncated = arrays["flags"]
        out = {"obs": arrays["obs"], "actions": arrays["actions"],
               "rewards": arrays["rewards"], "terminated": terminated,
               "truncated": truncated}
        if self.copy:
            out = {k: v.copy() for k, v in out.items()}
        final_index, final_obs = self._final_observations(sides)
        return Trajectories(next_obs=self._arrays["obs"].copy(), final_obs=final_obs,
                            final_index=final_index, extras=_stacked_extras(sides), **out)

    def _final_observations(self, sides: list[dict[str, Any]]
                            ) -> tuple[np.ndarray, np.ndarray]:
        """``collect``'s ``(final_index, final_obs)`` from the shards' replies: each
        shard's ``(t, row, obs)`` of the episodes that ended, rows made batch-wide, sorted
        by step then env (empty unless SAME_STEP)."""
        finals = [(s["final"], self.bounds[k]) for k, s in enumerate(sides) if "final" in s]
        if not finals:
            space = self.single_observation_space
            return np.zeros((0, 2), np.int64), np.zeros((0, *(space.shape or ())), space.dtype)
        t = np.concatenate([f[0] for f, _ in finals])
        env = np.concatenate([f[1] + a for f, a in finals])
        obs = np.concatenate([f[2] for f, _ in finals])
        order = np.lexsort((env, t))
        return np.stack([t[order], env[order]], axis=1).astype(np.int64), obs[order]

    # ------------------------------------------------------------------ double buffering
    @_exclusive
    def async_reset(self, *, seed: int | Sequence[int | None] | None = None,
                    options: Mapping[str, Any] | None = None) -> None:
        """Reset (as :meth:`reset`) and enter the double-buffered mode.

        The batch is split in two halves (workers ``[0, W//2)`` and ``[W//2, W)``; with one
        worker, one half of every row: EnvPool's synchronous loop). :meth:`recv` returns
        the next half's results, alternating
        0, 1, 0, 1, ... (the first two are the reset observations, with zero rewards and
        False flags); :meth:`send` steps the half last received with its actions and
        returns at once. So the caller's policy runs on one half while the other half
        steps. Each env sees the same sequence of calls as in :meth:`step`, so with the
        same actions per env the results are identical. ``reset()`` leaves the mode."""
        self.reset(seed=seed, options=options)
        self._double = {"next": 0, "received": None,
                        "in_flight": [False] * len(self._half_rows)}

    @_exclusive
    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The next half's ``(obs, reward, terminated, truncated, info)``, arrays over its
        rows only; ``info["env_id"]`` holds those rows' env indices (as EnvPool)."""
        self._check_usable()
        d = self._double
        if d is None:
            raise ValueError("recv() outside the double-buffered mode: call async_reset()")
        if d["received"] is not None:
            raise ValueError(f"recv() twice: send() the actions of half {d['received']} first")
        h = d["next"]
        a, b = self._half_rows[h]
        if d["in_flight"][h]:
            d["in_flight"][h] = False
            shards = self._half_shards[h]
            result = self._outputs(a, b, shards, self._finish(shards, "step"))
        else:  # just reset
            result = (self._out(self._arrays["obs"][a:b]),
                      np.zeros(b - a, dtype=self.reward_dtype),
                      np.zeros(b - a, bool), np.zeros(b - a, bool), {})
        result[4]["env_id"] = np.arange(a, b)
        d["received"], d["next"] = h, (h + 1) % len(self._half_rows)
        return result

    @_exclusive
    def send(self, actions: Any, env_id: np.ndarray | None = None) -> None:
        """Step the half that :meth:`recv` returned last with ``actions`` (its rows only);
        returns at once. ``env_id``, if given, must be that half's ``info["env_id"]``."""
        self._check_usable()
        d = self._double
        if d is None or d["received"] is None:
            raise ValueError("send() needs a recv() first (after async_reset())")
        h = d["received"]
        a, b = self._half_rows[h]
        if env_id is not None and not np.array_equal(env_id, np.arange(a, b)):
            raise ValueError(f"send(): env_id must be the rows of the half last received, "
                             f"[{a}, {b})")
        checked = self._half_checks[h](actions) if self.validate else np.asarray(actions)
        self._arrays["actions"][a:b] = checked
        for k in self._half_shards[h]:
            self._backend.start(k, "step")
        d["in_flight"][h] = True
        d["received"] = None

    def __reduce__(self) -> Any:
        raise TypeError("a ShardedVectorEnv cannot be pickled: it owns worker processes "
                        "and shared memory; pickle its state (get_state()) or build it "
                        "again from (env, num_envs, num_workers, ...) in the other process")

    # ------------------------------------------------------------------ helpers
    def _pairs(self) -> list[tuple[int, int]]:
        return [(self.bounds[k], self.bounds[k + 1]) for k in range(self.num_workers)]

    def _out(self, array: np.ndarray) -> np.ndarray:
        return array.copy() if self.copy else array

    def _check_usable(self) -> None:
        if self.closed:
            raise ClosedEnvError("ShardedVectorEnv is closed: make a new env")
        f = self._failure
        if isinstance(f, ShardError):
            raise ShardError(f.shard, f.rows.start, f.rows.stop,
                             f"failed earlier ({f}); the env is unusable: close() it")
        if f is not None:
            raise RuntimeError(str(f))

    def _finish(self, shards: Any, what: str) -> list[Any]:
        try:
            return self._backend.finish(shards, what=what)
        except ShardError as exc:
            self._failure = exc
            raise
        except BaseException as exc:  # Ctrl-C mid-call: the workers' replies are unread
            self._failure = RuntimeError(
                f"ShardedVectorEnv: {what} was interrupted ({type(exc).__name__}) while the "
                f"workers were working, so the batch is no longer one consistent step; the "
                f"env is unusable: close() it")
            raise

    def _call_all(self, cmd: str, arg: Any = None) -> list[Any]:
        for k in range(self.num_workers):
            self._backend.start(k, cmd, arg)
        return self._finish(range(self.num_workers), cmd)

    def _drain(self) -> None:
        """Finish whatever is in flight (step_async, a double-buffered half) and leave the
        double-buffered mode."""
        if self._in_flight:
            self._in_flight = False
            self._finish(range(self.num_workers), "step")
        d, self._double = self._double, None
        if d is not None:
            for h in (0, 1):
                if d["in_flight"][h]:
                    self._finish(self._half_shards[h], "step")

    def _outputs(self, a: int, b: int, shards: Any, replies: list[Any]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        arrays = self._arrays
        info: dict[str, Any] = {}
        if "final_mask" in arrays:
            over = arrays["final_mask"][a:b]
            if over.any():
                rows = np.flatnonzero(over)
                final_obs = np.full(b - a, None, dtype=object)
                rows_obs = arrays["final_obs"][a + rows]
                # each entry as BatchEnv gives it (a Discrete observation: a Python int)
                final_obs[rows] = rows_obs.tolist() if isinstance(
                    self.single_observation_space, spaces.Discrete) else list(rows_obs)
                info = {"final_obs": final_obs, "_final_obs": over.copy(),
                        "final_info": {}, "_final_info": over.copy()}
        for k, extra in zip(shards, replies):
            _merge_info(info, extra, self.bounds[k] - a, b - a)
        if self.copy:
            terminated, truncated = arrays["flags"][:, a:b].copy()
            return (arrays["obs"][a:b].copy(), arrays["reward"][a:b].copy(), terminated,
                    truncated, info)
        return (arrays["obs"][a:b], arrays["reward"][a:b], arrays["flags"][0, a:b],
                arrays["flags"][1, a:b], info)


def _close_in_owner(backend: Any, owner: int) -> None:
    """Close the backend, in the process that made it only: a child made by ``os.fork()``
    inherits the env (and this finalizer, run at its exit) but not the workers, which it
    must neither stop nor wait for, nor the shared memory, which the parent still uses."""
    if os.getpid() == owner:
        backend.close()


def _shard_seed(seed: Any, a: int, b: int) -> Any:
    """Shard ``[a, b)``'s seed: ``seed + a`` for an int (so row i still gets ``seed + i``),
    its slice of a list."""
    if seed is None:
        return None
    if is_int(seed):
        return int(seed) + a
    return [None if x is None else int(x) for x in list(seed)[a:b]]


def _check_sharding(num_envs: int, num_workers: Any, backend: Any, local_shard: Any,
                    timeout: Any) -> None:
    """Refuse ``ShardedVectorEnv``'s own arguments outside their forms."""
    if not is_int(num_workers) or not 1 <= num_workers <= num_envs:
        raise ValueError(f"num_workers must be an int in [1, num_envs={num_envs}], got "
                         f"{num_workers!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if not isinstance(local_shard, (bool, np.bool_)):
        raise TypeError(f"local_shard must be a bool, got {local_shard!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got "
                         f"{timeout!r}")


def _stacked_extras(sides: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """What the policy returned besides the actions, each key's shards joined by rows
    (axis 1 of ``(T, rows, ...)``)."""
    if not sides or not sides[0]["extras"]:
        return {}
    return {key: np.concatenate([s["extras"][key] for s in sides], axis=1)
            for key in sides[0]["extras"]}


def _merge_info(info: dict[str, Any], part: dict[str, Any] | None, offset: int, n: int
                ) -> None:
    """Put a shard's info (arrays over its rows) at ``offset`` into the batch's ``info``
    (arrays over ``n`` rows), as Gymnasium's vector envs lay infos out."""
    if not part:
        return
    for key, value in part.items():
        if isinstance(value, dict):
            _merge_info(info.setdefault(key, {}), value, offset, n)
        elif isinstance(value, np.ndarray) and value.ndim >= 1:
            if key not in info:
                fill = None if value.dtype == object else 0
                info[key] = np.full((n, *value.shape[1:]), fill, dtype=value.dtype)
            info[key][offset:offset + len(value)] = value
        else:
            info[key] = value
