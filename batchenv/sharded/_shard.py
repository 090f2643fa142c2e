"""What one shard does with its block of rows, whatever carries the commands (a worker
process with shared memory, a Ray actor, or the driver itself with ``local_shard``). Kept
free of transport so that all of them run the same code."""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from batchenv.core import BatchEnv, adopt_output_buffers
from batchenv.validation import action_checker

#: Seconds between a worker's checks that its driver is still there, during a rollout.
CHECK_SECONDS = 0.05


class DriverGone(Exception):
    """A worker noticed mid-rollout that its driver is gone."""


#: info keys that the driver assembles itself (from the final-observation buffers).
STANDARD_INFO = ("final_obs", "_final_obs", "final_info", "_final_info")


class StepOut:
    """One shard's outputs of a step (or reset / set_state): arrays over its rows."""

    __slots__ = ("obs", "reward", "terminated", "truncated", "final_rows", "final_obs", "info")

    def __init__(self, obs: np.ndarray, reward: np.ndarray | None = None,
                 terminated: np.ndarray | None = None, truncated: np.ndarray | None = None,
                 final_rows: np.ndarray | None = None, final_obs: np.ndarray | None = None,
                 info: dict[str, Any] | None = None) -> None:
        self.obs, self.reward = obs, reward
        self.terminated, self.truncated = terminated, truncated
        self.final_rows, self.final_obs = final_rows, final_obs  # local rows, their obs
        self.info = info or None  # non-standard info keys, arrays over the shard's rows


def split_info(info: dict[str, Any]) -> tuple[np.ndarray | None, np.ndarray | None,
                                              dict[str, Any]]:
    """SAME_STEP's final observations as (local rows, stacked observations), and the rest
    of ``info`` that the driver must merge (empty for every BatchEnv)."""
    rest = {k: v for k, v in info.items() if k not in STANDARD_INFO}
    if info.get("final_info"):
        rest["final_info"] = info["final_info"]
        rest["_final_info"] = info["_final_info"]
    if "_final_obs" not in info:
        return None, None, rest
    rows = np.flatnonzero(info["_final_obs"])
    return rows, np.stack(list(info["final_obs"][rows])), rest


def batch_layout(env: Any, n: int) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """The (shape, dtype) of every output array of a batch of ``n`` envs like ``env``
    (observations, rewards, the terminated/truncated block, actions, and in SAME_STEP mode
    the final observations and their mask): the driver's whole batch, or a Ray actor's
    own rows."""
    obs, act = env.single_observation_space, env.single_action_space
    layout = {"obs": ((n, *(obs.shape or ())), np.dtype(obs.dtype)),
              "reward": ((n,), np.dtype(env.reward_dtype)),
              "flags": ((2, n), np.dtype(np.bool_)),  # terminated, truncated
              "actions": ((n, *(act.shape or ())), np.dtype(act.dtype))}
    if env.autoreset_mode is AutoresetMode.SAME_STEP:
        layout["final_obs"] = layout["obs"]
        layout["final_mask"] = ((n,), np.dtype(np.bool_))
    return layout


def trajectory_layout(env: Any, steps: int, n: int
                      ) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """The (shape, dtype) of ``collect``'s time-major trajectory arrays: ``steps`` steps
    of ``n`` envs like ``env``."""
    obs, act = env.single_observation_space, env.single_action_space
    return {"obs": ((steps, n, *(obs.shape or ())), np.dtype(obs.dtype)),
            "actions": ((steps, n, *(act.shape or ())), np.dtype(act.dtype)),
            "rewards": ((steps, n), np.dtype(env.reward_dtype)),
            "flags": ((2, steps, n), np.dtype(np.bool_))}  # terminated, truncated


def rows(arrays: dict[str, np.ndarray], start: int, stop: int, axis: int = 0
         ) -> dict[str, np.ndarray]:
    """Rows ``[start, stop)`` (a shard's part) of batch arrays (``axis=0``) or of
    trajectory arrays (``axis=1``, after the time axis), plus ``terminated`` and
    ``truncated``: the two rows of ``flags``, whose env axis is one further."""
    part = (slice(None),) * axis + (slice(start, stop),)
    views = {key: whole[(slice(None),) + part] if key == "flags" else whole[part]
             for key, whole in arrays.items()}
    views["terminated"], views["truncated"] = views["flags"]
    return views


def pickle_policy(policy: Any) -> bytes:
    """``pickle``, or ``cloudpickle`` (if installed) for lambdas and closures."""
    try:
        return pickle.dumps(policy)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        try:
            import cloudpickle
        except ImportError:
            raise TypeError(f"collect: the policy must pickle (define it at module level, "
                            f"or install cloudpickle): {exc}") from exc
        return cloudpickle.dumps(policy)


def adopt_buffers(env: Any, views: dict[str, np.ndarray]) -> bool:
    """Make the shard's env write its observations, rewards and flags straight into its
    rows of the shared arrays (its ``copy=False`` outputs are then those rows): a step
    copies no output at all. Envs that draw incrementally into their observation buffer
    (BatchPong's pixels) keep doing so there. Falls back to copying (False) if the env's
    buffers are not the base class's usual ones."""
    return adopt_output_buffers(env, views["obs"], views["reward"], views["flags"],
                                views["terminated"], views["truncated"])


def write_out(views: dict[str, np.ndarray], out: StepOut) -> None:
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


class Shard:
    """A ``BatchEnv`` over ``num_rows`` rows, run inside a worker (or the driver)."""

    def __init__(self, env_cls: type[BatchEnv], num_rows: int, env_kwargs: dict[str, Any]
                 ) -> None:
        self.env = env_cls(num_rows, copy=False, validate=False, **env_kwargs)
        self.obs: np.ndarray | None = None  # the latest observation (a view of env buffers)
        self.policy: Any = None
        self._own: dict[str, np.ndarray] | None = None  # trajectories, when it holds them
        self._check = action_checker(self.env.single_action_space, num_rows,
                                      self.env.box_action_bounds)
        #: asked every ``CHECK_SECONDS`` of a rollout (a process worker's: is the driver's
        #: end of the pipe closed?): True stops it with :class:`DriverGone`, so that a
        #: killed driver's workers do not run a long rollout to its end
        self.driver_gone: Callable[[], bool] | None = None

    def run(self, cmd: str, arg: Any, views: dict[str, np.ndarray]) -> Any:
        """Run a command whose outputs land in ``views`` (this shard's rows of the batch
        arrays, :func:`rows`) and return the reply: a step's or reset's info, ``collect``'s
        (info, side), or the command's result. Every transport serves through this: the
        process worker, the Ray actor and the driver's own shard (``local_shard``); they
        only carry the command and the outputs.

        ``collect``'s ``arg`` is (policy or ``None``, steps, trajectories): this shard's
        rows of the trajectory arrays (``rows(..., axis=1)``), or ``None`` when the shard
        keeps its own and returns them (a Ray actor on another node)."""
        if cmd == "step":
            out = self.step(views["actions"])
        elif cmd == "reset":
            out = self.reset(*arg)
        elif cmd == "set_state":
            out = self.set_state(*arg)
        elif cmd == "collect":
            out, side = self.collect(*arg)
            write_out(views, out)
            return out.info, side
        elif cmd == "get_state":
            return self.env.get_state()
        elif cmd == "render":
            return self.env.render()
        elif cmd == "call":
            name, args, kwargs = arg
            return self.env.call(name, *args, **kwargs)
        elif cmd == "set_attr":
            return self.env.set_attr(*arg)
        else:
            raise ValueError(f"unknown command {cmd!r}")
        write_out(views, out)
        return out.info

    def reset(self, seed: Any, mask: np.ndarray | None) -> StepOut:
        options = None if mask is None else {"reset_mask": mask}
        self.obs, info = self.env.reset(seed=seed, options=options)
        return StepOut(self.obs, info=split_info(info)[2])

    def step(self, actions: np.ndarray) -> StepOut:
        self.obs, reward, terminated, truncated, info = self.env.step(actions)
        final_rows, final, rest = split_info(info) if info else (None, None, None)
        return StepOut(self.obs, reward, terminated, truncated, final_rows, final, rest)

    def set_state(self, states: np.ndarray, mask: np.ndarray | None) -> StepOut:
        self.obs = self.env.set_state(states, mask)
        return StepOut(self.obs)

    def collect(self, policy: Any, steps: int, out: dict[str, np.ndarray] | None
                ) -> tuple[StepOut, dict[str, Any]]:
        """Step ``steps`` times with ``policy`` (``None``: the last one sent), writing into
        ``out`` (this shard's rows of the trajectory arrays; ``None``: its own, reused
        while ``steps`` is unchanged). Returns the last step's outputs and what is not in
        ``out``: the final observations as (t, local row, obs), the policy's extras, and
        (``out`` was ``None``) the shard's own trajectory arrays as ``"out"``."""
        self._take_policy(policy)
        side: dict[str, Any] = {}
        if out is None:
            side["out"] = self._own_trajectories(steps)
            out = rows(side["out"], 0, self.env.num_envs, axis=1)
        finals: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        extras: dict[str, list] = {}
        last = None
        next_check = time.monotonic() + CHECK_SECONDS
        for t in range(steps):
            next_check = self._watch_driver(next_check)
            out["obs"][t] = self.obs
            actions = self._act(extras)
            out["actions"][t] = actions
            last = self.step(actions)
            out["rewards"][t] = last.reward
            out["terminated"][t] = last.terminated
            out["truncated"][t] = last.truncated
            if last.final_rows is not None and last.final_obs is not None:
                finals.append((np.full(len(last.final_rows), t), last.final_rows,
                               last.final_obs))
        assert last is not None  # steps >= 1
        side["extras"] = {k: np.stack(v) for k, v in extras.items()}
        if finals:
            final_t, final_rows, final_obs = zip(*finals)
            side["final"] = (np.concatenate(final_t), np.concatenate(final_rows),
                             np.concatenate(final_obs))
        return last, side

    def _take_policy(self, policy: Any) -> None:
        """Hold ``policy`` (``None``: keep the one held); refuse a rollout without one, or
        before a reset."""
        if policy is not None:
            self.policy = policy
        if self.policy is None:
            raise ValueError("collect: no policy given and none held from an earlier call")
        if self.obs is None:
            raise ValueError("collect() called before reset(): call reset() first")

    def _own_trajectories(self, steps: int) -> dict[str, np.ndarray]:
        """The shard's own trajectory arrays of ``steps`` steps (reused while ``steps`` is
        unchanged)."""
        if self._own is None or len(self._own["obs"]) != steps:
            self._own = {key: np.empty(shape, dtype) for key, (shape, dtype)
                         in trajectory_layout(self.env, steps, self.env.num_envs).items()}
        return self._own

    def _watch_driver(self, next_check: float) -> float:
        """Past ``next_check``, ask ``driver_gone`` (:class:`DriverGone` if it is); returns
        the time of the next question."""
        if self.driver_gone is None or time.monotonic() <= next_check:
            return next_check
        if self.driver_gone():
            raise DriverGone("the driver is gone: rollout abandoned")
        return time.monotonic() + CHECK_SECONDS

    def _act(self, extras: dict[str, list]) -> np.ndarray:
        """The policy's actions for the latest observation, checked; what it returned
        besides them (``(actions, extras)``) appended to ``extras``."""
        chosen = self.policy(self.obs)
        if isinstance(chosen, tuple):
            chosen, more = chosen
            for key, value in more.items():
                extras.setdefault(key, []).append(np.asarray(value))
        return self._check(chosen)
