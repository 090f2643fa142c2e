"""``check_env``: the BatchEnv contract, run on any env (ours are held to the same one).

Each check is a small function of a :class:`_Context` (how to make the env, a seed, a
number of steps); :func:`check_env` runs every check, collects *every* failure with the
method to look at and a hint, and raises :class:`ContractError` listing them, or returns a
:class:`ContractReport`. Envs made here are BatchEnvs in debug mode (:mod:`batchenv.debug`),
so a kernel that breaks a rule is named by the first check that calls it.

No pytest needed; :func:`contract_checks` gives one callable per check for
``pytest.mark.parametrize``.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
import pickle
import random
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers import vector as vw

from batchenv.core import BatchEnv, ClosedEnvError, StepBeforeResetError, enable_debug
from batchenv.debug import KERNELS, KernelError
from batchenv.testing import two_forms
from batchenv.testing._findings import _Fail

__all__ = ["check_env", "contract_checks", "ContractError", "ContractReport", "ContractCheck",
           "CHECKS"]

_MESSAGE_CHARS = 700  # of an unexpected error's message, in a failure


# ---------------------------------------------------------------------- results
@dataclass(frozen=True)
class Failure:
    """One failed check: what was checked, the method to look at, a hint, what happened."""

    check: str
    method: str
    hint: str
    message: str
    #: The exception the check caught (a kernel's own error), None for a check's finding.
    error: BaseException | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return (f"- {self.check}: look at {self.method}\n"
                f"    {_indent(self.message)}\n    hint: {self.hint}")


class ContractError(AssertionError):
    """``check_env`` found problems; ``failures`` lists every failed check."""

    def __init__(self, env_name: str, failures: list[Failure], total: int) -> None:
        self.failures = failures
        lines = [f"{env_name} failed {len(failures)} of {total} contract checks:"]
        first: dict[str, str] = {}  # message -> the check that reported it first
        for f in failures:
            if f.message in first:
                lines.append(f"- {f.check}: the same as {first[f.message]}")
            else:
                first[f.message] = f.check
                lines.append(str(f))
        super().__init__("\n".join(lines))


@dataclass
class ContractReport:
    """What ``check_env`` checked, on success."""

    env: str
    passed: list[str]
    skipped: dict[str, str] = field(default_factory=dict)  # what -> why not
    seconds: float = 0.0

    def __str__(self) -> str:
        lines = [f"{self.env}: {len(self.passed)} contract checks passed in "
                 f"{self.seconds:.1f} s ({', '.join(self.passed)})"]
        lines += [f"  not applicable: {what}: {why}" for what, why in self.skipped.items()]
        return "\n".join(lines)


def _indent(text: str) -> str:
    return text.replace("\n", "\n    ")


# ---------------------------------------------------------------------- making the env
class _Context:
    """How to make the env under test, and the run's parameters."""

    def __init__(self, env: Any, num_envs: int, seed: int, steps: int) -> None:
        if isinstance(env, BatchEnv):
            raise TypeError("check_env needs to make envs of several sizes and modes: pass the "
                            "class (MyEnv), a callable num_envs -> VectorEnv, or a registered "
                            "id, not an instance")
        if not (isinstance(env, str) or callable(env)):
            raise TypeError(f"env must be a BatchEnv subclass, a callable num_envs -> "
                            f"VectorEnv or a registered id, got {type(env).__name__}")
        if isinstance(env, str):
            try:
                gym.spec(env)  # an unknown id is one error, not every check failing alike
            except gym.error.Error as e:
                raise ValueError(f"env: {env!r} is not a registered id ({e}); pass a "
                                 f"registered id, a BatchEnv subclass or a callable "
                                 f"num_envs -> VectorEnv") from e
        if num_envs < 4:
            raise ValueError(f"num_envs must be >= 4 (masks and bounds use 4 rows), "
                             f"got {num_envs}")
        self.env, self.num_envs, self.seed, self.steps = env, num_envs, seed, steps
        self.horizon = max(5, steps // 4)  # time limit: every env ends episodes in a run
        self.skipped: dict[str, str] = {}
        self.name = env if isinstance(env, str) else getattr(env, "__name__", repr(env))

    def make(self, num_envs: int, mode: AutoresetMode = AutoresetMode.NEXT_STEP,
             horizon: int | None = None) -> Any:
        horizon = self.horizon if horizon is None else horizon
        env = self.env
        if isinstance(env, type) and issubclass(env, BatchEnv):
            return env(num_envs, autoreset_mode=mode, max_episode_steps=horizon, debug=True)
        if isinstance(env, str):
            return gym.make_vec(env, num_envs=num_envs, vectorization_mode="vector_entry_point",
                                autoreset_mode=mode, max_episode_steps=horizon, debug=True)
        made = env(num_envs)
        inner = made.unwrapped
        if self.name == "<lambda>":  # name the env in messages by what the factory makes
            self.name = f"<lambda> making {type(inner).__name__}"
        if not isinstance(inner, BatchEnv):
            raise _Fail("the factory", f"the factory returned {type(inner).__name__}, not a "
                        f"BatchEnv (check_env checks BatchEnvs)", "return a BatchEnv "
                        "(optionally wrapped)")
        inner.autoreset_mode = mode  # a fresh env, not reset yet: safe to reconfigure
        setattr(inner, "metadata", {**inner.metadata, "autoreset_mode": mode})  # noqa: B010
        inner.max_episode_steps = horizon
        if not inner.debug:
            enable_debug(inner)
        return made

    def actions(self, env: VectorEnv, steps: int, seed: int = 0) -> list[np.ndarray]:
        """A fixed sequence of valid batched actions, covering a bounded Box's extremes."""
        space = env.action_space
        space.seed(seed)
        out = [np.asarray(space.sample()) for _ in range(steps)]
        single = env.single_action_space
        if isinstance(single, spaces.Box) and single.is_bounded() and steps > 2:
            shape = out[0].shape
            out[1] = np.broadcast_to(single.low, shape).copy()
            out[2] = np.broadcast_to(single.high, shape).copy()
        return out


def _rollout(env: VectorEnv, actions: list[np.ndarray]) -> list[tuple[np.ndarray, ...]]:
    return [tuple(np.copy(x) for x in env.step(a)[:4]) for a in actions]


def _same(a: Any, b: Any) -> bool:
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind
                          in "fc")


def _first_difference(a: list, b: list, what: str) -> str | None:
    """Where two rollouts first differ ("obs differs at step 3, env indices [1]")."""
    for t, (x, y) in enumerate(zip(a, b)):
        for name, u, v in zip(("obs", "reward", "terminated", "truncated"), x, y):
            if not _same(u, v):
                u, v = np.asarray(u), np.asarray(v)
                rows = ""
                if u.shape == v.shape and u.ndim >= 1:
                    bad = (u != v).reshape(len(u), -1).any(axis=1)
                    rows = f", env indices {np.flatnonzero(bad)[:10].tolist()}"
                return f"{what}: {name} differs at step {t}{rows}"
    return None


def _records_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _state_diff(a: np.ndarray, b: np.ndarray) -> str:
    """Which fields and rows differ between two get_state() snapshots."""
    parts = []
    for name in a.dtype.names or ():
        x = np.ascontiguousarray(a[name]).view(np.uint8).reshape(len(a), -1)
        y = np.ascontiguousarray(b[name]).view(np.uint8).reshape(len(b), -1)
        rows = np.flatnonzero((x != y).any(axis=1))
        if len(rows):
            parts.append(f"{name} at env indices {rows[:10].tolist()}")
    return "; ".join(parts) or "(no field differs)"


# ---------------------------------------------------------------------- the checks
def check_api(c: _Context) -> None:
    """reset/step return Gymnasium's tuples; observations inside the space, with the space's
    dtype and shape, at every step; rewards of the env's ``reward_dtype``, bool flags; the env
    closes."""
    n = c.num_envs
    env = c.make(n)
    obs, info = env.reset(seed=c.seed)
    if not isinstance(info, dict):
        raise _Fail("reset", f"reset returned info of type {type(info).__name__}, not a dict")
    for t, a in enumerate([None, *c.actions(env, c.steps)]):
        if a is not None:
            obs = _checked_step(env, a, t, n)
        _check_observation_form(env, obs, t, n)
    env.close()
    if not getattr(env, "closed", False):
        raise _Fail("close", "env.closed is not True after close()")


def _checked_step(env: VectorEnv, a: Any, t: int, n: int) -> np.ndarray:
    """Step ``env`` with ``a``: five values, rewards and flags of the right shape and dtype
    (rewards finite); the observation."""
    result = env.step(a)
    if len(result) != 5:
        raise _Fail("step", f"step returned {len(result)} values, not 5")
    obs, reward, terminated, truncated, _ = result
    want = np.dtype(getattr(env, "reward_dtype", np.float32))  # the constructor's
    if reward.shape != (n,) or reward.dtype != want:
        raise _Fail("step_envs", f"reward at step {t} has shape {reward.shape} and "
                    f"dtype {reward.dtype}; expected ({n},) {want}")
    if not np.isfinite(reward).all():
        raise _Fail("step_envs", f"NaN or inf reward at step {t}, env indices "
                    f"{np.flatnonzero(~np.isfinite(reward))[:10].tolist()}")
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if flag.shape != (n,) or flag.dtype != np.bool_:
            raise _Fail("step_envs", f"{name} at step {t} has shape {flag.shape} and "
                        f"dtype {flag.dtype}; expected ({n},) bool")
    return obs


def _check_observation_form(env: Any, obs: Any, t: int, n: int) -> None:
    """``obs`` (step ``t``'s) is an array of the space's shape and dtype, inside the space."""
    single = env.single_observation_space
    expected = (n, *single.shape)
    if not isinstance(obs, np.ndarray) or obs.shape != expected or obs.dtype != single.dtype:
        raise _Fail("observe", f"observation at step {t} has shape {np.shape(obs)} and "
                    f"dtype {getattr(obs, 'dtype', None)}; expected {expected} "
                    f"{single.dtype}")
    if obs not in env.observation_space:
        raise _Fail("observe", f"observation at step {t} is outside "
                    f"observation_space ({single} per env)")


def check_reproducible(c: _Context) -> None:
    """The same seed gives the same trajectory (with numpy's and Python's global random
    states disturbed between the runs: this is what catches ``np.random`` in a kernel)."""
    actions = c.actions(c.make(c.num_envs), c.steps)
    runs = []
    for disturb in (1, 2):
        np.random.seed(disturb)
        random.seed(disturb)
        env = c.make(c.num_envs)
        first = env.reset(seed=c.seed)[0]
        runs.append(([(first,)], _rollout(env, actions), env.unwrapped.get_state()))
    if not _same(runs[0][0][0][0], runs[1][0][0][0]):
        raise _Fail("reset_envs", "reset(seed=...) twice with one seed gave different "
                    "observations")
    diff = _first_difference(runs[0][1], runs[1][1], "two runs with one seed")
    if diff:
        raise _Fail("step_envs", diff)
    if not _records_equal(runs[0][2], runs[1][2]):
        raise _Fail("step_envs", f"two runs with one seed end in different states: "
                    f"{_state_diff(runs[0][2], runs[1][2])}")


def check_batch_independence(c: _Context) -> None:
    """Row i of a batch seeded s equals a batch of one seeded s + i (each row's stream
    depends on its own seed only), and a batch seeded with the list of those seeds reversed
    holds the same envs in reverse order."""
    n, s = c.num_envs, c.seed
    big = c.make(n)
    actions = c.actions(big, c.steps)
    big_obs = big.reset(seed=s)[0]
    big_run = _rollout(big, actions)
    for i in range(n):
        one = c.make(1)
        one_obs = one.reset(seed=s + i)[0]
        if not _same(one_obs[0], big_obs[i]):
            raise _Fail("reset_envs", f"env {i} of a batch seeded {s} starts differently from "
                        f"a batch of one seeded {s + i}")
        diff = _first_difference(_rollout(one, [a[i:i + 1] for a in actions]),
                                 [tuple(x[i:i + 1] for x in step) for step in big_run],
                                 f"env {i} of a batch seeded {s} vs a batch of one seeded "
                                 f"{s + i}")
        if diff:
            raise _Fail("step_envs", diff + " (rows must not depend on each other)")
    rev = c.make(n)
    rev_obs = rev.reset(seed=[s + n - 1 - i for i in range(n)])[0]
    if not _same(rev_obs[::-1], big_obs):
        raise _Fail("reset_envs", "a batch seeded with the list of seeds reversed does not "
                    "start with the same envs in reverse order")


def check_autoreset_next_step(c: _Context) -> None:
    """NEXT_STEP (Gymnasium's table): the step after an episode ends resets that env,
    ignoring its action: reward 0, both flags False, a new episode (elapsed_steps 0) whose
    start state is what a masked reset of that row gives from the same state."""
    n, horizon = c.num_envs, 5
    env = c.make(n, AutoresetMode.NEXT_STEP, horizon)
    twin = c.make(n, AutoresetMode.NEXT_STEP, horizon)
    env.reset(seed=c.seed)
    twin.reset(seed=c.seed)
    done = np.zeros(n, dtype=bool)
    resets = 0
    for t, a in enumerate(c.actions(env, 3 * horizon)):
        pending = env.unwrapped.get_state()
        obs, reward, terminated, truncated, _ = env.step(a)
        if done.any():
            resets += int(done.sum())
            if (reward[done] != 0).any() or terminated[done].any() or truncated[done].any():
                raise _Fail("step", f"step {t}: the auto-reset step must give reward 0 and "
                            f"both flags False (env indices {np.flatnonzero(done).tolist()})")
            if (env.unwrapped.get_state()["elapsed_steps"][done] != 0).any():
                raise _Fail("step", f"step {t}: the auto-reset step must start new episodes")
            twin.unwrapped.set_state(pending)
            start, _ = twin.reset(options={"reset_mask": done})
            if not _same(obs[done], start[done]):
                raise _Fail("reset_rows", f"step {t}: the auto-reset step's observations are "
                            f"not the start states a masked reset gives from the same state "
                            f"(env indices {np.flatnonzero(done).tolist()})")
        done = terminated | truncated
    if resets < n:
        raise _Fail("step", f"only {resets} auto-resets in {3 * horizon} steps with "
                    f"max_episode_steps={horizon} (truncated must be set at the time limit)")


def check_autoreset_same_step(c: _Context) -> None:
    """SAME_STEP (Gymnasium's table): rewards and flags as NEXT_STEP's, the ending step
    returns the new episode's first observation and the last one in info["final_obs"]."""
    n = c.num_envs
    same = c.make(n, AutoresetMode.SAME_STEP)
    nxt = c.make(n, AutoresetMode.NEXT_STEP)
    same.reset(seed=c.seed)
    nxt.reset(seed=c.seed)
    finished = 0
    for t, a in enumerate(c.actions(same, c.horizon + 2)):
        o1, r1, te1, tr1, info = same.step(a)
        o2, r2, te2, tr2, _ = nxt.step(a)
        if not (_same(r1, r2) and _same(te1, te2) and _same(tr1, tr2)):
            raise _Fail("step", f"step {t}: SAME_STEP and NEXT_STEP disagree on rewards or flags")
        done = te1 | tr1
        if done.any():
            finished += int(done.sum())
            if not _same(info.get("_final_obs"), done):
                raise _Fail("step", f"step {t}: info['_final_obs'] is not terminated | truncated")
            for i in np.flatnonzero(done):
                if info["final_obs"][i] not in same.single_observation_space:
                    raise _Fail("observe", f"step {t}: info['final_obs'][{i}] is outside "
                                f"single_observation_space")
                if not _same(info["final_obs"][i], o2[i]):
                    raise _Fail("observe", f"step {t}: info['final_obs'][{i}] is not the "
                                f"episode's last observation")
            started, _ = nxt.reset(options={"reset_mask": done})  # the twin, in lockstep
            if not _same(o1[done], started[done]):
                raise _Fail("reset_rows", f"step {t}: the new episodes' first observations "
                            f"differ from a masked reset's")
        if not _same(o1[~done], o2[~done]):
            raise _Fail("step", f"step {t}: SAME_STEP and NEXT_STEP observations differ for "
                        f"envs whose episode goes on")
    if finished < n:
        raise _Fail("step", f"only {finished} episodes ended in {c.horizon + 2} steps with "
                    f"max_episode_steps={c.horizon}")


def check_autoreset_disabled(c: _Context) -> None:
    """DISABLED (Gymnasium's table): an env whose episode ended stands still (reward 0,
    flags False, state unchanged) until reset(options={"reset_mask": ...})."""
    n = c.num_envs
    env = c.make(n, AutoresetMode.DISABLED)
    env.reset(seed=c.seed)
    finished = np.zeros(n, dtype=bool)
    for t, a in enumerate(c.actions(env, c.horizon + 5)):
        _, reward, terminated, truncated, _ = env.step(a)
        done = terminated | truncated
        if (finished & done).any():
            raise _Fail("step", f"step {t}: an env finished twice without a reset")
        if (reward[finished] != 0).any():
            raise _Fail("step", f"step {t}: a finished env got a non-zero reward")
        finished |= done
    if not finished.all():
        raise _Fail("step", "not every env finished within the time limit")
    frozen = env.unwrapped.get_state()
    env.step(c.actions(env, 1)[0])
    now = env.unwrapped.get_state()
    if not _records_equal(now, frozen):
        raise _Fail("step_envs", f"finished envs changed: {_state_diff(frozen, now)}")
    mask = np.zeros(n, dtype=bool)
    mask[1] = True
    env.reset(options={"reset_mask": mask})
    _, reward, terminated, truncated, _ = env.step(c.actions(env, 1)[0])
    if (reward[~mask] != 0).any():
        raise _Fail("step", "envs not in the reset mask must stay frozen")


def check_reset_mask(c: _Context) -> None:
    """reset(seed, options={"reset_mask": m}) resets and reseeds only the masked envs; the
    others stay bit-identical (state and observation); a masked env equals a fresh batch of
    one seeded seed + i."""
    n = c.num_envs
    env = c.make(n)
    env.reset(seed=c.seed)
    obs_before = _rollout(env, c.actions(env, 5))[-1][0]
    before = env.unwrapped.get_state()
    mask = np.zeros(n, dtype=bool)
    mask[[1, 2]] = True
    obs, _ = env.reset(seed=100, options={"reset_mask": mask})
    if mask.sum() != 2:
        raise _Fail("reset", "reset changed the mask it was given")
    after = env.unwrapped.get_state()
    if not _records_equal(after[~mask], before[~mask]):
        raise _Fail("reset_rows", f"a masked reset changed envs outside the mask: "
                    f"{_state_diff(before[~mask], after[~mask])}")
    if not _same(obs[~mask], obs_before[~mask]):
        raise _Fail("observe", "a masked reset changed the observations of envs outside the "
                    "mask")
    fresh = c.make(1)
    fresh.reset(seed=101)
    if not _records_equal(after[1:2], fresh.unwrapped.get_state()):
        raise _Fail("reset_envs / reset_rows", f"env 1 reset with seed 100 (+1) differs from a "
                    f"fresh batch of one seeded 101: "
                    f"{_state_diff(after[1:2], fresh.unwrapped.get_state())}",
                    "write every field of every row you are given (a field left unwritten "
                    "keeps the row's old value), from that row's rng draws alone")


def check_state_round_trip(c: _Context) -> None:
    """get_state mid-episode, run on, set_state, run again: the same trajectory, in each
    auto-reset mode; set_state with a mask changes only the masked envs."""
    n = c.num_envs
    for mode in AutoresetMode:
        env = c.make(n, mode)
        env.reset(seed=c.seed)
        actions = c.actions(env, 2 * c.horizon, seed=1)
        _rollout(env, actions[:c.horizon // 2 + 3])
        snapshot = env.unwrapped.get_state()
        first = _rollout(env, actions)
        env.unwrapped.set_state(snapshot)
        diff = _first_difference(first, _rollout(env, actions),
                                 f"{mode.name}: replay after set_state(get_state())")
        if diff:
            raise _Fail("get_state / set_state", diff + " (is all of the env's state in "
                        "state_dtype? kernels must keep nothing between steps elsewhere)")
    env = c.make(n)
    env.reset(seed=c.seed)
    start = env.unwrapped.get_state()
    _rollout(env, c.actions(env, 11))
    moved = env.unwrapped.get_state()
    mask = np.zeros(n, dtype=bool)
    mask[[0, 2]] = True
    env.unwrapped.set_state(start[mask], mask=mask)
    now = env.unwrapped.get_state()
    if not (_records_equal(now[mask], start[mask]) and _records_equal(now[~mask], moved[~mask])):
        raise _Fail("set_state", "set_state with a mask must change exactly the masked envs")


def check_fresh_env_round_trip(c: _Context) -> None:
    """The state taken at an odd step, set into a *fresh* env (made and reset, never
    stepped), continues exactly as the original: what a kernel keeps on ``self`` between
    steps (a step counter, a parity, a cache) is not in the state and does not travel."""
    n = c.num_envs
    env = c.make(n)
    env.reset(seed=c.seed)
    actions = c.actions(env, 2 * c.horizon + 7, seed=4)
    _rollout(env, actions[:7])  # an odd step: a parity kept on self differs from a fresh one
    snapshot = env.unwrapped.get_state()
    fresh = c.make(n)
    fresh.reset(seed=c.seed + 1)
    fresh.unwrapped.set_state(snapshot)
    diff = _first_difference(_rollout(env, actions[7:]), _rollout(fresh, actions[7:]),
                             "a fresh env given the state at step 7 vs the original")
    if diff:
        raise _Fail("step_envs / observe", diff)


def check_staggered_episodes(c: _Context) -> None:
    """Episodes that end at different steps: env i of a batch gets a masked reset at step i
    (the others stay mid-episode), so time limits and auto-resets come row by row; each row
    must equal a batch of one seeded seed + i reset at the same step, in NEXT_STEP and
    SAME_STEP mode (``final_obs`` included). A kernel that sizes an array by ``num_envs``
    (observe on the rows that just ended) or keeps per-env state on ``self`` fails here."""
    n, s = c.num_envs, c.seed
    for mode in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        big = c.make(n, mode)
        big.reset(seed=s)
        ones = [c.make(1, mode) for _ in range(n)]
        for i, one in enumerate(ones):
            one.reset(seed=s + i)
        for t, a in enumerate(c.actions(big, c.horizon + n + 2, seed=5)):
            if t < n:
                mask = np.zeros(n, dtype=bool)
                mask[t] = True
                obs, _ = big.reset(options={"reset_mask": mask})
                one_obs, _ = ones[t].reset(options={"reset_mask": np.ones(1, dtype=bool)})
                if not _same(obs[t], one_obs[0]):
                    raise _Fail("reset_rows", f"{mode.name}: a masked reset of env {t} at step "
                                f"{t} starts differently from a batch of one seeded {s + t}")
            big_out = big.step(a)
            for i, one in enumerate(ones):
                one_out = one.step(a[i:i + 1])
                for name, u, v in zip(("obs", "reward", "terminated", "truncated"),
                                      big_out[:4], one_out[:4]):
                    if not _same(u[i], v[0]):
                        raise _Fail("step_envs", f"{mode.name}, episodes ending at different "
                                    f"steps: {name} of env {i} differs at step {t} from a "
                                    f"batch of one seeded {s + i} and reset at the same step")
                if mode is AutoresetMode.SAME_STEP and one_out[4].get("_final_obs", [False])[0]:
                    if not _same(big_out[4]["final_obs"][i], one_out[4]["final_obs"][0]):
                        raise _Fail("observe", f"SAME_STEP, episodes ending at different "
                                    f"steps: info['final_obs'][{i}] differs at step {t} from "
                                    f"a batch of one's")


def check_copies(c: _Context) -> None:
    """A pickled (and a deep-copied) env continues exactly as the original."""
    for how in ("pickle", "deepcopy"):
        env = c.make(c.num_envs)
        env.reset(seed=c.seed)
        actions = c.actions(env, 2 * c.horizon, seed=3)
        _rollout(env, actions[:13])
        twin = pickle.loads(pickle.dumps(env)) if how == "pickle" else copy.deepcopy(env)
        diff = _first_difference(_rollout(env, actions), _rollout(twin, actions),
                                 f"the env and its {how} copy")
        if diff:
            raise _Fail("__getstate__/__setstate__", diff)


def check_set_state_values(c: _Context) -> None:
    """set_state rejects NaN/inf in float fields (ValueError naming the env) and changes
    nothing."""
    env = c.make(c.num_envs)
    env.reset(seed=c.seed)
    before = env.unwrapped.get_state()
    floats = [n for n in env.unwrapped.state_dtype.names
              if env.unwrapped.state_dtype[n].kind == "f"]
    if not floats:
        c.skipped["set_state_values"] = "no float state fields"
        return
    bad = before.copy()
    bad[floats[0]][3] = np.nan
    try:
        env.unwrapped.set_state(bad)
    except ValueError as e:
        if "[3]" not in str(e):
            raise _Fail("set_state", f"the error does not name env index [3]: {e}") from None
    else:
        raise _Fail("set_state", f"set_state accepted NaN in field {floats[0]!r}")
    if not _records_equal(env.unwrapped.get_state(), before):
        raise _Fail("set_state", "a rejected set_state changed the state")


def check_actions_unchanged(c: _Context) -> None:
    """The caller's action array is never changed by a step."""
    env = c.make(c.num_envs)
    env.reset(seed=c.seed)
    for t, a in enumerate(c.actions(env, c.horizon)):
        a = np.array(a)
        kept = a.copy()
        env.step(a)
        if not _same(a, kept):
            raise _Fail("step_envs", f"step {t} changed the caller's action array")


def check_box_action_bounds(c: _Context) -> None:
    """Box actions outside the bounds, for the env's ``box_action_bounds``: ``"clip"`` hands
    the kernel exactly ``np.clip(a, low, high)`` (and steps as the clipped actions do),
    ``"raise"`` raises ValueError naming the envs and changes nothing, ``"pass"`` hands the
    kernel ``a`` unchanged."""
    env = c.make(c.num_envs)
    single = env.single_action_space
    if not isinstance(single, spaces.Box):
        c.skipped["box_action_bounds"] = f"the action space is {type(single).__name__}"
        return
    if single.dtype.kind != "f" or not single.is_bounded():
        c.skipped["box_action_bounds"] = "the Box is not float and bounded on both sides"
        return
    policy = env.unwrapped.box_action_bounds
    env.reset(seed=c.seed)
    a = np.array(c.actions(env, 3)[0], dtype=single.dtype)
    width = (single.high - single.low).astype(single.dtype)
    a[0] = single.low - width - 1  # every entry below
    a[1] = single.high + width + 1  # every entry above
    a[2].flat[0] = single.low.flat[0] - 1  # one entry below
    seen: list[np.ndarray] = []
    inner = env.unwrapped
    form = inner.kernel_form  # (debug mode's: it steps through step_envs, for every form)
    kernel = form.step_envs

    def recording(env: Any, s: Any, act: np.ndarray, rng: Any) -> Any:
        seen.append(np.array(act))
        return kernel(env, s, act, rng)

    form.step_envs = recording
    before = env.unwrapped.get_state()
    try:
        if policy == "raise":
            try:
                env.step(a)
            except ValueError as e:
                if "[0, 1, 2]" not in str(e):
                    raise _Fail("step", f"the error does not name env indices [0, 1, 2]: "
                                f"{e}") from None
            else:
                raise _Fail("step", "box_action_bounds='raise' but out-of-bounds actions "
                            "were accepted")
            if not _records_equal(env.unwrapped.get_state(), before):
                raise _Fail("step", "a rejected step changed the state")
            return
        env.step(a)
        expected = np.clip(a, single.low, single.high) if policy == "clip" else a
        if not seen or not _same(seen[-1], expected):
            raise _Fail("step", f"box_action_bounds={policy!r}: the kernel did not receive "
                        f"{'np.clip(actions, low, high)' if policy == 'clip' else 'the actions'}"
                        f" exactly")
    finally:
        del form.step_envs
    if policy == "clip":  # out-of-bounds actions step as the clipped ones
        after = env.unwrapped.get_state()
        env.unwrapped.set_state(before)
        env.step(np.clip(a, single.low, single.high))
        if not _records_equal(env.unwrapped.get_state(), after):
            raise _Fail("step_envs", "out-of-bounds actions do not step as the clipped ones")


def _bad_actions(c: _Context, env: VectorEnv) -> list[tuple[str, Any, type[Exception], str]]:
    single, n = env.single_action_space, env.num_envs
    good = c.actions(env, 1)[0]
    cases: list[tuple[str, Any, type[Exception], str]] = [
        ("wrong shape", np.concatenate([good, good]), ValueError, "shape"),
        ("missing env", good[:-1], ValueError, "shape"),
        ("strings", np.array(["x"] * n), TypeError, "dtype"),
    ]
    if isinstance(single, spaces.Discrete):
        bad = good.copy()
        bad[2] = single.start + single.n
        cases += [("out of range", bad, ValueError, "[2]"),
                  ("negative", np.where(np.arange(n) == 1, single.start - 1, good), ValueError,
                   "[1]"),
                  ("floats", good.astype(np.float64), TypeError, "integer")]
    elif isinstance(single, spaces.MultiDiscrete):
        bad = good.copy()
        bad[2].flat[0] = (single.start + single.nvec).flat[0]
        cases += [("out of range", bad, ValueError, "[2]")]
    elif isinstance(single, spaces.Box):
        nan = good.astype(np.float64)
        nan[1].flat[0] = np.nan
        inf = good.astype(np.float64)
        inf[3].flat[0] = -np.inf
        cases += [("NaN", nan, ValueError, "[1]"), ("inf", inf, ValueError, "[3]")]
    return cases


def check_bad_inputs(c: _Context) -> None:
    """Bad actions, seeds and reset options raise (TypeError/ValueError naming the argument
    and the envs) and change nothing; step before reset and calls after close raise."""
    n = c.num_envs
    env = c.make(n)
    a = c.actions(env, 1)[0]
    try:
        env.step(a)
    except StepBeforeResetError:
        pass
    else:
        raise _Fail("step", "step before reset must raise StepBeforeResetError")
    env.reset(seed=c.seed)
    _rollout(env, c.actions(env, 4))
    before = env.unwrapped.get_state()
    for what, call, error, text in _bad_calls(c, env):
        _check_refused(what, call, error, text)
        if not _records_equal(env.unwrapped.get_state(), before):
            raise _Fail("step/reset", f"{what}: the rejected call changed the state: "
                        f"{_state_diff(before, env.unwrapped.get_state())}")
    env.close()
    _check_closed(env, a)
    env.close()  # closing twice is fine


def _bad_calls(c: _Context, env: VectorEnv
               ) -> list[tuple[str, Callable[[], Any], type[Exception], str]]:
    """Calls ``env`` must refuse: (what, the call, the error expected, text it must say)."""
    n = c.num_envs
    bad_seeds: list[tuple[Any, type[Exception]]] = [
        (-1, ValueError), (2**63, ValueError), (1.5, TypeError), (True, TypeError),
        ("7", TypeError), ([1, 2], ValueError), ([1, -2] + [None] * (n - 2), ValueError)]
    bad_options: list[tuple[Any, type[Exception]]] = [
        ({"reset_mask": [True] * n}, TypeError),
        ({"reset_mask": np.ones(n, dtype=np.int64)}, TypeError),
        ({"reset_mask": np.ones(n - 1, dtype=bool)}, ValueError),
        ({"reset_mask": np.zeros(n, dtype=bool)}, ValueError),
        ({"mask": np.ones(n, dtype=bool)}, ValueError),
        ("reset_mask", TypeError)]
    calls: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
        (f"actions: {what}", functools.partial(env.step, x), err, text)
        for what, x, err, text in _bad_actions(c, env)]
    calls += [(f"seed={s!r}", functools.partial(env.reset, seed=s), err, "seed")
              for s, err in bad_seeds]
    calls += [(f"options={o!r}", functools.partial(env.reset, options=o), err, "")
              for o, err in bad_options]
    return calls


def _check_refused(what: str, call: Callable[[], Any], error: type[Exception],
                   text: str) -> None:
    """``call`` raises ``error`` saying ``text`` (and "action", for an action)."""
    try:
        call()
    except error as e:
        if text not in str(e) or (what.startswith("actions") and "action" not in str(e)):
            raise _Fail("step/reset", f"{what}: the error does not say {text!r}: "
                        f"{e}") from None
    except Exception as e:  # noqa: BLE001 - reported as the failure it is
        raise _Fail("step/reset", f"{what}: raised {type(e).__name__} ({e}), expected "
                    f"{error.__name__}") from None
    else:
        raise _Fail("step/reset", f"{what} was accepted; expected {error.__name__}")


def _check_closed(env: Any, a: Any) -> None:
    """step, reset and get_state of the closed ``env`` raise ClosedEnvError."""
    for what, call in (("step", functools.partial(env.step, a)), ("reset", env.reset),
                       ("get_state", env.unwrapped.get_state)):
        try:
            call()
        except ClosedEnvError:
            pass
        else:
            raise _Fail("close", f"{what} after close must raise ClosedEnvError")


def check_render(c: _Context) -> None:
    """Each render mode gives one frame per env (rgb_array: uint8 (H, W, 3))."""
    modes = c.make(c.num_envs).metadata.get("render_modes", [])
    if not modes:
        c.skipped["render"] = "metadata['render_modes'] is empty"
        return
    for mode in modes:
        env = _with_render_mode(c, mode)
        if env is None:
            c.skipped[f"render {mode}"] = "a callable factory cannot be given render_mode"
            continue
        env.reset(seed=c.seed)
        env.step(c.actions(env, 1)[0])
        frames = env.render()
        if frames is None or len(frames) != c.num_envs:
            raise _Fail("render_envs", f"render_mode={mode!r}: expected {c.num_envs} frames")
        if mode == "rgb_array":
            for f in frames:
                f = np.asarray(f)
                if f.dtype != np.uint8 or f.ndim != 3 or f.shape[2] != 3:
                    raise _Fail("render_envs", f"rgb_array frames must be uint8 (H, W, 3), "
                                f"got {f.dtype} {f.shape}")


def _with_render_mode(c: _Context, mode: str) -> VectorEnv | None:
    if isinstance(c.env, type):
        return c.env(c.num_envs, render_mode=mode, debug=True)
    if isinstance(c.env, str):
        return gym.make_vec(c.env, num_envs=c.num_envs, vectorization_mode="vector_entry_point",
                            render_mode=mode, debug=True)
    return None


# ---------------------------------------------------------------------- wrappers
def _wrappers(env: VectorEnv) -> tuple[dict[str, Callable], dict[str, str]]:
    """Every gymnasium.wrappers.vector wrapper that applies to ``env``, and why each other
    does not."""
    obs, act = env.single_observation_space, env.single_action_space
    use: dict[str, Callable] = {
        "TransformReward": lambda e: vw.TransformReward(e, lambda r: 2 * r),
        "ClipReward": lambda e: vw.ClipReward(e, -0.5, 0.5),
        "NormalizeReward": vw.NormalizeReward,
        "DictInfoToList": vw.DictInfoToList,
        "RecordEpisodeStatistics": vw.RecordEpisodeStatistics,
        "VectorizeTransformReward": lambda e: vw.VectorizeTransformReward(
            e, gym.wrappers.TransformReward, func=lambda r: r),
    }
    why: dict[str, str] = {
        "FilterObservation": "needs a Dict observation space (BatchEnv observations are arrays)",
        "RecordVideo": "writes video files: check_env writes no files (render is checked)",
        "HumanRendering": "opens a window",
    }
    if isinstance(obs, spaces.Box):
        _box_observation_wrappers(obs, use, why)
    else:
        for name in ("TransformObservation", "NormalizeObservation", "DtypeObservation",
                     "FlattenObservation", "ReshapeObservation", "RescaleObservation",
                     "GrayscaleObservation", "ResizeObservation"):
            why[name] = f"needs a Box observation space, not {type(obs).__name__}"
    why["VectorizeTransformObservation"] = ("wraps one env per row: covered by "
                                            "TransformObservation")
    _action_wrappers(act, use, why)
    _conversion_wrappers(use, why)
    return use, why


def _box_observation_wrappers(obs: spaces.Box, use: dict[str, Callable],
                              why: dict[str, str]) -> None:
    """The observation wrappers of a Box observation space, into ``use`` or ``why``."""
    use.update({
        "TransformObservation": lambda e: vw.TransformObservation(e, lambda o: o * 2),
        "NormalizeObservation": vw.NormalizeObservation,
        "DtypeObservation": lambda e: vw.DtypeObservation(e, np.float64),
        "FlattenObservation": vw.FlattenObservation,
        "ReshapeObservation": lambda e: vw.ReshapeObservation(e, (int(np.prod(obs.shape)),)),
    })
    if int(np.prod(obs.shape)) == 1 and _scalar_from_one_element():
        del use["DtypeObservation"]
        why["DtypeObservation"] = (f"it casts each env's observation with np.float64(obs), "
                                   f"which numpy {np.__version__} turns into a scalar when "
                                   f"the observation has one element")
    if obs.dtype.kind != "f":
        why["RescaleObservation"] = (f"{obs.dtype} observations: it keeps the dtype, which "
                                     f"cannot hold [-2, 2] rescaled values (apply "
                                     f"DtypeObservation(float32) first)")
    elif not obs.is_bounded():
        why["RescaleObservation"] = "the observation Box is unbounded"
    else:
        use["RescaleObservation"] = lambda e: vw.RescaleObservation(e, -2.0, 2.0)
    _image_wrappers(obs, use, why)


@functools.cache
def _scalar_from_one_element() -> bool:
    """Whether this numpy's ``np.float64(array)`` returns a scalar for a one-element array
    (numpy 2.2 does, with a DeprecationWarning; 2.4 returns an array, which Gymnasium's
    DtypeObservation relies on)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.ndim(np.float64(np.zeros(1))) == 0


def _image_wrappers(obs: spaces.Box, use: dict[str, Callable], why: dict[str, str]) -> None:
    """GrayscaleObservation and ResizeObservation for a Box observation space."""
    rgb = obs.dtype == np.uint8 and len(obs.shape) == 3 and obs.shape[2] == 3
    if rgb and (obs.low == 0).all() and (obs.high == 255).all():
        use["GrayscaleObservation"] = vw.GrayscaleObservation
    elif rgb:  # a small (H, W, 3) uint8 grid of other values: not an image
        why["GrayscaleObservation"] = (
            f"needs RGB observations bounded 0 to 255; these (H, W, 3) uint8 ones are "
            f"bounded {obs.low.min()} to {obs.high.max()}, so they are not RGB images")
    else:
        why["GrayscaleObservation"] = "needs uint8 (H, W, 3) RGB observations"
    why["ResizeObservation"] = ("needs image observations and opencv" if len(obs.shape) >= 2
                                else "needs image observations")


def _action_wrappers(act: gym.Space, use: dict[str, Callable], why: dict[str, str]) -> None:
    """The action wrappers of the action space ``act``, into ``use`` or ``why``."""
    if isinstance(act, spaces.Box):
        use["ClipAction"] = vw.ClipAction
        use["TransformAction"] = lambda e: vw.TransformAction(e, lambda a: a)
        if act.is_bounded():
            use["RescaleAction"] = lambda e: vw.RescaleAction(e, -1.0, 1.0)
        else:
            why["RescaleAction"] = "the action Box is unbounded"
    else:
        for name in ("ClipAction", "TransformAction", "RescaleAction"):
            why[name] = f"needs a Box action space, not {type(act).__name__}"
    why["VectorizeTransformAction"] = "wraps one env per row: covered by TransformAction"


def _conversion_wrappers(use: dict[str, Callable], why: dict[str, str]) -> None:
    """The array-conversion wrappers (torch's when imported; jax's never), into ``use`` or
    ``why``."""
    if "torch" in sys.modules:
        use["NumpyToTorch"] = vw.NumpyToTorch
    elif importlib.util.find_spec("torch") is None:
        why["NumpyToTorch"] = "torch is not installed"
    else:
        why["NumpyToTorch"] = ("torch is not imported (importing it takes seconds): import it "
                               "before check_env to include this wrapper")
    for name in ("ArrayConversion", "JaxToNumpy", "JaxToTorch"):
        why[name] = "needs jax (an env computing with jax arrays)"


_GYMNASIUM_DIR = os.path.dirname(gym.__file__)


def check_wrappers(c: _Context) -> None:
    """Every gymnasium.wrappers.vector wrapper that applies wraps the env and steps it,
    leaving the episode structure (flags) alone and observations inside its space.
    Warnings that Gymnasium's own code raises meanwhile (a wrapper's Box lowering float64
    bounds to float32, ...) concern the wrappers, not the env: they are not passed on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _check_wrappers(c)
    for w in caught:
        if not os.path.abspath(w.filename).startswith(_GYMNASIUM_DIR + os.sep):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _check_wrappers(c: _Context) -> None:
    n = c.num_envs
    use, why = _wrappers(c.make(n))
    for name, reason in why.items():
        c.skipped[f"wrapper {name}"] = reason
    for name, wrap in use.items():
        # the factory's own wrappers may clash with this one; they stay referenced while the
        # env runs, since Gymnasium < 1.4 closes a vector env (wrappers too) when collected
        made = c.make(n)
        env = wrap(made.unwrapped)
        raw = c.make(n)
        env.reset(seed=c.seed)
        raw.reset(seed=c.seed)
        actions = c.actions(raw, c.horizon + 2)
        if name == "NumpyToTorch":
            _check_torch_outputs(env, actions, n)
            continue
        reward, raw_reward, info = _check_wrapped_steps(name, env, raw, actions, n)
        if name == "TransformReward" and not _same(reward, 2 * raw_reward):
            raise _Fail("step", f"{name}: rewards were not transformed")
        if name == "DictInfoToList" and not (isinstance(info, list) and len(info) == n):
            raise _Fail("step", f"{name}: info is not a list of {n} dicts")
        env.close()


def _check_torch_outputs(env: VectorEnv, actions: list[Any], n: int) -> None:
    """NumpyToTorch: a few steps give a tensor observation and ``n`` rewards."""
    import torch

    for a in actions[:3]:
        obs, reward, *_ = env.step(torch.as_tensor(a))
        if not isinstance(obs, torch.Tensor) or reward.shape != (n,):
            raise _Fail("the env's spaces", "NumpyToTorch: bad outputs")


def _check_wrapped_steps(name: str, env: VectorEnv, raw: VectorEnv, actions: list[Any],
                         n: int) -> tuple[Any, Any, Any]:
    """Step the wrapped ``env`` and the unwrapped ``raw`` side by side: the same flags,
    observations inside the wrapped space, RecordEpisodeStatistics' episodes as counted.
    Returns the last step's reward, raw reward and info."""
    length, ret = np.zeros(n, dtype=np.int64), np.zeros(n)
    pending = np.zeros(n, dtype=bool)
    for t, a in enumerate(actions):
        obs, reward, terminated, truncated, info = env.step(a)
        _, raw_reward, raw_te, raw_tr, _ = raw.step(a)
        length[pending], ret[pending] = 0, 0.0  # NEXT_STEP: this step was the reset
        length[~pending] += 1
        ret += raw_reward
        pending = raw_te | raw_tr
        if name == "RecordEpisodeStatistics" and pending.any():
            ep = info["episode"]
            if not (_same(ep["l"][pending], length[pending])
                    and np.allclose(ep["r"][pending], ret[pending], rtol=1e-6)):
                raise _Fail("step", f"{name}: episode lengths or returns at step {t} "
                            f"differ from the counted ones")
        if not (_same(terminated, raw_te) and _same(truncated, raw_tr)):
            raise _Fail("the env's spaces", f"{name}: flags differ from the unwrapped env "
                        f"at step {t}")
        if name not in ("NormalizeObservation", "TransformObservation") \
                and obs not in env.observation_space:
            raise _Fail("the env's spaces", f"{name}: observation outside the wrapped "
                        f"observation space at step {t}")
    return reward, raw_reward, info


#: Every check, in the order they run: (name, method to look at by default, hint, function).
CHECKS: list[tuple[str, str, str, Callable[[_Context], None]]] = [
    ("api", "observe / step_envs", "spaces must describe exactly what observe writes and "
     "step_envs returns", check_api),
    ("reproducible", "reset_envs / step_envs", "draw only from the rng argument: never "
     "np.random, random or self.np_random", check_reproducible),
    ("batch_independence", "step_envs", "compute each row from that row alone (no sums or "
     "sorts across envs)", check_batch_independence),
    ("autoreset_next_step", "reset_rows / reset_envs", "a start state must depend on the "
     "row's stream only; see docs/autoreset.md", check_autoreset_next_step),
    ("autoreset_same_step", "observe / reset_rows", "see docs/autoreset.md",
     check_autoreset_same_step),
    ("autoreset_disabled", "step_envs", "see docs/autoreset.md", check_autoreset_disabled),
    ("reset_mask", "reset_rows", "write only the rows you are given (s.x[rows] = ...)",
     check_reset_mask),
    ("state_round_trip", "get_state / set_state", "keep every piece of per-env state in "
     "state_dtype", check_state_round_trip),
    ("fresh_env_round_trip", "step_envs / observe", "keep nothing on self between steps "
     "(a step counter, a parity): everything a step reads must be in state_dtype",
     check_fresh_env_round_trip),
    ("staggered_episodes", "step_envs / observe / reset_envs", "size arrays by len(s), never "
     "num_envs (kernels get subsets: the rows being reset, the rows whose episode ended), and "
     "keep per-env state in state_dtype", check_staggered_episodes),
    ("copies", "__getstate__ / __setstate__", "keep the env picklable (no open handles "
     "or lambdas in attributes)", check_copies),
    ("set_state_values", "set_state / check_state", "validate before writing anything",
     check_set_state_values),
    ("actions_unchanged", "step_envs", "never write into action", check_actions_unchanged),
    ("box_action_bounds", "step (box_action_bounds)", "declare box_action_bounds and let "
     "the base class apply it (do not clip again in the kernel)", check_box_action_bounds),
    ("bad_inputs", "step / reset", "validate before changing any state", check_bad_inputs),
    ("wrappers", "single_observation_space / single_action_space", "the spaces must be "
     "exact: wrappers build on them", check_wrappers),
    ("render", "render_envs", "one frame per row of s", check_render),
    ("two_forms", "step_env / reset_env / observe_env", two_forms.HINT,
     two_forms.check_two_forms),
]


# ---------------------------------------------------------------------- running
_KERNEL_HINTS = {
    "observe": "write every entry of out from s alone, with values inside "
               "single_observation_space, and return nothing",
    "step_envs": "update s in place and return (reward, terminated), arrays of shape "
                 "(len(s),); draw only from rng",
    "reset_envs": "write start states into s (every row), drawing only from rng; never "
                  "touch self.state",
    "reset_rows": "write only s.field[rows], drawing only from rng",
}

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Library code, whose frames are not the author's (batchenv's own envs are authored code).
_LIBRARY_DIRS = tuple(os.path.join(d, "") for d in (
    os.path.dirname(np.__file__), _GYMNASIUM_DIR, os.path.dirname(traceback.__file__)))


def _authored(filename: str) -> bool:
    path = os.path.abspath(filename)
    if path.startswith(_LIBRARY_DIRS):
        return False
    if path.startswith(os.path.join(_PACKAGE_DIR, "")):  # batchenv: only its envs are
        return path.startswith((os.path.join(_PACKAGE_DIR, "envs", ""),
                                os.path.join(_PACKAGE_DIR, "testing", "_envs.py")))
    return True


def _author_line(error: BaseException) -> str | None:
    """Where in the env's own code the error was raised: the innermost frame of its
    traceback (or its cause's) outside numpy, Gymnasium and batchenv's machinery, as
    ``file:line in function: source``; None if no frame is the author's."""
    chain: BaseException | None = error
    while chain is not None:
        frames = [f for f in traceback.extract_tb(chain.__traceback__)
                  if _authored(f.filename)]
        if frames:
            f = frames[-1]
            return f"{f.filename}:{f.lineno} in {f.name}" + (f": {f.line}" if f.line else "")
        chain = chain.__cause__ or chain.__context__
    return None


#: Per-env kernels (batchenv.perenv): named when an error is raised in one run as Python.
_PER_ENV_KERNELS = ("reset_env", "step_env", "observe_env")


def _method_in_traceback(error: BaseException) -> str | None:
    """The innermost kernel in the error's traceback (not debug mode's wrappers)."""
    found = None
    chain: BaseException | None = error
    while chain is not None and found is None:  # a re-raised error: its cause's frames too
        for frame in traceback.extract_tb(chain.__traceback__):
            if frame.name in (*KERNELS, *_PER_ENV_KERNELS, "render_envs", "check_state") and \
                    not frame.filename.endswith("debug.py"):
                found = frame.name
        chain = chain.__cause__
    return found


def _run(c: _Context, name: str, method: str, hint: str, fn: Callable[[_Context], None]
         ) -> Failure | None:
    try:
        fn(c)
    except _Fail as f:
        return Failure(name, f.method, f.hint or hint, str(f))
    except KernelError as e:
        return Failure(name, e.method, _KERNEL_HINTS.get(e.method, hint), str(e), e)
    except Exception as e:  # noqa: BLE001 - every failure is reported, not the first only
        text = f"{type(e).__name__}: {e}"
        if len(text) > _MESSAGE_CHARS:
            text = text[:_MESSAGE_CHARS] + " ..."
        where = _author_line(e)
        if where:
            text += f"\nraised at {where}"
        kernel = _method_in_traceback(e)
        hint = _KERNEL_HINTS.get(kernel or "", hint)
        if kernel and isinstance(e, ValueError) and ("broadcast" in str(e) or "shape" in str(e)):
            hint = (f"size every array in {kernel} by len(s), not num_envs: kernels are also "
                    f"called on subsets of rows (the rows being reset, the rows that ended)")
        return Failure(name, kernel or method, hint, text, e)
    return None


def _raise(name: str, failures: list[Failure], total: int) -> None:
    """ContractError listing ``failures``, chained to the first kernel error among them (its
    traceback shows the author's line)."""
    cause = next((f.error for f in failures if f.error is not None), None)
    raise ContractError(name, failures, total) from cause


@dataclass
class ContractCheck:
    """One contract check, callable (raises :class:`ContractError` if it fails); its
    ``str`` is its name, for ``pytest.mark.parametrize(..., ids=str)``."""

    name: str
    context: _Context
    method: str
    hint: str
    fn: Callable[[_Context], None]

    def __call__(self) -> None:
        failure = _run(self.context, self.name, self.method, self.hint, self.fn)
        if failure is not None:
            _raise(self.context.name, [failure], 1)

    def __str__(self) -> str:
        return self.name


def contract_checks(env: Any, *, num_envs: int = 8, seed: int = 0, steps: int = 100
                    ) -> list[ContractCheck]:
    """The checks of :func:`check_env`, one callable each, for one pytest test per check::

        @pytest.mark.parametrize("check", contract_checks(MyEnv), ids=str)
        def test_contract(check):
            check()
    """
    c = _Context(env, num_envs, seed, steps)
    return [ContractCheck(name, c, method, hint, fn) for name, method, hint, fn in CHECKS]


def check_env(env: Any, *, num_envs: int = 8, seed: int = 0, steps: int = 100
              ) -> ContractReport:
    """Run the whole BatchEnv contract on ``env`` and report every failure.

    Args:
        env: a :class:`~batchenv.BatchEnv` subclass (made as ``env(num_envs,
            autoreset_mode=..., max_episode_steps=..., debug=True)``), a registered id
            (``gymnasium.make_vec(id, ...)``), or a callable ``num_envs -> VectorEnv``
            returning a BatchEnv, possibly wrapped (check_env sets its auto-reset mode and
            time limit before the first reset, and turns debug mode on).
        num_envs: batch size of most checks (>= 4).
        seed: the seed of the runs.
        steps: steps per run; the time limit is ``steps // 4`` so that episodes end.

    Returns:
        A :class:`ContractReport` (print it) when every check passes.

    Raises:
        ContractError: listing every failed check, each with the method to look at, what
            happened and a hint.
    """
    c = _Context(env, num_envs, seed, steps)
    start = time.perf_counter()
    failures = [f for name, method, hint, fn in CHECKS
                if (f := _run(c, name, method, hint, fn)) is not None]
    if failures:
        _raise(c.name, failures, len(CHECKS))
    return ContractReport(c.name, [name for name, *_ in CHECKS if name not in c.skipped],
                          c.skipped, time.perf_counter() - start)
