"""The argument front end shared by every vector env of the package.

``BatchEnv``, ``ShardedVectorEnv`` and ``ConcurrentVectorEnv`` check their arguments here,
once, before any row, shard or worker is touched, so that a refused call changes nothing
anywhere and every env family refuses the same input with the same message, naming the
argument, the expected form and the (batch-wide) env indices:

* constructor arguments: :func:`check_num_envs`, :func:`check_autoreset_mode`,
  :func:`check_max_episode_steps`, :func:`check_observation_space`;
* ``reset``: :func:`check_seed`, :func:`check_options`, :func:`check_reset`;
* ``step``: :func:`action_checker` (one validating function per action space); a single
  env's one action: :func:`plain_action` (the plainly valid ones), :func:`batch_of_one`;
* ``set_state``: :func:`check_set_state`, :func:`check_state_values`;
* ``set_attr``: :func:`one_attr_value`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode

from batchenv.random import MAX_SEED

MAX_LISTED = 10  # env indices listed in an error message
#: The keys ``BatchEnv.reset(options=...)`` accepts.
RESET_OPTIONS = ("reset_mask",)


class StepBeforeResetError(ResetNeeded, ValueError):
    """``step`` (or ``render``) was called before the first ``reset``."""


def listed(idx: np.ndarray) -> str:
    """Env indices for an error message: the first few, and how many in all."""
    shown = ", ".join(str(int(i)) for i in idx[:MAX_LISTED])
    more = f", ... ({len(idx)} envs in all)" if len(idx) > MAX_LISTED else ""
    return f"[{shown}{more}]"


def one_attr_value(name: str, values: Any, num_envs: int) -> Any:
    """The one value ``set_attr(name, values)`` gives a batch: ``values`` itself, or the
    entry of a list/tuple of ``num_envs`` equal values (``ValueError`` naming the envs whose
    value differs from env 0's)."""
    if not isinstance(values, (list, tuple)):
        return values
    if len(values) != num_envs:
        raise ValueError(f"set_attr: values must be one value or a list/tuple of "
                         f"num_envs={num_envs} values, got {len(values)} values")
    first = values[0]
    differ = [i for i, v in enumerate(values)
              if v is not first and not data_equivalence(v, first, exact=True)]
    if differ:
        raise ValueError(f"set_attr({name!r}): a batched env has one {name!r} shared by "
                         f"all its envs, so per-env values must be equal; values differ "
                         f"from env 0's at env indices {listed(np.array(differ))}")
    return first


#: Observation spaces BatchEnv stores in one array per batch.
OBS_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def check_observation_space(space: Any) -> None:
    if not isinstance(space, OBS_SPACES):
        raise TypeError(
            f"single_observation_space of type {type(space).__name__} is not supported (yet): "
            f"use a Box (put the parts side by side in one array; "
            f"gymnasium.spaces.flatten_space shows the layout), Discrete, MultiDiscrete or "
            f"MultiBinary; got {space}")


def read_only(actions: Any) -> np.ndarray:
    a = np.asarray(actions).view()
    a.flags.writeable = False
    return a


def is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def check_seed(seed: Any, num_envs: int) -> tuple[np.ndarray, np.ndarray]:
    """The per-env seeds of ``reset(seed=...)``: values (uint64) and which envs got one.

    ``None``: no env; an int ``s``: env i gets ``s + i`` (as ``SyncVectorEnv``); a list of
    ``num_envs`` ints / ``None``. Shared by ``BatchEnv`` and ``ConcurrentVectorEnv``.
    """
    n = num_envs
    if seed is None:
        return np.zeros(n, dtype=np.uint64), np.zeros(n, dtype=bool)
    if is_int(seed):
        seed = int(seed)
        if not 0 <= seed <= MAX_SEED - n:
            raise ValueError(f"seed must be an int in [0, {MAX_SEED - n}], got {seed}")
        return np.arange(n, dtype=np.uint64) + np.uint64(seed), np.ones(n, dtype=bool)
    if isinstance(seed, (list, tuple, np.ndarray)):
        if len(seed) != n:
            raise ValueError(f"seed as a list must have num_envs={n} entries, got "
                             f"{len(seed)}")
        bad = [i for i, x in enumerate(seed)
               if not (x is None or (is_int(x) and 0 <= int(x) <= MAX_SEED))]
        if bad:
            raise ValueError(f"seed list entries must be None or ints in [0, {MAX_SEED}]; "
                             f"bad entries at env indices {listed(np.array(bad))}")
        given = np.array([x is not None for x in seed], dtype=bool)
        values = np.array([0 if x is None else int(x) for x in seed], dtype=np.uint64)
        return values, given
    raise TypeError(f"seed must be None, an int or a list of num_envs ints/None, got "
                    f"{type(seed).__name__}")


def check_num_envs(num_envs: Any, n: Any) -> int:
    if num_envs is not None and n is not None and num_envs != n:
        raise ValueError(f"num_envs={num_envs} and n={n} disagree: pass one of them")
    value = num_envs if num_envs is not None else (n if n is not None else 1)
    if not is_int(value):
        raise TypeError(f"num_envs must be a positive int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"num_envs must be a positive int, got {value}")
    return int(value)


def check_autoreset_mode(mode: Any) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        return mode
    try:
        return AutoresetMode(mode)
    except ValueError:
        raise ValueError(f"autoreset_mode must be an AutoresetMode or one of "
                         f"{[m.value for m in AutoresetMode]}, got {mode!r}") from None


def check_max_episode_steps(value: Any) -> int | None:
    if value is None:
        return None
    if not is_int(value) or value < 1:
        raise ValueError(f"max_episode_steps must be a positive int or None, got {value!r}")
    return int(value)


def check_mask(mask: Any, num_envs: int, what: str) -> np.ndarray:
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"{what} must be a numpy array of dtype bool and shape ({num_envs},), "
                        f"got {type(mask).__name__}")
    if mask.dtype != np.bool_:
        raise TypeError(f"{what} must have dtype bool, got {mask.dtype}")
    if mask.shape != (num_envs,):
        raise ValueError(f"{what} must have shape ({num_envs},), got {mask.shape}")
    return mask


def check_options(options: Any, num_envs: int) -> np.ndarray | None:
    """The reset mask of ``options`` (None: reset all), validated like SyncVectorEnv."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    unknown_keys = [key for key in options if key not in RESET_OPTIONS]
    if unknown_keys:  # refused, not ignored: a misspelt key would silently reset every env
        unknown = sorted(map(repr, unknown_keys))
        close = [m for key in unknown_keys if isinstance(key, str)
                 for m in difflib.get_close_matches(key, RESET_OPTIONS, n=1)]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"options has unknown keys [{', '.join(unknown)}]{hint}; "
                         f"BatchEnv.reset accepts only the keys {list(RESET_OPTIONS)}")
    if "reset_mask" not in options:
        return None
    mask = check_mask(options["reset_mask"], num_envs, "options['reset_mask']")
    if not mask.any():
        raise ValueError("options['reset_mask'] must contain at least one True value")
    return mask


def action_checker(space: gym.Space, num_envs: int, bounds: str
                    ) -> Callable[[Any], np.ndarray]:
    """A function validating a batch of actions for ``space``; returns the action array."""
    if isinstance(space, spaces.Discrete):
        return _discrete_checker(np.asarray(space.start), np.asarray(space.start + space.n),
                                 (num_envs,), "Discrete", space)
    if isinstance(space, spaces.MultiDiscrete):
        return _discrete_checker(space.start, space.start + space.nvec,
                                 (num_envs, *space.shape), "MultiDiscrete", space)
    if isinstance(space, spaces.Box):
        return _box_checker(space, num_envs, bounds)
    raise TypeError(f"BatchEnv supports Discrete, MultiDiscrete and Box action spaces, "
                    f"got {space}")


def plain_action(space: gym.Space) -> Callable[[Any], Any]:
    """For a single env's step: a function giving one action of ``space`` that is plainly
    valid as it is — a Python or numpy int in range of a ``Discrete``; an array of a float
    ``Box``'s own dtype and shape, finite and within its bounds — and ``None`` for
    anything else, which then goes to the batch's checker (:func:`action_checker`, through
    :func:`batch_of_one`) for its conversion, clipping or error. Nothing here raises, so
    every refusal keeps the batch's messages."""
    if isinstance(space, spaces.Discrete):
        low, high = int(space.start), int(space.start + space.n)

        def discrete(action: Any) -> int | None:
            if (type(action) is int or isinstance(action, np.integer)) \
                    and low <= action < high:
                return int(action)
            return None

        return discrete
    if isinstance(space, spaces.Box) and space.dtype is not None \
            and space.dtype.kind == "f":
        shape, dtype = space.shape, space.dtype
        bounds = list(zip(space.low.astype(dtype).ravel().tolist(),
                          space.high.astype(dtype).ravel().tolist()))

        def box(action: Any) -> np.ndarray | None:
            if type(action) is not np.ndarray or action.dtype != dtype \
                    or action.shape != shape:
                return None
            for v, (lo, hi) in zip(action.ravel().tolist(), bounds):
                if not (lo <= v <= hi and v - v == 0.0):  # (NaN fails both; inf the second)
                    return None
            return action

        return box
    return lambda action: None


def batch_of_one(space: gym.Space, action: Any) -> np.ndarray:
    """A single env's ``action`` as the batch of one that :func:`action_checker` checks: a
    ``Discrete`` action given as a float with an integer value counts as that integer."""
    if isinstance(space, spaces.Discrete):
        actions = np.asarray([action])
        if actions.dtype.kind == "f" and float(actions[0]).is_integer():
            actions = actions.astype(np.int64)
        return actions
    return np.asarray(action)[None]


def _bad_rows(bad: np.ndarray) -> np.ndarray:
    return np.flatnonzero(bad.reshape(len(bad), -1).any(axis=1))


def _discrete_checker(low: np.ndarray, high: np.ndarray, shape: tuple[int, ...], kind: str,
                      space: gym.Space) -> Callable[[Any], np.ndarray]:
    lo_min, hi_max = int(np.min(low)), int(np.max(high))
    uniform_bounds = low.size == 1 or (np.all(low == low.flat[0]) and np.all(high == hi_max))

    def check(actions: Any) -> np.ndarray:
        a = np.asarray(actions)
        if a.dtype.kind not in "iu":
            raise TypeError(f"actions must be integers for the {kind} action space {space} "
                            f"(shape {shape}), got dtype {a.dtype}")
        if a.shape != shape:
            raise ValueError(f"actions must have shape {shape} (num_envs, ...) for the "
                             f"{kind} action space {space}, got shape {a.shape}")
        if lo_min == 0:  # negative ints view as huge unsigned ints; argmax: no reduction
            u = a.view(a.dtype.str.replace("i", "u"))  # machinery (docs/performance.md)
            out_of_range = a.size and u.flat[u.argmax()] >= hi_max
        else:
            out_of_range = a.min() < lo_min or a.max() >= hi_max
        if out_of_range or not uniform_bounds:
            bad = (a < low) | (a >= high)
            if bad.any():
                rows = _bad_rows(bad)
                raise ValueError(f"actions out of range for {space} (valid: {low} <= a < "
                                 f"{high}) at env indices {listed(rows)}: "
                                 f"{a[rows[:MAX_LISTED]].tolist()}")
        a = a.view()  # the kernel's view cannot change the caller's array
        a.flags.writeable = False
        return a

    return check


def _box_checker(space: spaces.Box, num_envs: int, bounds: str
                 ) -> Callable[[Any], np.ndarray]:
    shape = (num_envs, *space.shape)
    low = space.low.astype(space.dtype)
    high = space.high.astype(space.dtype)
    buffer = np.zeros(shape, dtype=space.dtype)
    read_only = buffer.view()  # what the kernel gets: it cannot change the actions
    read_only.flags.writeable = False
    integer_box = space.dtype.kind in "iu"
    dtype_range = np.iinfo(space.dtype.name) if integer_box else None
    lowest, highest = (int(dtype_range.min), int(dtype_range.max)) if dtype_range else (0, 0)

    def check(actions: Any) -> np.ndarray:
        a = np.asarray(actions)
        if a.dtype.kind not in "fiu":
            raise TypeError(f"actions must be numbers for the Box action space {space}, "
                            f"got dtype {a.dtype}")
        if a.shape != shape:
            raise ValueError(f"actions must have shape {shape} (num_envs, ...) for the Box "
                             f"action space {space}, got shape {a.shape}")
        if integer_box:
            if a.dtype.kind == "f" and not np.isfinite(a).all():
                rows = _bad_rows(~np.isfinite(a))
                raise ValueError(f"actions contain NaN or inf at env indices "
                                 f"{listed(rows)}")
            outside = (a < lowest) | (a > highest)
            if outside.any():
                rows = _bad_rows(outside)
                raise ValueError(f"actions do not fit the action dtype {space.dtype} of "
                                 f"{space} at env indices {listed(rows)}")
        else:
            # checked after the cast: a finite float64 too large for float32 becomes inf
            if a.dtype.kind == "f" and a.dtype.itemsize > buffer.itemsize:
                with np.errstate(over="ignore", invalid="ignore"):  # reported below
                    np.copyto(buffer, a, casting="unsafe")
            else:
                np.copyto(buffer, a, casting="unsafe")
            if not np.isfinite(buffer).all():
                bad = ~np.isfinite(buffer)
                given = np.count_nonzero(~np.isfinite(a[bad])) if a.dtype.kind == "f" else 0
                overflow = f"values that overflow the action dtype {space.dtype} (to inf)"
                what = ("NaN or inf" if given == np.count_nonzero(bad) else
                        overflow if given == 0 else f"NaN or inf, or {overflow}")
                raise ValueError(f"actions contain {what} at env indices "
                                 f"{listed(_bad_rows(bad))}")
        if bounds == "raise":
            bad = (a < low) | (a > high)
            if bad.any():
                rows = _bad_rows(bad)
                raise ValueError(f"actions outside the bounds of {space} at env indices "
                                 f"{listed(rows)}")
        if integer_box:
            np.copyto(buffer, a, casting="unsafe")
        if bounds == "clip":
            np.clip(buffer, low, high, out=buffer)
        return read_only

    return check


def check_reset(seed: Any, options: Any, num_envs: int, needs_reset: bool
                ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """The front end of ``reset(seed=..., options=...)``: ``(mask, values, given)``.

    ``mask`` is the reset mask (``None``: reset every env; an all-True mask before the first
    full reset counts as one, as ``SyncVectorEnv`` takes it); ``values, given`` are
    :func:`check_seed`'s. Raises before anything is changed: a bad option or seed, or a
    partial mask while ``needs_reset`` (no state yet)."""
    mask = check_options(options, num_envs)
    values, given = check_seed(seed, num_envs)
    if mask is not None and needs_reset:
        if not mask.all():
            raise StepBeforeResetError(
                "reset(options={'reset_mask': ...}) needs a previous full reset(): the "
                "unmasked envs have no state yet")
        mask = None
    return mask, values, given


def check_set_state(states: Any, mask: Any, num_envs: int, full_state_dtype: np.dtype,
                    needs_reset: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The form of ``set_state(states, mask)``: ``(records, idx)``, the records to write and
    the env indices they go to (``idx`` ``None``: all envs, in order). The values are
    checked by :func:`check_state_values`."""
    if not isinstance(states, np.ndarray) or states.dtype != full_state_dtype:
        got = states.dtype if isinstance(states, np.ndarray) else type(states).__name__
        raise TypeError(f"set_state: states must be a structured array of dtype "
                        f"env.full_state_dtype={full_state_dtype}, got {got}")
    if mask is None:
        if states.shape != (num_envs,):
            raise ValueError(f"set_state: states must have shape ({num_envs},), "
                             f"got {states.shape}")
        return states, None
    mask = check_mask(mask, num_envs, "set_state: mask")
    idx = np.flatnonzero(mask)
    if states.shape == (num_envs,):
        states = states[idx]
    elif states.shape != (len(idx),):
        raise ValueError(f"set_state: with a mask, states must have shape "
                         f"({num_envs},) or ({len(idx)},) (one per True entry), "
                         f"got {states.shape}")
    if needs_reset:
        raise StepBeforeResetError("set_state with a mask needs a full reset() or "
                                   "set_state() first")
    return states, idx


def check_state_values(env: Any, states: np.ndarray, env_idx: np.ndarray) -> None:
    """``ValueError`` naming the env indices ``env_idx`` (batch-wide) of the records that
    break ``env``'s invariants: NaN/inf in a float field, or ``env.check_state``'s."""
    problems: dict[str, Any] = {}
    for name in env.state_dtype.names or ():
        col = states[name]
        if col.dtype.kind in "fc":
            problems[f"field {name!r} is NaN or inf"] = ~np.isfinite(col)
    problems.update(outside_ranges(env, states))
    problems.update(_invariants(env, states, problems))
    found = []
    for what, bad in problems.items():
        bad = np.asarray(bad, dtype=bool).reshape(len(states), -1).any(axis=1)
        if bad.any():
            found.append(f"{what} at env indices {listed(env_idx[bad])}")
    if found:
        raise ValueError("set_state: states rejected (nothing was changed): "
                         + "; ".join(found))


def _invariants(env: Any, states: np.ndarray, problems: dict[str, Any]
                ) -> dict[str, np.ndarray]:
    """``env.check_state`` of the records whose every field is finite and inside its range
    (an env's check may index with a field it trusts), as per-record arrays over
    ``states``."""
    n = len(states)
    failed = np.zeros(n, dtype=bool)
    for bad in problems.values():
        failed |= np.asarray(bad, dtype=bool).reshape(n, -1).any(axis=1)
    if failed.all():
        return {}
    ok = np.flatnonzero(~failed)
    out = {}
    for what, bad in env.check_state(states if len(ok) == n else states[ok]).items():
        full = np.zeros(n, dtype=bool)
        full[ok] = np.asarray(bad, dtype=bool).reshape(len(ok), -1).any(axis=1)
        out[what] = full
    return out


def outside_ranges(env: Any, states: np.ndarray) -> dict[str, np.ndarray]:
    """``{problem: bad}`` for the records whose fields are outside the ranges the env's
    schema declares (:class:`batchenv.state.Range`); ``bad`` is per record, and the problem
    names the field, its range and the first values outside it."""
    found: dict[str, np.ndarray] = {}
    for name, declared in env.state_field_ranges.items():
        col = states[name]
        low, high = declared.resolve(env)
        bad = np.zeros(col.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            if low is not None:
                bad |= col < _in_dtype(low, col.dtype)
            if high is not None:
                bad |= col > _in_dtype(high, col.dtype)
        per_record = np.asarray(bad.reshape(len(states), -1).any(axis=1))
        if per_record.any():
            values = np.unique(col[bad])[:3].tolist()
            shown = f"[{_number(low, '-inf')}, {_number(high, 'inf')}]"
            found[f"field {name!r} outside {shown} (e.g. {', '.join(map(str, values))})"] = \
                per_record
    return found


def _in_dtype(bound: float, dtype: np.dtype) -> Any:
    """A bound compared in the field's own dtype where that dtype is a float (float32 -1.2
    is not below -1.2); integer fields compare with the exact Python number."""
    return np.asarray(bound).astype(dtype) if dtype.kind == "f" else bound


def _number(bound: float | None, missing: str) -> str:
    return missing if bound is None else f"{bound:g}"


#: The reward dtypes a vector env of the package returns (constructor keyword
#: ``reward_dtype``): float32, as EnvPool, gymnax, PufferLib and Gymnasium's
#: ``CartPoleVectorEnv``, by default; float64 for exact sums of non-integer rewards.
REWARD_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def check_reward_dtype(value: Any) -> np.dtype:
    """The dtype of ``reward_dtype=``: ``np.float32`` or ``np.float64`` (or their names)."""
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if value is None or isinstance(value, bool) or dtype not in REWARD_DTYPES:
        raise TypeError(f"reward_dtype must be np.float32 or np.float64, got {value!r}")
    return dtype
